package run

// End-to-end tests: each runs a real program from examples/run under the
// agent with a Python that has torch (BOTTLENECK_TEST_PYTHON, else the
// repository's .venv/bin/python; skipped with a message when neither has
// torch). Windows are kept tiny (--skip-first 1 --warmup 1 --active 2) so
// the suite stays short on 2 cores.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	root, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var (
	torchPyOnce sync.Once
	torchPy     string
	torchPyErr  string
)

// torchPython returns an interpreter with torch, or skips the test.
func torchPython(t *testing.T) string {
	t.Helper()
	torchPyOnce.Do(func() {
		p := os.Getenv("BOTTLENECK_TEST_PYTHON")
		if p == "" {
			p = filepath.Join(repoRoot(t), ".venv", "bin", "python")
		}
		out, err := exec.Command(p, "-c", "import torch; print(torch.__version__)").CombinedOutput()
		if err != nil {
			torchPyErr = "no Python with torch for the end-to-end tests (set BOTTLENECK_TEST_PYTHON or create .venv with torch at the repository root): " +
				p + ": " + strings.TrimSpace(lastLine(string(out))) + " " + err.Error()
			return
		}
		torchPy = p
	})
	if torchPy == "" {
		t.Skip(torchPyErr)
	}
	return torchPy
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}

// syncBuf is a goroutine-safe buffer (the test reads while exec writes).
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type result struct {
	code           int
	err            error
	stdout, stderr string
	dir            string
}

type runOpts struct {
	stdin   string
	signals chan os.Signal
	dir     string
	out     *syncBuf
	tty     bool // stderr is a terminal
}

// bn runs `bottleneck run ARGS` through the command (flag parsing and
// runRun) and returns the exit status the process would have.
func bn(t *testing.T, ro runOpts, args ...string) result {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	ios.In = strings.NewReader(ro.stdin)
	out, errOut := ro.out, &syncBuf{}
	if out == nil {
		out = &syncBuf{}
	}
	ios.Out, ios.ErrOut = out, errOut
	ios.SetTTY(false, ro.tty)
	runDir := filepath.Join(t.TempDir(), "run")
	o := &Options{IO: ios, Dir: ro.dir}
	if ro.signals != nil {
		o.Signals = ro.signals
	}
	cmd := newCmd(o)
	cmd.SetArgs(append([]string{"-o", runDir}, args...))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	r := result{err: err, dir: runDir}
	var ee *exitcode.Error
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.Code
	default:
		r.code = -1
	}
	r.stdout, r.stderr = out.String(), errOut.String()
	return r
}

func small(py string) []string {
	return []string{"--python", py, "--skip-first", "1", "--warmup", "1", "--active", "2"}
}

func ex(t *testing.T, name string) string { return filepath.Join(repoRoot(t), "examples", "run", name) }

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

type evidence struct {
	PID        int            `json:"pid"`
	Final      bool           `json:"final"`
	StepSource *string        `json:"step_source"`
	StepCounts map[string]int `json:"step_counts"`
	Exit       struct {
		Reason string `json:"reason"`
		Code   *int   `json:"code"`
	} `json:"exit"`
	Profiler struct {
		State   string `json:"state"`
		Windows []struct {
			File    string `json:"file"`
			Partial bool   `json:"partial"`
			Steps   []int  `json:"steps"`
		} `json:"windows"`
	} `json:"profiler"`
	WindowSteps []struct {
		DurationS       float64 `json:"duration_s"`
		DataLoaderWaitS float64 `json:"dataloader_wait_s"`
	} `json:"window_steps"`
	DataLoader struct {
		Batches int     `json:"batches"`
		WaitS   float64 `json:"wait_s"`
		Loaders []struct {
			NumWorkers *int   `json:"num_workers"`
			Ctx        string `json:"multiprocessing_context"`
			Persistent *bool  `json:"persistent_workers"`
			Batches    int    `json:"batches"`
		} `json:"loaders"`
	} `json:"dataloader"`
	Missing []struct {
		What, Why string
	} `json:"missing"`
	Errors []string `json:"errors"`
}

func loadEvidence(t *testing.T, dir, tag string) evidence {
	t.Helper()
	var ev evidence
	readJSON(t, filepath.Join(dir, "evidence-"+tag+".json"), &ev)
	if len(ev.Errors) > 0 {
		t.Errorf("agent errors: %v", ev.Errors)
	}
	return ev
}

func evidenceFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "evidence-*.json"))
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// checkTrace opens a gzipped trace and checks it is a complete Kineto
// trace with n ProfilerStep ranges (n < 0: any).
func checkTrace(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var tr struct {
		TraceEvents []struct {
			Name string `json:"name"`
			Cat  string `json:"cat"`
		} `json:"traceEvents"`
	}
	if err := json.NewDecoder(zr).Decode(&tr); err != nil {
		t.Fatalf("%s: not a complete JSON trace: %v", path, err)
	}
	steps, ops := 0, 0
	for _, e := range tr.TraceEvents {
		if strings.HasPrefix(e.Name, "ProfilerStep#") {
			steps++
		}
		if e.Cat == "cpu_op" {
			ops++
		}
	}
	if ops == 0 {
		t.Errorf("%s: no cpu_op events", path)
	}
	if n >= 0 && steps != n {
		t.Errorf("%s: %d ProfilerStep ranges, want %d", path, steps, n)
	}
}

func TestTrainCNN(t *testing.T) {
	py := torchPython(t)
	r := bn(t, runOpts{}, append(small(py), ex(t, "train_cnn.py"), "--steps", "10", "--batch-size", "8")...)
	if r.code != 0 {
		t.Fatalf("exit %d (%v)\n%s", r.code, r.err, r.stderr)
	}
	// stdout is exactly the program's
	if !strings.HasPrefix(r.stdout, "trained 10 steps in ") || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("stdout = %q", r.stdout)
	}
	for _, f := range []string{"manifest.json", "env.json", "env-rank0.json", "evidence-rank0.json",
		"pyprofile-rank0.json", "trace-rank0.pt.trace.json.gz", "report.txt", "report.json"} {
		if _, err := os.Stat(filepath.Join(r.dir, f)); err != nil {
			t.Errorf("missing %s", f)
		}
	}
	left, _ := filepath.Glob(filepath.Join(r.dir, "*.tmp-*"))
	hidden, _ := filepath.Glob(filepath.Join(r.dir, ".*"))
	if len(left)+len(hidden) > 0 {
		t.Errorf("leftovers: %v %v", left, hidden)
	}
	m, err := runner.ReadManifest(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tool.Version != version.Version || m.State != "ended" || m.Exit == nil || m.Exit.Code != 0 || m.Exit.Reason != "exited" {
		t.Errorf("manifest: %+v %+v", m.Tool, m.Exit)
	}
	if m.Command.Mode != "script" || m.Command.Argv[1] != ex(t, "train_cnn.py") || m.Command.Argv[3] != "10" {
		t.Errorf("manifest command: %+v", m.Command)
	}
	kinds := map[string]bool{}
	for _, f := range m.Files {
		kinds[f.Kind] = true
	}
	for _, k := range []string{"trace", "pyprofile", "evidence", "env", "report-text", "report-json"} {
		if !kinds[k] {
			t.Errorf("manifest files lack %s: %+v", k, m.Files)
		}
	}
	ev := loadEvidence(t, r.dir, "rank0")
	if ev.StepSource == nil || *ev.StepSource != "optimizer" || ev.Profiler.State != "done" {
		t.Fatalf("evidence: %+v", ev)
	}
	if len(ev.Profiler.Windows) != 1 || len(ev.Profiler.Windows[0].Steps) != 2 || ev.Profiler.Windows[0].Partial {
		t.Errorf("windows: %+v", ev.Profiler.Windows)
	}
	if len(ev.WindowSteps) != 2 {
		t.Errorf("window steps: %+v", ev.WindowSteps)
	}
	checkTrace(t, filepath.Join(r.dir, "trace-rank0.pt.trace.json.gz"), 2)
	p, err := pyprofile.ReadFile(filepath.Join(r.dir, "pyprofile-rank0.json"))
	if err != nil {
		t.Fatal(err)
	}
	top := p.TopSites(pyprofile.Options{Role: "main", Attribution: pyprofile.User})
	if top.Samples == 0 || len(top.BySelf) == 0 {
		t.Fatalf("no main-thread samples: %+v", top)
	}
	found := false
	for _, s := range top.ByTotal {
		if strings.HasSuffix(s.File, "train_cnn.py") {
			found = true
		}
	}
	if !found {
		t.Errorf("train_cnn.py not among the call sites: %+v", top.ByTotal)
	}
	var env struct {
		Processes map[string]struct {
			Python struct{ Version string }
			Torch  *struct {
				Version string `json:"version"`
			}
		}
	}
	readJSON(t, filepath.Join(r.dir, "env.json"), &env)
	if e := env.Processes["rank0"]; e.Torch == nil || e.Torch.Version == "" || e.Python.Version == "" {
		t.Errorf("env.json: %+v", env)
	}
	var rep struct {
		Schema      string          `json:"schema"`
		Run         json.RawMessage `json:"run"`
		TraceReport json.RawMessage `json:"trace_report"`
	}
	readJSON(t, filepath.Join(r.dir, "report.json"), &rep)
	if rep.Schema == "" || len(rep.Run) == 0 || len(rep.TraceReport) == 0 {
		t.Errorf("report.json incomplete: schema %q run %d trace %d", rep.Schema, len(rep.Run), len(rep.TraceReport))
	}
	text, _ := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	for _, want := range []string{"Environment: CPython", "torch ", "Steps: ", "optimizer.step()",
		"Python call sites, main thread", "train_cnn.py", "Trace analysis", "Operators"} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("report.txt lacks %q", want)
		}
	}
	if !strings.Contains(r.stderr, "Environment: CPython") || !strings.Contains(r.stderr, "report: ") {
		t.Errorf("report not printed on stderr:\n%s", r.stderr)
	}
	// The profiler's own log lines stay off the program's stderr.
	for _, noise := range []string{"USDT:", "STAGE:", "gpuGetDeviceCount"} {
		if strings.Contains(r.stderr, noise) {
			t.Errorf("Kineto's log line %q on stderr:\n%s", noise, r.stderr)
		}
	}
}

func TestInferenceWithoutOptimizerUsesForwardSteps(t *testing.T) {
	py := torchPython(t)
	r := bn(t, runOpts{}, append(small(py), ex(t, "infer.py"), "30")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	ev := loadEvidence(t, r.dir, "rank0")
	if ev.StepSource == nil || *ev.StepSource != "forward" || ev.StepCounts["optimizer"] != 0 {
		t.Fatalf("step source: %+v", ev)
	}
	checkTrace(t, filepath.Join(r.dir, "trace-rank0.pt.trace.json.gz"), 2)
}

func TestDataLoaderWorkers(t *testing.T) {
	py := torchPython(t)
	for _, sm := range []string{"fork", "spawn"} {
		t.Run(sm, func(t *testing.T) {
			r := bn(t, runOpts{}, append(small(py), ex(t, "dataloader_workers.py"), "--start-method", sm,
				"--workers", "2", "--persistent", "--pin-memory", "--pool", "--n", "32")...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, "pool 285") || !strings.Contains(r.stdout, "samples 64") {
				t.Errorf("stdout = %q", r.stdout)
			}
			// only the main process was profiled: no worker, no pool process
			if ev := evidenceFiles(t, r.dir); len(ev) != 1 {
				t.Fatalf("profiled processes: %v", ev)
			}
			ev := loadEvidence(t, r.dir, "rank0")
			if len(ev.DataLoader.Loaders) != 1 {
				t.Fatalf("loaders: %+v", ev.DataLoader)
			}
			l := ev.DataLoader.Loaders[0]
			if l.NumWorkers == nil || *l.NumWorkers != 2 || l.Ctx != sm || l.Persistent == nil || !*l.Persistent || l.Batches != 16 {
				t.Errorf("loader: %+v", l)
			}
			if ev.DataLoader.WaitS <= 0 || ev.DataLoader.Batches != 16 {
				t.Errorf("dataloader wait: %+v", ev.DataLoader)
			}
			if len(ev.WindowSteps) != 2 {
				t.Errorf("window steps: %+v", ev.WindowSteps)
			}
		})
	}
}

func TestExitStatusIsTheProgramsOwn(t *testing.T) {
	py := torchPython(t)
	t.Run("sys.exit(3)", func(t *testing.T) {
		r := bn(t, runOpts{}, append(small(py), ex(t, "exit3.py"))...)
		if r.code != 3 {
			t.Fatalf("exit %d, want 3\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "report: ") || !strings.Contains(r.stdout, "exiting with 3") {
			t.Errorf("report not printed / stdout lost:\n%s\n%s", r.stdout, r.stderr)
		}
		ev := loadEvidence(t, r.dir, "rank0")
		if ev.Exit.Reason != "exit" || ev.Exit.Code == nil || *ev.Exit.Code != 3 || !ev.Final {
			t.Errorf("evidence exit: %+v", ev.Exit)
		}
		checkTrace(t, filepath.Join(r.dir, "trace-rank0.pt.trace.json.gz"), 2)
	})
	t.Run("raises", func(t *testing.T) {
		r := bn(t, runOpts{}, append(small(py), ex(t, "raises.py"))...)
		if r.code != 1 {
			t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "RuntimeError: planted failure at step 12") ||
			!strings.Contains(r.stderr, `raises.py", line 6, in fail`) {
			t.Errorf("traceback missing:\n%s", r.stderr)
		}
		if strings.Contains(r.stderr, "_bottleneck") {
			t.Errorf("agent frames in the traceback:\n%s", r.stderr)
		}
		if ev := loadEvidence(t, r.dir, "rank0"); ev.Exit.Reason != "exception" {
			t.Errorf("evidence exit: %+v", ev.Exit)
		}
		m, _ := runner.ReadManifest(r.dir)
		if m.Exit.Code != 1 {
			t.Errorf("manifest exit %+v", m.Exit)
		}
	})
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestInterrupt(t *testing.T) {
	py := torchPython(t)
	t.Run("first Ctrl-C saves a partial window", func(t *testing.T) {
		sig := make(chan os.Signal, 2)
		out := &syncBuf{}
		done := make(chan result, 1)
		var dir string
		go func() {
			done <- bn(t, runOpts{signals: sig, out: out}, "--python", py, "--skip-first", "1", "--warmup", "1",
				"--active", "100000", ex(t, "long_train.py"), "120")
		}()
		waitFor(t, "ready", 90*time.Second, func() bool { return strings.Contains(out.String(), "ready") })
		time.Sleep(3 * time.Second) // some steps into the (endless) window
		sig <- os.Interrupt
		r := <-done
		dir = r.dir
		if r.code != 130 {
			t.Fatalf("exit %d, want 130 (SIGINT)\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "KeyboardInterrupt") || strings.Contains(r.stderr, "_bottleneck") {
			t.Errorf("stderr:\n%s", r.stderr)
		}
		m, _ := runner.ReadManifest(dir)
		if !m.Interrupted || m.Exit.Signal != "SIGINT" || m.Exit.Reason != "interrupted" {
			t.Errorf("manifest: %+v", m)
		}
		ev := loadEvidence(t, dir, "rank0")
		if ev.Exit.Reason != "interrupted" || !ev.Final || len(ev.Profiler.Windows) != 1 || !ev.Profiler.Windows[0].Partial {
			t.Fatalf("evidence: %+v", ev)
		}
		checkTrace(t, filepath.Join(dir, "trace-rank0.pt.trace.json.gz"), -1)
	})
	t.Run("SIGTERM is forwarded and saved", func(t *testing.T) {
		sig := make(chan os.Signal, 2)
		out := &syncBuf{}
		done := make(chan result, 1)
		go func() {
			done <- bn(t, runOpts{signals: sig, out: out}, append(small(py), ex(t, "long_train.py"), "120")...)
		}()
		waitFor(t, "ready", 90*time.Second, func() bool { return strings.Contains(out.String(), "ready") })
		time.Sleep(2 * time.Second)
		sig <- syscall.SIGTERM
		r := <-done
		if r.code != 128+int(syscall.SIGTERM) {
			t.Fatalf("exit %d, want 143\n%s", r.code, r.stderr)
		}
		if ev := loadEvidence(t, r.dir, "rank0"); ev.Exit.Reason != "terminated" || !ev.Final {
			t.Errorf("evidence exit: %+v", ev.Exit)
		}
		if m, _ := runner.ReadManifest(r.dir); !m.Terminated || m.Exit.Signal != "SIGTERM" {
			t.Errorf("manifest: %+v", m.Exit)
		}
	})
	t.Run("second Ctrl-C kills", func(t *testing.T) {
		sig := make(chan os.Signal, 2)
		out := &syncBuf{}
		done := make(chan result, 1)
		go func() { done <- bn(t, runOpts{signals: sig, out: out}, append(small(py), ex(t, "stubborn.py"))...) }()
		waitFor(t, "ready", 90*time.Second, func() bool { return strings.Contains(out.String(), "ready") })
		sig <- os.Interrupt
		waitFor(t, "the program to ignore Ctrl-C", 30*time.Second, func() bool { return strings.Contains(out.String(), "ignoring") })
		sig <- os.Interrupt
		r := <-done
		if r.code != 128+int(syscall.SIGKILL) {
			t.Fatalf("exit %d, want 137\n%s", r.code, r.stderr)
		}
		m, _ := runner.ReadManifest(r.dir)
		if !m.Killed || m.Exit.Reason != "killed" {
			t.Errorf("manifest: %+v", m.Exit)
		}
		if _, err := os.Stat(filepath.Join(r.dir, "report.txt")); err != nil {
			t.Errorf("no report after kill: %v", err)
		}
	})
}

func TestTimeoutAndStopAfterProfile(t *testing.T) {
	py := torchPython(t)
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		r := bn(t, runOpts{}, append(small(py), "--timeout", "12s", ex(t, "long_train.py"), "120")...)
		if r.code != 130 {
			t.Fatalf("exit %d, want 130\n%s", r.code, r.stderr)
		}
		if time.Since(start) > 60*time.Second {
			t.Errorf("took %v", time.Since(start))
		}
		m, _ := runner.ReadManifest(r.dir)
		if !m.TimedOut || m.Exit.Reason != "timeout" {
			t.Errorf("manifest: %+v", m.Exit)
		}
		checkTrace(t, filepath.Join(r.dir, "trace-rank0.pt.trace.json.gz"), 2)
	})
	t.Run("stop-after-profile", func(t *testing.T) {
		r := bn(t, runOpts{}, append(small(py), "--stop-after-profile", ex(t, "long_train.py"), "120")...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		if strings.Contains(r.stdout, "finished") {
			t.Errorf("the program ran to its end: %q", r.stdout)
		}
		ev := loadEvidence(t, r.dir, "rank0")
		if ev.Exit.Reason != "stopped-after-profile" {
			t.Errorf("evidence exit: %+v", ev.Exit)
		}
		checkTrace(t, filepath.Join(r.dir, "trace-rank0.pt.trace.json.gz"), 2)
	})
}

func TestModuleArgsAndStdin(t *testing.T) {
	py := torchPython(t)
	t.Run("-m with relative import", func(t *testing.T) {
		r := bn(t, runOpts{dir: ex(t, "")}, append(small(py), "-m", "pkg.train", "--flag", "x")...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		if want := "module __main__ pkg.train ['--flag', 'x']\n"; r.stdout != want {
			t.Errorf("stdout %q, want %q", r.stdout, want)
		}
		m, _ := runner.ReadManifest(r.dir)
		if m.Command.Mode != "module" || strings.Join(m.Command.Argv[1:], " ") != "-m pkg.train --flag x" {
			t.Errorf("manifest command %+v", m.Command)
		}
		checkTrace(t, filepath.Join(r.dir, "trace-rank0.pt.trace.json.gz"), 2)
	})
	t.Run("argparse and stdin", func(t *testing.T) {
		r := bn(t, runOpts{stdin: "some input\nline two\n"}, "--python", py, ex(t, "echo_stdin.py"), "--prefix", "P", "a", "b")
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		if want := "P a b|SOME INPUT\nLINE TWO\n\n"; r.stdout != want {
			t.Errorf("stdout %q, want %q", r.stdout, want)
		}
		if !strings.HasPrefix(r.stderr, "stderr line\n") {
			t.Errorf("stderr %q", r.stderr)
		}
	})
}

func TestTorchrunTwoRanks(t *testing.T) {
	py := torchPython(t)
	torchrun := filepath.Join(filepath.Dir(py), "torchrun")
	if _, err := os.Stat(torchrun); err != nil {
		t.Skipf("no torchrun next to %s", py)
	}
	r := bn(t, runOpts{}, "--skip-first", "1", "--warmup", "1", "--active", "2", "--",
		torchrun, "--nproc_per_node", "2", "--master_port", "29561", ex(t, "ddp_gloo.py"), "--steps", "8")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "rank 0 of 2 done (RANK=0)") || !strings.Contains(r.stdout, "rank 1 of 2 done (RANK=1)") {
		t.Errorf("stdout %q", r.stdout)
	}
	if ev := evidenceFiles(t, r.dir); strings.Join(ev, ",") != "evidence-rank0.json,evidence-rank1.json" {
		t.Fatalf("profiled processes %v (the launcher must not be profiled)", ev)
	}
	pids := map[int]bool{}
	for _, tag := range []string{"rank0", "rank1"} {
		ev := loadEvidence(t, r.dir, tag)
		pids[ev.PID] = true
		if ev.StepSource == nil || *ev.StepSource != "optimizer" {
			t.Errorf("%s: %+v", tag, ev)
		}
		checkTrace(t, filepath.Join(r.dir, "trace-"+tag+".pt.trace.json.gz"), 2)
	}
	if len(pids) != 2 {
		t.Errorf("pids %v", pids)
	}
	text, _ := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	if !bytes.Contains(text, []byte("== rank1")) || !bytes.Contains(text, []byte("distributed: backend gloo")) {
		t.Errorf("report lacks rank sections:\n%s", text)
	}
}

func TestWithoutTorch(t *testing.T) {
	py := os.Getenv("BOTTLENECK_TEST_PYTHON_NO_TORCH")
	if py == "" {
		p, err := exec.LookPath("python3")
		if err != nil || exec.Command(p, "-c", "import torch").Run() == nil {
			t.Skip("no Python without torch (set BOTTLENECK_TEST_PYTHON_NO_TORCH)")
		}
		py = p
	}
	r := bn(t, runOpts{}, "--python", py, "--sample-interval", "1ms", ex(t, "no_torch.py"))
	if r.code != 0 || r.stdout != "fib 121393\n" {
		t.Fatalf("exit %d stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	ev := loadEvidence(t, r.dir, "rank0")
	if len(ev.Missing) == 0 || !strings.Contains(ev.Missing[0].Why, "did not import torch") {
		t.Errorf("missing: %+v", ev.Missing)
	}
	p, err := pyprofile.ReadFile(filepath.Join(r.dir, "pyprofile-rank0.json"))
	if err != nil {
		t.Fatal(err)
	}
	// fib runs for most of the program's life; whatever the sampler caught
	// around it (interpreter start-up), it is the top self site
	if top := p.TopSites(pyprofile.Options{Role: "main"}); len(top.BySelf) == 0 || top.BySelf[0].Func != "fib" {
		t.Errorf("top: %+v", top.BySelf[:min(3, len(top.BySelf))])
	}
	text, _ := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	if !bytes.Contains(text, []byte("Not recorded:")) || !bytes.Contains(text, []byte("did not import torch")) {
		t.Errorf("report.txt:\n%s", text)
	}
}

// TestCProfile also checks the progress line: stderr is a terminal here.
func TestCProfile(t *testing.T) {
	py := torchPython(t)
	r := bn(t, runOpts{tty: true}, append(small(py), "--python-profiler", "cprofile", ex(t, "train_cnn.py"), "--steps", "8")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "\r\x1b[2Kbottleneck: ") {
		t.Errorf("no progress line on a terminal stderr:\n%q", r.stderr)
	}
	if strings.Contains(r.stdout, "\x1b") || strings.Contains(r.stdout, "bottleneck") {
		t.Errorf("stdout is not the program's alone: %q", r.stdout)
	}
	pst := filepath.Join(r.dir, "pyprofile-rank0.pstats")
	out, err := exec.Command(py, "-c", "import pstats,sys; s=pstats.Stats(sys.argv[1]); print(s.total_calls)", pst).CombinedOutput()
	if err != nil {
		t.Fatalf("pstats cannot read %s: %v\n%s", pst, err, out)
	}
	p, err := pyprofile.ReadFile(filepath.Join(r.dir, "pyprofile-rank0.json"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Profiler != "cprofile" {
		t.Fatalf("profiler %q", p.Profiler)
	}
	top := p.TopSites(pyprofile.Options{Role: "main"})
	found := false
	for _, s := range top.ByTotal {
		if s.Func == "main" && strings.HasSuffix(s.File, "train_cnn.py") && s.Calls == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("train_cnn.py main not found with 1 call in %+v", top.ByTotal[:min(5, len(top.ByTotal))])
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--python-profiler", "perf", "x.py"},
		{"--step-source", "epoch", "x.py"},
		{"--active", "0", "x.py"},
	} {
		r := bn(t, runOpts{}, args...)
		if r.code != exitcode.Usage {
			t.Errorf("%v: exit %d (%v), want %d", args, r.code, r.err, exitcode.Usage)
		}
	}
}
