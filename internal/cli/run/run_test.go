package run

// End-to-end tests: each runs a real program from examples/run under the
// agent with a Python that has torch (BOTTLENECK_TEST_PYTHON, else the
// repository's .venv/bin/python; skipped with a message when neither has
// torch). Windows are kept tiny (--skip-first 1 --warmup 1 --active 2) so
// the suite stays short on 2 cores.

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/flame"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
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
	cmd := newCmd(o, runRun)
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
	if r.code > 128 { // killed by a signal: the crash dump, for the failure message
		r.stderr += testutil.CrashDumps(runDir)
	}
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
	PID              int     `json:"pid"`
	Final            bool    `json:"final"`
	StepSource       *string `json:"step_source"`
	StepSourceSwitch *struct {
		From       string `json:"from"`
		AfterSteps int    `json:"after_steps"`
	} `json:"step_source_switch"`
	StepStages []rundir.StepStage `json:"step_stages"`
	StepCounts map[string]int     `json:"step_counts"`
	StepTimes  [][]any            `json:"step_times"`
	StepCalls  *rundir.StepCalls  `json:"step_calls"`
	Exit       struct {
		Reason string `json:"reason"`
		Code   *int   `json:"code"`
	} `json:"exit"`
	Profiler struct {
		State       string                  `json:"state"`
		ActiveSteps int                     `json:"active_steps"`
		Windows     []rundir.ProfilerWindow `json:"windows"`
	} `json:"profiler"`
	WindowSteps []struct {
		DurationS       float64 `json:"duration_s"`
		DataLoaderWaitS float64 `json:"dataloader_wait_s"`
	} `json:"window_steps"`
	DataLoader struct {
		Batches int     `json:"batches"`
		WaitS   float64 `json:"wait_s"`
		Loaders []struct {
			NumWorkers *int         `json:"num_workers"`
			Ctx        string       `json:"multiprocessing_context"`
			Persistent *bool        `json:"persistent_workers"`
			Batches    int          `json:"batches"`
			Iterators  int          `json:"iterators"`
			Loaders    int          `json:"loaders"`
			RestartS   float64      `json:"restart_s"`
			FirstWaitS float64      `json:"first_wait_s"`
			BatchBytes *int64       `json:"batch_bytes"`
			Starts     [][2]float64 `json:"starts"`
		} `json:"loaders"`
	} `json:"dataloader"`
	Models  []rundir.ModelCall `json:"models"`
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
		// on CUDA the device's timeline repeats some as gpu_user_annotation
		if strings.HasPrefix(e.Name, "ProfilerStep#") && e.Cat != "gpu_user_annotation" {
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

// checkWindowTrace checks a window's trace against its record: the steps
// it recorded and, when a bound closed it or the program ended while it
// recorded (how long the window grows with --min-window depends on the
// machine's speed), the step it was in then.
func checkWindowTrace(t *testing.T, dir string, w rundir.ProfilerWindow) {
	t.Helper()
	n := len(w.Steps)
	if w.Partial || w.ClosedBy != "" {
		n++
	}
	checkTrace(t, filepath.Join(dir, w.File), n)
}

func TestTrainCNN(t *testing.T) {
	py := torchPython(t)
	// 10 steps take 30 ms on a fast machine, imports apart: the sampler
	// samples every 2 ms so that the main thread's call sites have
	// samples (at the default 20 ms one run in three had 1)
	r := bn(t, runOpts{}, append(small(py), "--sample-interval", "2ms", ex(t, "train_cnn.py"), "--steps", "10", "--batch-size", "8")...)
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
	m, err := rundir.ReadManifest(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tool.Version != version.Version || m.State != "ended" || m.Exit == nil || m.Exit.Code != 0 || m.Exit.Reason != "exited" {
		t.Errorf("manifest: %+v %+v", m.Tool, m.Exit)
	}
	if m.Command.Mode != "script" || m.Command.Argv[1] != ex(t, "train_cnn.py") || m.Command.Argv[3] != "10" {
		t.Errorf("manifest command: %+v", m.Command)
	}
	kinds := map[rundir.FileKindName]bool{}
	for _, f := range m.Files {
		kinds[f.Kind] = true
	}
	for _, k := range []rundir.FileKindName{rundir.KindTrace, rundir.KindPyProfile, rundir.KindEvidence, rundir.KindEnv, rundir.KindReportText, rundir.KindReportJSON} {
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
	if !bytes.Contains(rep.Run, []byte(`"step_series"`)) {
		t.Error("report.json's run lacks the step series")
	}
	if rep.Schema == "" || len(rep.Run) == 0 || len(rep.TraceReport) == 0 {
		t.Errorf("report.json incomplete: schema %q run %d trace %d", rep.Schema, len(rep.Run), len(rep.TraceReport))
	}
	text, _ := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	var starved string // why the main thread's call sites may be missing
	for _, want := range []string{"Environment: CPython", "torch ", "Steps: ", "optimizer.step()",
		"Python call sites, main thread", "train_cnn.py", "Trace analysis", "Operators",
		"step times (every step of the run", "profiled window"} {
		if bytes.Contains(text, []byte(want)) {
			continue
		}
		if strings.HasPrefix(want, "Python call sites") {
			// A sampler thread the machine gives no CPU takes no samples:
			// seen once with three test packages running programs beside it.
			if n, d := mainSamples(t, r.dir); n < 10 {
				starved = fmt.Sprintf("premise absent: the sampler took %d samples of the main thread in a %.1f s run (machine busy)", n, d)
				continue
			}
		}
		t.Errorf("report.txt lacks %q", want)
	}
	if starved != "" {
		defer t.Skip(starved)
	}
	// the terminal gets the brief: the run, the verdict, the top findings
	// and the paths, at most 120 columns (report.txt has the rest). Its
	// length is not fixed: on a busy machine the window line gains notes
	// (a CI run's brief had 36 lines, 7 of them the window's), so what
	// tells it from the full report is what it leaves out.
	brief := r.stderr[strings.Index(r.stderr, "bottleneck run: "):]
	for _, want := range []string{"exit status 0 after", "Verdict: ", "report: ", "report.html"} {
		if !strings.Contains(brief, want) {
			t.Errorf("brief lacks %q:\n%s", want, brief)
		}
	}
	full := false
	for _, section := range []string{"Environment: CPython", "Python call sites", "Operators", "step times (every step"} {
		full = full || strings.Contains(brief, section)
	}
	if n := strings.Count(brief, "\n"); full || n > 60 || 2*n > bytes.Count(text, []byte("\n")) {
		t.Errorf("brief is the full report (%d lines; report.txt %d):\n%s", n, bytes.Count(text, []byte("\n")), brief)
	}
	for _, line := range strings.Split(brief, "\n") {
		if utf8.RuneCountInString(line) > report.TerminalWidth {
			t.Errorf("line of %d columns: %s", utf8.RuneCountInString(line), line)
		}
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
	r, ev := stepsOf(t, "forward", append(small(py), ex(t, "infer.py"), "30")...)
	if ev.StepCounts["optimizer"] != 0 {
		t.Fatalf("step counts: %v", ev.StepCounts)
	}
	checkTrace(t, filepath.Join(r.dir, "trace-rank0.pt.trace.json.gz"), 2)

	// steps far shorter than --min-window / --active: the window records
	// as many as fill it, at most 500 (--active alone records exactly
	// that many: small() above)
	r, ev = stepsOf(t, "forward", "--python", py, "--skip-first", "4", "--warmup", "1", "--min-window", "1s", ex(t, "infer.py"), "600")
	if n := ev.Profiler.ActiveSteps; n <= 5 || n > 500 || len(ev.Profiler.Windows) != 1 || len(ev.Profiler.Windows[0].Steps) != n {
		t.Fatalf("lengthened window: %d active steps, windows %+v", n, ev.Profiler.Windows)
	}
	checkTrace(t, filepath.Join(r.dir, "trace-rank0.pt.trace.json.gz"), ev.Profiler.ActiveSteps)
	// writing the trace is the agent's work, in no step: the step after
	// the window counted it (1.8 s after 150 steps of 1.3 ms); now it
	// starts once the export is done, after a gap at least that long
	w := ev.Profiler.Windows[0]
	last := w.Steps[len(w.Steps)-1]
	var lastEnd, nextStart float64
	for _, st := range ev.StepTimes {
		n, _ := st[0].(float64)
		start, _ := st[1].(float64)
		dur, _ := st[2].(float64)
		switch int(n) {
		case last:
			lastEnd = start + dur
		case last + 1:
			nextStart = start
		}
	}
	if nextStart == 0 || nextStart-lastEnd < w.ExportS-2e-6 {
		t.Errorf("the step after the window starts %.6f s after the window's last ended, the trace's export took %.6f s", nextStart-lastEnd, w.ExportS)
	}

	// a backbone then a head, each outermost, per request: one step per
	// request (its 8 first forwards pass before the steps lock)
	_, ev = stepsOf(t, "forward", append(small(py), ex(t, "infer_backbone_head.py"), "40")...)
	if last := lastStep(ev); ev.StepCounts["forward"] != 80 || last < 30 || last > 40 {
		t.Errorf("forwards %d, last step %d: want 80 forwards and about 36 steps, one per request", ev.StepCounts["forward"], last)
	}
	// the same with autograd on: 64 forwards pass (8 once a second has
	// passed without a backward, as on a loaded machine: CI locked at
	// ~44), and the head's, whose input carries the backbone's autograd
	// history, does not lock them; one step per request after the lock,
	// not one per module call (~230)
	_, ev = stepsOf(t, "forward", append(small(py), ex(t, "infer_backbone_head.py"), "120", "grad")...)
	if last := lastStep(ev); ev.StepCounts["forward"] != 240 || last < 80 || last > 116 {
		t.Errorf("with autograd on: forwards %d, last step %d: want 240 forwards and 80-116 steps, one per request after 8-64 forwards", ev.StepCounts["forward"], last)
	}
}

// The modules a DataLoader without workers calls while it loads a batch
// (a transform) are not the program's model: pytorch/examples' mnist had
// torchvision's Normalize, 64 calls a batch, as its only model.
func TestLoaderTransformIsNotTheModel(t *testing.T) {
	py := torchPython(t)
	_, ev := stepsOf(t, "optimizer", append(small(py), ex(t, "loader_transform.py"), "20")...)
	if len(ev.Models) != 1 || ev.Models[0].Class != "Net" || ev.Models[0].Calls == 0 {
		t.Errorf("models %+v: want Net alone", ev.Models)
	}
}

// An evaluation loop with autograd on and fewer forwards than a training
// loop may make before its first optimizer.step(): no backward runs, so
// the steps lock on its forwards after a second (they locked on nothing,
// and the run had no trace; 25 forwards of 0.1 s did not either while the
// wait was 3 s).
func TestInferenceWithGradLocksForwardSteps(t *testing.T) {
	py := torchPython(t)
	r, ev := stepsOf(t, "forward", append(small(py), ex(t, "infer_grad.py"), "25")...)
	if ev.StepCounts["forward"] != 25 || len(ev.Profiler.Windows) != 1 {
		t.Fatalf("forwards %d, windows %+v: want 25 forwards and a window", ev.StepCounts["forward"], ev.Profiler.Windows)
	}
	checkTrace(t, filepath.Join(r.dir, "trace-rank0.pt.trace.json.gz"), 2)
}

// A training loop that calls its module many times before each
// optimizer.step() (an unrolled RNN cell) steps on the optimizer, not on
// the cell's calls: also when it calls it more often than the forwards
// the steps lock after (100 time steps: the cell's calls made ~1,150
// steps of 12 iterations).
func TestTrainingForwardsAreNotSteps(t *testing.T) {
	py := torchPython(t)
	for _, seq := range []string{"20", "100"} {
		if _, ev := stepsOf(t, "optimizer", append(small(py), ex(t, "rnn_cell_train.py"), "12", seq)...); ev.StepCounts["optimizer"] != 12 {
			t.Fatalf("%s time steps: step counts %v: want the optimizer's 12 steps", seq, ev.StepCounts)
		}
	}
}

// The same loop with its update written by hand, no torch.optim: a step
// is an iteration, from one sequence's first cell call (its inputs carry
// no autograd history) to the next; not each of the cell's calls
// (pytorch/tutorials' char-RNN made a step of each letter's call, and its
// report called it inference with autograd on).
func TestManualUpdateStepsAreIterations(t *testing.T) {
	py := torchPython(t)
	const n = 40
	_, ev := stepsOf(t, "forward", append(small(py), ex(t, "rnn_cell_train.py"), fmt.Sprint(n), "20", "manual")...)
	// the steps lock on a sequence's first call once 64 forwards ran
	// (the 4th iteration's): one step per iteration from there
	if last := lastStep(ev); last > n || last < n-8 || ev.StepCounts["forward"] != n*21 {
		t.Fatalf("last step %d, forwards %d: want one step per iteration (at most %d), %d forwards", last, ev.StepCounts["forward"], n, n*21)
	}
}

// A program that made an optimizer trains: the forwards before its first
// optimizer.step() (a rollout without autograd, 80 per-sample forwards
// before one backward) are not its steps (each was one: more than the 8,
// or the 64 with autograd on, that lock them in an inference loop).
func TestForwardsBeforeTheFirstUpdateAreNotSteps(t *testing.T) {
	py := torchPython(t)
	for mode, updates := range map[string]int{"rollout": 24, "per-sample": 6} {
		if _, ev := stepsOf(t, "optimizer", append(small(py), ex(t, "train_after_forwards.py"), mode)...); ev.StepCounts["optimizer"] != updates {
			t.Errorf("%s: step counts %v: want the optimizer's %d steps", mode, ev.StepCounts, updates)
		}
	}
}

// An evaluation of many batches under no_grad before the first
// optimizer.step() (the optimizer made after it): the steps lock on its
// forwards at once, and move to the optimizer's steps when training
// begins. The window records optimizer steps, and the summary says so.
func TestEvaluationBeforeTrainingMovesStepsToTheOptimizer(t *testing.T) {
	py := torchPython(t)
	r, ev := stepsOf(t, "optimizer", "--python", py, ex(t, "gpt_eval_first.py"), "30", "120")
	if want := "initial loss near log(vocab): True\ntrained 30 steps\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	sw := ev.StepSourceSwitch
	if sw == nil || sw.From != "forward" || sw.AfterSteps < 1 || sw.AfterSteps > 120 {
		t.Fatalf("step source switch %+v: want one from the evaluation's forwards", sw)
	}
	// the steps are the 30 optimizer steps: their first starts at the
	// second optimizer.step() (29 timed), none of the evaluation's
	if ev.StepCounts["optimizer"] != 30 || lastStep(ev) != 29 || len(ev.StepTimes) != 29 {
		t.Errorf("step counts %v, last step %d, %d timed: want 29 optimizer steps", ev.StepCounts, lastStep(ev), len(ev.StepTimes))
	}
	if len(ev.Profiler.Windows) != 1 || len(ev.Profiler.Windows[0].Steps) == 0 || ev.Profiler.Windows[0].Steps[len(ev.Profiler.Windows[0].Steps)-1] > 29 {
		t.Fatalf("windows %+v: want one of optimizer steps", ev.Profiler.Windows)
	}
	checkWindowTrace(t, r.dir, ev.Profiler.Windows[0])
	if !strings.Contains(r.stderr, "30 optimizer.step() calls; the first ") {
		t.Errorf("the summary does not name the step source and the switch:\n%s", r.stderr)
	}
}

// Gradient accumulation over 16 DataLoader batches: the steps lock on
// the batches first and move to the optimizer's 32 steps.
func TestAccumulatedBatchesMoveStepsToTheOptimizer(t *testing.T) {
	py := torchPython(t)
	r, ev := stepsOf(t, "optimizer", append(small(py), ex(t, "grad_accum.py"), "32")...)
	if r.stdout != "updates 32\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	if sw := ev.StepSourceSwitch; sw == nil || sw.From != "dataloader" || sw.AfterSteps < 1 || sw.AfterSteps > 15 {
		t.Fatalf("step source switch %+v: want one from the first batches", sw)
	}
	if ev.StepCounts["optimizer"] != 32 || lastStep(ev) != 31 || len(ev.Profiler.Windows) != 1 {
		t.Errorf("step counts %v, last step %d, windows %+v: want 31 optimizer steps timed and one window", ev.StepCounts, lastStep(ev), ev.Profiler.Windows)
	}
}

// A training whose steps stop coming while the window records (30 short
// steps, then a long evaluation; a new optimizer every iteration, which
// the window's optimizer never steps again): the window closes when the
// steps stop, with the steps it recorded, and the program's output and
// exit status are its own. Without the bound the window recorded the
// whole evaluation (a 30 MB trace for 4 s, the process at 2.9 GB).
func TestWindowClosesWhenStepsStopComing(t *testing.T) {
	py := torchPython(t)
	for _, c := range []struct{ mode, stdout string }{
		{"eval", "trained 30 steps, evaluated yes\n"},
		{"new-optim", "new optimizer every iteration: ran\n"},
	} {
		// --min-window 60s: the window wants more steps than the 30 that come
		const seconds = 12.0
		r := bn(t, runOpts{}, "--python", py, "--skip-first", "1", "--warmup", "1", "--min-window", "60s",
			ex(t, "train_then_eval.py"), c.mode, fmt.Sprint(seconds))
		if r.code != 4 || r.stdout != c.stdout {
			t.Errorf("%s: exit %d, stdout %q: want 4 and %q\n%s", c.mode, r.code, r.stdout, c.stdout, r.stderr)
			continue
		}
		ev := loadEvidence(t, r.dir, "rank0")
		if len(ev.Profiler.Windows) != 1 {
			t.Errorf("%s: windows %+v: want one", c.mode, ev.Profiler.Windows)
			continue
		}
		w := ev.Profiler.Windows[0]
		// the idle bound is 10 times the median step before the window, 2 s
		// at least: a machine so busy that it passes half the program's
		// time cannot show it
		var before []float64
		for _, st := range (&rundir.Evidence{StepTimes: ev.StepTimes}).StepSeries() {
			if !st.InWindow {
				before = append(before, st.DurS)
			}
		}
		limit := 2.0
		if slices.Sort(before); len(before) > 0 {
			limit = max(limit, 10*before[len(before)/2]) // the agent's median: the upper one
		}
		if w.ClosedBy == "" && limit > seconds/2 {
			t.Skipf("machine busy: the idle bound (%.1f s, 10 times the median step before the window) passes half the program's %.0f s", limit, seconds)
		}
		// (with new optimizers, the steps are the first one's: at most its
		// 3; a new one freed and made again at the same address is not
		// the first, which CI saw record 30 steps)
		if w.ClosedBy != "idle" || w.Partial || c.mode == "eval" && len(w.Steps) == 0 ||
			len(w.Steps) > 0 && w.Steps[len(w.Steps)-1] > 30 || c.mode == "new-optim" && len(w.Steps) > 3 {
			t.Errorf("%s: window %+v: want one closed by the idle bound before the program ended", c.mode, w)
		}
		checkWindowTrace(t, r.dir, w)
		// how much 2 s of evaluation records depends on the machine's
		// speed (0.5 MB busy, 22 MB quiet here): that the window closed
		// by the idle bound before the program ended is the bound
		if w.Bytes <= 0 {
			t.Errorf("%s: trace of %d bytes", c.mode, w.Bytes)
		}
		if !strings.Contains(r.stderr, "profiler window 1 closed after") {
			t.Errorf("%s: the summary does not say the window closed early:\n%s", c.mode, r.stderr)
		}
	}
}

// The loop that makes a new optimizer every iteration, stopped by a
// SIGTERM once its window closed: nothing records then, so the signal
// ends it as without the tool (the window's recording took 10-18 s to
// save before), with the window's trace as it was when it closed.
func TestSignalAfterTheWindowClosed(t *testing.T) {
	py := torchPython(t)
	sig := make(chan os.Signal, 2)
	done := make(chan result, 1)
	dir := filepath.Join(t.TempDir(), "run")
	go func() {
		done <- bn(t, runOpts{signals: sig}, "-o", dir, "--python", py, "--skip-first", "1", "--warmup", "1", "--min-window", "60s",
			ex(t, "train_then_eval.py"), "new-optim", "300")
	}()
	closed := func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "evidence-rank0.json"))
		return err == nil && bytes.Contains(b, []byte(`"closed_by":"idle"`))
	}
	waitFor(t, "the window to close", 120*time.Second, closed)
	sig <- syscall.SIGTERM
	r := <-done
	if r.code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want 143\n%s", r.code, r.stderr)
	}
	ev := loadEvidence(t, dir, "rank0")
	if ev.Exit.Reason != "terminated" || !ev.Final || len(ev.Profiler.Windows) != 1 ||
		ev.Profiler.Windows[0].ClosedBy != "idle" || ev.Profiler.Windows[0].Partial {
		t.Fatalf("evidence: exit %+v, windows %+v", ev.Exit, ev.Profiler.Windows)
	}
	checkWindowTrace(t, dir, ev.Profiler.Windows[0])
}

// A GAN with 5 critic steps per generator step: the generator's step,
// which ends an iteration, makes the steps (the critic's first 3 steps
// come before it is seen).
func TestCriticStepsAreNotIterations(t *testing.T) {
	py := torchPython(t)
	_, ev := stepsOf(t, "optimizer", "--python", py, ex(t, "gan_critic.py"), "30") // the default window starts after the switch
	if ev.StepCounts["optimizer"] != 180 || lastStep(ev) < 28 || lastStep(ev) > 34 || len(ev.StepStages) != 0 {
		t.Errorf("optimizer steps %d, last step %d, stages %+v: want 180 and about 33, one per iteration, the critic's steps no stage", ev.StepCounts["optimizer"], lastStep(ev), ev.StepStages)
	}
}

// A model called on one sample (a policy per environment step) has its
// calls counted at each step (step_times' items): episode i of
// episodes.py calls it 5 + i times (80 episodes, a window of 5 steps:
// enough steps outside it for the calls to be counted at a few); the GAN's models get batches and
// nothing is counted. Every step's outermost module calls are counted
// on one step in every few outside the window (step_times' calls): the
// policy's 5 + i again.
func TestItemsAStep(t *testing.T) {
	py := torchPython(t)
	_, ev := stepsOf(t, "optimizer", "--python", py, "--active", "5", ex(t, "episodes.py"), "80")
	steps := (&rundir.Evidence{StepTimes: ev.StepTimes}).StepSeries()
	counted, calls := 0, 0
	for _, st := range steps {
		if st.Calls != 0 {
			calls++
			if st.Calls != 5+st.N || st.InWindow {
				t.Errorf("step %d: %d outermost calls (in the window: %v), want %d", st.N, st.Calls, st.InWindow, 5+st.N)
			}
		}
		if st.Items == 0 {
			continue
		}
		counted++
		if st.Items != 5+st.N {
			t.Errorf("step %d: %d items, want %d", st.N, st.Items, 5+st.N)
		}
	}
	if counted < 78 || calls < 2 || ev.StepCalls == nil || ev.StepCalls.CountedSteps != calls || ev.StepCalls.Class != "Sequential" {
		t.Errorf("%d steps' items and %d steps' calls counted of %d (%+v)", counted, calls, len(steps), ev.StepCalls)
	}
	_, ev = stepsOf(t, "optimizer", "--python", py, ex(t, "gan_critic.py"), "30")
	steps = (&rundir.Evidence{StepTimes: ev.StepTimes}).StepSeries()
	if i := slices.IndexFunc(steps, func(st steptimes.Step) bool { return st.Items != 0 }); i >= 0 {
		t.Errorf("batched models: items counted at %+v", steps[i])
	}
}

// Training in stages (the head with one optimizer, then the whole model
// with another): the second optimizer takes over the steps once it has
// stepped 16 times in a row, for 8 median steps or more; before, the
// run's second half was in no step (pytorch/examples' forward-forward
// MNIST trains its two layers one after the other: 80 optimizer.step()
// calls, 39 timed).
func TestLaterStageTakesOverTheSteps(t *testing.T) {
	py := torchPython(t)
	r, ev := stepsOf(t, "optimizer", append(small(py), ex(t, "train_in_stages.py"), "40", "40")...)
	if ev.StepCounts["optimizer"] != 80 || len(ev.StepStages) != 1 {
		t.Fatalf("optimizer steps %d, stages %+v: want 80 and one stage", ev.StepCounts["optimizer"], ev.StepStages)
	}
	st := ev.StepStages[0]
	if st.AfterStep != 39 || st.Untimed != 16 || st.Site == nil || st.Site.Line != 34 || lastStep(ev) != 39+40-16 {
		t.Errorf("stage %+v (site %+v), last step %d: want after step 39, 16 untimed, line 34, last step 63", st, st.Site, lastStep(ev))
	}
	if !strings.Contains(r.stderr+r.stdout, "from step 40 another optimizer's (SGD)") {
		t.Errorf("the summary does not name the stage:\n%s", r.stderr)
	}
}

// A window's recording that ends inside a step: that step is cut short
// and left out. The program ends in the window (4 steps, the window from
// the third): step 3 is used, the end after step 4 left out. Training
// stops and an evaluation follows (the window from the last training
// step): the idle bound closes it with no whole step, and no verdict is
// drawn from the evaluation's forwards.
func TestWindowCutShort(t *testing.T) {
	py := torchPython(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{append(small(py), ex(t, "train_cnn.py"), "--steps", "4", "--threads", "1"), 0, "left out: 4 (cut short: the program ended during it)"},
		{[]string{"--python", py, "--skip-first", "28", "--warmup", "1", "--active", "2", ex(t, "train_then_eval.py"), "eval", "3"},
			4, "the window recorded no whole step"},
	} {
		r := bn(t, runOpts{}, tc.args...)
		if r.code != tc.code {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: want %q in the report:\n%s", tc.args[len(tc.args)-3:], tc.want, r.stderr)
		}
	}
}

// lastStep is the number of the last step the evidence timed.
func lastStep(ev evidence) int {
	last := 0
	for _, st := range ev.StepTimes {
		if len(st) > 0 {
			if n, ok := st[0].(float64); ok {
				last = max(last, int(n))
			}
		}
	}
	return last
}

// stepsOf runs bottleneck with args and returns the run and its evidence,
// failing unless the program exited 0 and its steps came from source.
func stepsOf(t *testing.T, source string, args ...string) (result, evidence) {
	t.Helper()
	r := bn(t, runOpts{}, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	ev := loadEvidence(t, r.dir, "rank0")
	if src := ev.StepSource; src == nil || *src != source {
		t.Fatalf("step source %q, counts %v: want %s", *cmp.Or(src, new(string)), ev.StepCounts, source)
	}
	return r, ev
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
			// two epochs, one iterator: persistent workers start once
			if l.Iterators != 1 || l.Loaders != 1 || l.RestartS <= 0 || l.FirstWaitS <= 0 {
				t.Errorf("loader's iterators: %+v", l)
			}
			// a batch: 4 x 8 float32 samples and 4 int64 labels
			if l.BatchBytes == nil || *l.BatchBytes != 4*8*4+4*8 {
				t.Errorf("batch bytes: %v", l.BatchBytes)
			}
			if ev.DataLoader.WaitS <= 0 || ev.DataLoader.Batches != 16 {
				t.Errorf("dataloader wait: %+v", ev.DataLoader)
			}
			if len(ev.WindowSteps) != 2 {
				t.Errorf("window steps: %+v", ev.WindowSteps)
			}
			// the 2 persistent DataLoader workers were sampled, the pool's
			// processes were not
			ws := workerProfiles(t, r.dir, "rank0")
			if len(ws) != 2 {
				t.Fatalf("worker profiles: %d, want 2", len(ws))
			}
			ids := map[int]bool{}
			for _, w := range ws {
				if w.Worker == nil || w.Worker.WorkerID == nil || w.Worker.PPID != ev.PID || w.Worker.StartMethod != sm || w.Worker.Dataset != "SlowDataset" {
					t.Errorf("worker %d: %+v", w.PID, w.Worker)
					continue
				}
				ids[*w.Worker.WorkerID] = true
			}
			if !ids[0] || !ids[1] {
				t.Errorf("worker ids %v", ids)
			}
			for _, m := range ev.Missing {
				if m.What == "DataLoader worker profile" {
					t.Errorf("missing: %+v", m)
				}
			}
		})
	}
}

// A DataLoader made anew for each epoch is counted: three loaders, three
// iterators (a loader made in the loop starts its workers every pass).
func TestDataLoaderMadePerEpoch(t *testing.T) {
	py := torchPython(t)
	r := bn(t, runOpts{}, append(small(py), ex(t, "dataloader_workers.py"), "--workers", "2", "--loader-per-epoch", "--epochs", "3", "--n", "16")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	ev := loadEvidence(t, r.dir, "rank0")
	if len(ev.DataLoader.Loaders) != 1 {
		t.Fatalf("loaders: %+v", ev.DataLoader)
	}
	l := ev.DataLoader.Loaders[0]
	if l.Iterators != 3 || l.Loaders != 3 || l.Batches != 12 {
		t.Errorf("loader: %+v", l)
	}
	// each iterator's [step, time], in order: 4 batches an epoch
	if len(l.Starts) != 3 {
		t.Fatalf("starts: %v", l.Starts)
	}
	for i := 1; i < len(l.Starts); i++ {
		if a, b := l.Starts[i-1], l.Starts[i]; b[0] < a[0]+3 || b[1] <= a[1] || a[1] <= 0 {
			t.Errorf("starts: %v", l.Starts)
		}
	}
}

// workerProfiles reads the DataLoader worker profiles of a process.
func workerProfiles(t *testing.T, dir, tag string) []*pyprofile.Profile {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, rundir.WorkersDirName(tag), "*.json"))
	var out []*pyprofile.Profile
	for _, f := range files {
		p, err := pyprofile.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// A program with DataLoader workers and a multiprocessing Pool prints the
// same and exits the same under `bottleneck run` as under python; the
// pool's processes leave no worker profile.
func TestWorkersKeepTheProgramsOutput(t *testing.T) {
	py := torchPython(t)
	for _, sm := range []string{"fork", "spawn"} {
		t.Run(sm, func(t *testing.T) {
			args := []string{ex(t, "slow_dataset_workers.py"), "--start-method", sm, "--pool", "--cost", "sleep", "--work", "20000", "--batches", "24"}
			plain := exec.Command(py, args...)
			want, err := plain.Output()
			if err != nil {
				t.Fatalf("python: %v", err)
			}
			r := bn(t, runOpts{}, append(small(py), args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if r.stdout != string(want) {
				t.Errorf("stdout under bottleneck %q, under python %q", r.stdout, want)
			}
			if ws := workerProfiles(t, r.dir, "rank0"); len(ws) != 2 {
				t.Errorf("worker profiles: %d, want the 2 DataLoader workers only", len(ws))
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
		if _, err := os.Stat(filepath.Join(r.dir, "crash-rank0.txt")); !os.IsNotExist(err) {
			t.Errorf("a crash dump without a crash: %v", err)
		}
	})
	// A fatal signal: the program's status, and every thread's Python
	// stack at the crash in crash-rank0.txt, named by the report.
	t.Run("segfault", func(t *testing.T) {
		prog := filepath.Join(t.TempDir(), "segv.py")
		if err := os.WriteFile(prog, []byte("import ctypes\n\n\ndef crash():\n    ctypes.string_at(0)\n\n\nprint('before')\ncrash()\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := bn(t, runOpts{}, append(small(py), prog)...)
		if r.code != 139 || r.stdout != "before\n" {
			t.Fatalf("exit %d stdout %q, want 139 and the program's output\n%s", r.code, r.stdout, r.stderr)
		}
		dump, err := os.ReadFile(filepath.Join(r.dir, "crash-rank0.txt"))
		if err != nil || !bytes.Contains(dump, []byte("Segmentation fault")) || !bytes.Contains(dump, []byte(`segv.py", line 5 in crash`)) {
			t.Errorf("crash dump (%v):\n%s", err, dump)
		}
		if text, _ := os.ReadFile(filepath.Join(r.dir, "report.txt")); !bytes.Contains(text, []byte("rank0 crashed: every thread's Python stack at the crash is in")) {
			t.Errorf("report.txt does not name the crash dump:\n%s", text)
		}
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
		m, _ := rundir.ReadManifest(r.dir)
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
		m, _ := rundir.ReadManifest(dir)
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
		if m, _ := rundir.ReadManifest(r.dir); !m.Terminated || m.Exit.Signal != "SIGTERM" {
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
		m, _ := rundir.ReadManifest(r.dir)
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
		// The window must be written before the timeout: on a loaded
		// machine importing torch alone can take most of a fixed 12 s, so
		// the timeout scales with how long that import takes right now.
		t0 := time.Now()
		if out, err := exec.Command(py, "-c", "import torch").CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		timeout := max(12*time.Second, 3*time.Since(t0)+8*time.Second).Round(time.Second)
		start := time.Now()
		r := bn(t, runOpts{}, append(small(py), "--timeout", timeout.String(), ex(t, "long_train.py"), "120")...)
		if r.code != 130 {
			t.Fatalf("exit %d, want 130\n%s", r.code, r.stderr)
		}
		if took := time.Since(start); took > timeout+60*time.Second {
			t.Errorf("took %v with --timeout %v", took, timeout)
		}
		m, _ := rundir.ReadManifest(r.dir)
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
		m, _ := rundir.ReadManifest(r.dir)
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
		// the program's line first, whatever phase lines bottleneck adds
		// on a stderr that is not a terminal
		var own []string
		for _, l := range strings.SplitAfter(r.stderr, "\n") {
			if !strings.HasPrefix(l, "bottleneck: ") {
				own = append(own, l)
			}
		}
		if !strings.HasPrefix(strings.Join(own, ""), "stderr line\n") || !strings.Contains(r.stderr, "bottleneck: analyzing\n") {
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
	if r.code != 0 || r.stdout != "fib 46368\n" {
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

// A forked child that raises prints its traceback as under plain Python:
// the agent's frames (the boot module, run_main) are cut, as in the parent.
func TestForkedChildTracebackIsTheProgramsOwn(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "fork_raises.py")
	src := "import os\npid = os.fork()\nif pid == 0:\n    raise ValueError('child fails')\nos.waitpid(pid, 0)\nprint('parent ok')\n"
	if err := os.WriteFile(prog, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := bn(t, runOpts{}, "--python", testutil.TorchPython(t), "--no-trace", prog)
	if r.code != 0 || r.stdout != "parent ok\n" {
		t.Fatalf("exit %d stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "ValueError: child fails") || strings.Contains(r.stderr, "_bottleneck") || strings.Contains(r.stderr, "run_main") {
		t.Errorf("the child's traceback:\n%s", r.stderr)
	}
}

// --verify tries the top finding's run-time change in one more short run
// after the report and prints measured against predicted; the program's
// status stays the first run's.
func TestVerify(t *testing.T) {
	r := bn(t, runOpts{}, "--python", testutil.TorchPython(t), "--verify", "--verify-steps", "5", filepath.Join(testutil.RepoRoot(), "examples", "diagnose", "slow_dataset.py"))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	// a CI run's second run, with 8 workers, died of SIGSEGV once (status
	// 139), never here: its output is logged, and a crash of the program
	// is not what --verify's reports are tested for
	if m := regexp.MustCompile(`try: the program exited with status (1[2-5][0-9])\b`).FindStringSubmatch(r.stderr); m != nil {
		log, _ := os.ReadFile(r.dir + "-tried-1.log")
		t.Logf("the tried run's output:\n%s", log[max(0, len(log)-4000):])
		// its last lines in the reason too: CI prints a skip's reason only
		lines := strings.Split(strings.TrimSpace(string(log)), "\n")
		t.Skipf("premise absent: the tried run died of a signal (status %s): %q", m[1], lines[max(0, len(lines)-3):])
	}
	for _, want := range []string{"verifying input.loader: one more run with num_workers=", " (tried): ", "predicted by the first run (input.loader", "slow_dataset.py:33: num_workers 0 -> "} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("no %q in stderr:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(r.dir+"-tried-1", "try.json")); err != nil {
		t.Error(err)
	}
	// the run's reports, written again, carry measured against predicted
	txt, _ := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	if !strings.Contains(string(txt), "Tried (run --verify), measured against predicted:\n  num_workers=") || !strings.Contains(string(txt), "(input.loader): ") {
		t.Errorf("report.txt has no tried section:\n%s", txt)
	}
	var rep struct {
		Run struct {
			Tried []rundir.TriedChange `json:"tried"`
		} `json:"run"`
	}
	b, _ := os.ReadFile(filepath.Join(r.dir, "report.json"))
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Run.Tried) != 1 || rep.Run.Tried[0].Rule != "input.loader" || rep.Run.Tried[0].MeanNewUs <= 0 || len(rep.Run.Tried[0].NewStepsUs) == 0 {
		t.Errorf("report.json's run.tried: %v %+v", err, rep.Run.Tried)
	}
}

// A program that cannot start says so in one line, as plain Python does,
// with Python's exit status and no run directory; one that fails for want
// of torch gets the interpreter named and where to find one with torch.
func TestRunsThatCannotStart(t *testing.T) {
	r := bn(t, runOpts{}, "--python", testutil.TorchPython(t), filepath.Join(t.TempDir(), "missing.py"))
	if r.code != 2 || !strings.Contains(r.stderr, "can't open file") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("missing script: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Errorf("a run directory was left for a script that does not exist: %v", err)
	}
	py, err := exec.LookPath("python3")
	if err != nil || exec.Command(py, "-c", "import torch").Run() == nil {
		t.Skip("no Python without torch")
	}
	r = bn(t, runOpts{}, "--python", py, ex(t, "train_cnn.py"))
	if r.code != 1 || !strings.Contains(r.stderr, "No module named 'torch'") || !strings.Contains(r.stderr, py+" has no torch, so nothing was profiled") ||
		strings.Contains(r.stderr, "Environment:") {
		t.Errorf("without torch: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Errorf("a run directory was left for a run that profiled nothing: %v", err)
	}
}

// TestCProfile also checks that stdout stays the program's when stderr is
// a terminal (the status line is tested under script(1) in
// TestProgressNeverTearsTheProgramsOutput).
func TestCProfile(t *testing.T) {
	py := torchPython(t)
	r := bn(t, runOpts{tty: true}, append(small(py), "--python-profiler", "cprofile", ex(t, "train_cnn.py"), "--steps", "8")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
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

// Children forked after the window (bare os.fork with sys.exit(3), a
// multiprocessing fork pool, DataLoader fork workers) must end as under
// plain python: they used to hang in Kineto's teardown until --timeout.
func TestForkedChildrenAfterTheWindow(t *testing.T) {
	py := torchPython(t)
	want := "child 8 computed 499500\nchild exit status 3\npool 285\nloader 496\ndone\n"
	for name, args := range map[string][]string{
		"script":   append(small(py), "--timeout", "90s", "--report", "none", ex(t, "fork_children.py")),
		"launcher": {"--skip-first", "1", "--warmup", "1", "--active", "2", "--timeout", "90s", "--report", "none", "--", py, ex(t, "fork_children.py")},
	} {
		t.Run(name, func(t *testing.T) {
			r := bn(t, runOpts{}, args...)
			if r.code != 0 {
				t.Fatalf("exit %d (a forked child hung?)\n%s", r.code, r.stderr)
			}
			if r.stdout != want {
				t.Errorf("stdout = %q, want %q", r.stdout, want)
			}
			if ev := evidenceFiles(t, r.dir); len(ev) != 1 {
				t.Errorf("profiled processes: %v (forked children must not be)", ev)
			}
			if ev := loadEvidence(t, r.dir, "rank0"); len(ev.Profiler.Windows) != 1 {
				t.Errorf("windows: %+v", ev.Profiler.Windows)
			}
		})
	}
}

// A program with its own torch.profiler (schedule + export_chrome_trace)
// used to segfault: the program's profiler wins, its traces are written,
// and the evidence says why bottleneck has no window.
func TestProgramsOwnProfilerWins(t *testing.T) {
	py := torchPython(t)
	own := t.TempDir()
	r := bn(t, runOpts{}, append(small(py), ex(t, "own_profiler.py"), own)...)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 as under python\n%s", r.code, r.stderr)
	}
	if want := "exported own-4.pt.trace.json\nexported own-8.pt.trace.json\nexported own-12.pt.trace.json\ndone\n"; r.stdout != want {
		t.Errorf("stdout = %q, want %q", r.stdout, want)
	}
	for _, n := range []int{4, 8, 12} {
		b, err := os.ReadFile(filepath.Join(own, fmt.Sprintf("own-%d.pt.trace.json", n)))
		if err != nil || !bytes.Contains(b, []byte(`"ProfilerStep#`)) {
			t.Errorf("the program's trace %d: %v (%d bytes)", n, err, len(b))
		}
	}
	ev := loadEvidence(t, r.dir, "rank0")
	if ev.Profiler.State != "yielded" || len(ev.Profiler.Windows) != 0 {
		t.Errorf("profiler: %+v", ev.Profiler)
	}
	if len(ev.Missing) != 1 || !strings.Contains(ev.Missing[0].Why, "own_profiler.py:25") ||
		!strings.Contains(ev.Missing[0].Why, "stepped aside") {
		t.Errorf("missing: %+v", ev.Missing)
	}
	if _, err := os.Stat(filepath.Join(r.dir, "pyprofile-rank0.json")); err != nil {
		t.Errorf("no Python profile: %v", err)
	}
	text, _ := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	if !bytes.Contains(text, []byte("stepped aside")) {
		t.Errorf("report does not say why there is no window:\n%s", text)
	}
}

// A legacy torch.autograd.profiler.profile made with enabled=False starts
// nothing (facebookresearch/dlrm wraps its loop in one behind a flag):
// bottleneck used to step aside for it and the run had no trace. Enabled,
// the program's profiler still wins, as TestProgramsOwnProfilerWins.
func TestDisabledProgramProfilerIsNotOne(t *testing.T) {
	py := torchPython(t)
	for name, tc := range map[string]struct {
		args    []string
		windows int
		state   string
	}{
		"disabled": {nil, 1, ""},
		"enabled":  {[]string{"--enable-profiling"}, 0, "yielded"},
	} {
		t.Run(name, func(t *testing.T) {
			r := bn(t, runOpts{}, append(append(small(py), "--report", "none", ex(t, "disabled_profiler.py")), tc.args...)...)
			if r.code != 0 || !strings.HasSuffix(r.stdout, "done\n") {
				t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.stderr, ".cpp:") {
				t.Errorf("stderr has torch's own warning, which the program without the tool never printed:\n%s", r.stderr)
			}
			ev := loadEvidence(t, r.dir, "rank0")
			if len(ev.Profiler.Windows) != tc.windows || tc.state != "" && ev.Profiler.State != tc.state {
				t.Errorf("profiler: %+v, want %d window(s)", ev.Profiler, tc.windows)
			}
			if stepped := len(ev.Missing) > 0 && strings.Contains(ev.Missing[0].Why, "stepped aside"); stepped != (tc.windows == 0) {
				t.Errorf("missing: %+v", ev.Missing)
			}
		})
	}
}

// The agent's global forward hooks used to become a Dynamo guard, and
// removing them when the optimizer locked as the step source forced a
// recompile: a program with the fail_on_recompile stance exited 1.
func TestCompiledModelDoesNotRecompile(t *testing.T) {
	py := torchPython(t)
	r := bn(t, runOpts{}, append(small(py), "--report", "none", "--", py, ex(t, "compiled_strict.py"))...)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 as under python\n%s", r.code, r.stderr)
	}
	if r.stdout != "unique graphs 1\n" {
		t.Errorf("stdout = %q, want one compiled graph", r.stdout)
	}
	if strings.Contains(r.stderr, "global hooks") || strings.Contains(r.stderr, "recompile") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	ev := loadEvidence(t, r.dir, "rank0")
	if ev.StepSource == nil || *ev.StepSource != "optimizer" || len(ev.Profiler.Windows) != 1 {
		t.Errorf("steps %v, windows %+v", ev.StepSource, ev.Profiler.Windows)
	}
}

// The agent's own work in the training thread (profiler start and steps,
// trace export and gzip, files) used to be sampled as the program's time:
// with short steps the export became "File I/O in the step". None of it
// may be in the Python profile, and stacks start at the program's module.
func TestAgentWorkIsNotTheProgramsTime(t *testing.T) {
	py := torchPython(t)
	r := bn(t, runOpts{}, append(small(py), "--record-shapes", "--with-stack", "--active", "4",
		"--sample-interval", "1ms", "--window-sample-interval", "1ms", "--report", "none",
		ex(t, "train_cnn.py"), "--steps", "12", "--batch-size", "4")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	p, err := pyprofile.ReadFile(filepath.Join(r.dir, "pyprofile-rank0.json"))
	if err != nil {
		t.Fatal(err)
	}
	used := map[int]bool{}
	for _, s := range p.Stacks {
		for _, f := range s.Frames {
			used[f] = true
		}
		if root := p.Frames[s.Frames[0]]; p.Threads[s.Thread].Role == "main" && root.Func != "<module>" {
			t.Errorf("a main-thread stack starts at %s:%s, not the program's <module>", root.File, root.Func)
		}
	}
	for i := range used {
		f := p.Frames[i]
		base := filepath.Base(f.File)
		if strings.HasPrefix(base, "_bottleneck") || base == "gzip.py" || base == "shutil.py" ||
			// methods of torch.profiler (not its import: module and class bodies)
			(strings.HasSuffix(f.File, filepath.Join("torch", "profiler", "profiler.py")) && strings.Contains(f.Func, ".")) {
			t.Errorf("the agent's work in the profile: %s:%d %s", f.File, f.Line, f.Func)
		}
	}
	for _, th := range p.Threads {
		if strings.HasPrefix(th.Name, "bottleneck-") {
			t.Errorf("the agent's thread in the profile: %+v", th)
		}
	}
	// the trace's op stacks (export --format folded, the flame graphs) start
	// at the program's frames too: no stack begins with the agent's
	traces, _ := filepath.Glob(filepath.Join(r.dir, "trace-*.json.gz"))
	if len(traces) != 1 {
		t.Fatalf("traces %v", traces)
	}
	tr, err := kineto.ReadFile(traces[0], kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var folded strings.Builder
	if err := flame.FromTrace(tr, flame.TraceOptions{}).WriteFolded(&folded); err != nil {
		t.Fatal(err)
	}
	program := 0
	for _, line := range strings.Split(strings.TrimSpace(folded.String()), "\n") {
		if strings.Contains(strings.SplitN(line, ";", 2)[0], "_bottleneck_") {
			t.Errorf("a stack starts with the agent's frame: %.200s", line)
		}
		program += strings.Count(line, "train_cnn.py")
	}
	if program == 0 {
		t.Errorf("no stack of the program's frames:\n%.2000s", folded.String())
	}
}

// TestHelperCLI is `bottleneck run` as a real process for the tests that
// need real file descriptors and signals (it is this test binary re-run
// with BOTTLENECK_TEST_CLI=1 and the arguments after "--").
func TestHelperCLI(t *testing.T) {
	if os.Getenv("BOTTLENECK_TEST_CLI") != "1" {
		t.Skip("helper process")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	cmd := NewCmd(iostreams.System())
	cmd.SetArgs(args)
	code := 0
	if err := cmd.Execute(); err != nil {
		var ee *exitcode.Error
		if !errors.As(err, &ee) {
			os.Exit(2)
		}
		code = ee.Code
	}
	os.Exit(code)
}

func cliCommand(t *testing.T, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperCLI$", "--"}, args...)...)
	c.Env = append(os.Environ(), "BOTTLENECK_TEST_CLI=1")
	return c
}

// `--report stdout` into a reader that went away (`| head -c1`) used to
// exit 141 (SIGPIPE): the program's status wins.
func TestClosedStdoutKeepsTheProgramsStatus(t *testing.T) {
	py := torchPython(t)
	dir := filepath.Join(t.TempDir(), "run")
	c := cliCommand(t, append(small(py), "-o", dir, "--report", "stdout", ex(t, "exit3.py"))...)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout = pw
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	// the program's whole output, then the reader goes away (like head -c15):
	// only the report meets the closed pipe
	own := make([]byte, len("exiting with 3\n"))
	if _, err := io.ReadFull(pr, own); err != nil || string(own) != "exiting with 3\n" {
		t.Fatalf("read %q, %v", own, err)
	}
	pr.Close()
	err = c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want the program's 3\n%s", err, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "report.txt")); err != nil {
		t.Errorf("no report.txt: %v", err)
	}
}

// A second SIGTERM while the reports are written (the first stopped the
// program) used to kill bottleneck with no report at all (exit 143).
func TestSignalDuringReportWriting(t *testing.T) {
	py := torchPython(t)
	dir := filepath.Join(t.TempDir(), "run")
	// a window with shapes and stacks makes the analysis take a while
	c := cliCommand(t, append(small(py), "-o", dir, "--report", "none", "--active", "4", "--record-shapes",
		"--with-stack", ex(t, "exit3.py"))...)
	var out syncBuf
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// the program has ended once the manifest says so; the reports follow
	deadline := time.Now().Add(120 * time.Second)
	for {
		if m, err := rundir.ReadManifest(dir); err == nil && m.State == "ended" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the program did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = c.Process.Signal(syscall.SIGTERM)
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want the program's 3\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "bottleneck: stopping: finishing the reports") {
		t.Logf("the signal came after the reports were written:\n%s", out.String())
	}
	text, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil || !bytes.Contains(text, []byte("bottleneck run: ")) {
		t.Errorf("report.txt: %v\n%s", err, text)
	}
}

// A signal while the reports are written gives them reportFlush more;
// then the command returns at once with the program's status, the
// reports left unfinished (cli.Main exits with it: nothing in the command
// calls os.Exit). Here the reports never finish: stderr's writer holds
// their goroutine at its "analyzing" line, before report.txt, and sends
// the signal from there.
func TestSignalCutsTheReportsShort(t *testing.T) {
	py := torchPython(t)
	sigs := make(chan os.Signal, 1)
	errOut := &holdAt{line: "bottleneck: analyzing", hit: func() {
		sigs <- syscall.SIGTERM
		select {} // the reports' goroutine, for good: the process would exit
	}}
	ios, _, out, _ := iostreams.Test()
	ios.ErrOut = errOut
	dir := filepath.Join(t.TempDir(), "run")
	cmd := newCmd(&Options{IO: ios, Signals: sigs}, runRun)
	cmd.SetArgs(append(small(py), "-o", dir, ex(t, "exit3.py")))
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	var ee *exitcode.Error
	if !errors.As(err, &ee) || ee.Code != 3 || ee.Err != nil {
		t.Fatalf("%v, want the program's exit status 3 and no message\n%s", err, errOut)
	}
	for _, want := range []string{"bottleneck: stopping: finishing the reports for at most 3s\n", "bottleneck: reports cut short; report.txt holds what was written\n"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if out.String() != "exiting with 3\n" {
		t.Errorf("stdout %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.ReportText)); !os.IsNotExist(err) {
		t.Errorf("report.txt: %v, want none (the reports were held before it)", err)
	}
}

// holdAt is a writer that calls hit, once, on the first write holding
// line, after keeping it.
type holdAt struct {
	line string
	hit  func()
	once sync.Once
	buf  syncBuf
}

func (h *holdAt) Write(p []byte) (int, error) {
	n, err := h.buf.Write(p)
	if bytes.Contains(p, []byte(h.line)) {
		h.once.Do(h.hit)
	}
	return n, err
}

func (h *holdAt) String() string { return h.buf.String() }

// Two runs given the same --out used to both run and overwrite each
// other's files: one runs, the other is refused before starting.
func TestSameOutTwice(t *testing.T) {
	py := torchPython(t)
	shared := filepath.Join(t.TempDir(), "shared")
	var wg sync.WaitGroup
	results := make([]result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = bn(t, runOpts{}, append(small(py), "-o", shared, "--report", "none", ex(t, "exit3.py"))...)
		}()
	}
	wg.Wait()
	ran, refused := 0, 0
	for _, r := range results {
		switch {
		case r.code == 3:
			ran++
		case r.err != nil && strings.Contains(r.err.Error(), "--output"):
			refused++
		default:
			t.Errorf("exit %d, %v\n%s", r.code, r.err, r.stderr)
		}
	}
	if ran != 1 || refused != 1 {
		t.Errorf("%d ran, %d refused; want 1 and 1", ran, refused)
	}
	if ev := evidenceFiles(t, shared); len(ev) != 1 {
		t.Errorf("evidence files %v", ev)
	}
}

// An idle thread (Condition.wait) used to dominate the Python tables:
// they rank on-CPU time, and the waiting thread is listed apart by name.
func TestWaitingThreadsApart(t *testing.T) {
	py := torchPython(t)
	// its 30 steps' Python takes 30-60 ms: every 2 ms, the main thread's
	// samples are enough to tell it on a CPU (at 20 ms a CI run had one,
	// off the CPU, and called the main thread waiting)
	r := bn(t, runOpts{}, append(small(py), "--sample-interval", "2ms", "--report", "none", ex(t, "idle_thread.py"))...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	tables, waiting, ok := strings.Cut(text, "Waiting threads")
	if !ok {
		t.Fatalf("no waiting threads listed:\n%s", text)
	}
	if !strings.Contains(tables, "Python call sites, main thread, whole run (on-CPU samples") ||
		!strings.Contains(tables, "idle_thread.py:") {
		t.Errorf("the tables do not rank the main thread's on-CPU time:\n%s", text)
	}
	if strings.Contains(tables, "Condition.wait") || strings.Contains(tables, "refresh-thread") {
		t.Errorf("the waiting thread is in the tables:\n%s", text)
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(waiting, strings.SplitN(waiting, "\n", 2)[0]+"\n"), "\n")
	if !strings.Contains(first, "refresh-thread (other)") || !strings.Contains(first, "Condition.wait") {
		t.Errorf("waiting thread line %q", first)
	}
	p, err := pyprofile.ReadFile(filepath.Join(r.dir, "pyprofile-rank0.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i, th := range p.Threads {
		if want := th.Name == "refresh-thread"; p.Waiting(i) != want {
			t.Errorf("thread %q: waiting = %v (cpu %.3fs, %.1f of %d samples on-CPU)", th.Name, !want, th.CPUS, th.CPUSamples, th.Samples)
		}
	}
}

// On a terminal the progress line used to be drawn where the cursor was,
// inside the program's half-written lines ("bottleneck: rank0:
// startingSeed set to 0"). Under `script` (a real pseudo-terminal), the
// status is drawn only as whole cursor-neutral blocks on the bottom row,
// outside the program's scroll region: with them removed, the program's
// output is intact.
func TestProgressNeverTearsTheProgramsOutput(t *testing.T) {
	py := torchPython(t)
	scriptCmd, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no `script` command (util-linux)")
	}
	dir := filepath.Join(t.TempDir(), "run")
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	inner := "stty rows 24 cols 100 2>/dev/null; exec env BOTTLENECK_TEST_CLI=1 " + q(os.Args[0]) +
		" -test.run='^TestHelperCLI$' -- --python " + q(py) + " -o " + q(dir) + " --report none " +
		q(ex(t, "chatty.py")) + " --lines 20 --pause 0.15"
	c := exec.Command(scriptCmd, "-qfec", inner, "/dev/null")
	c.Stdin = strings.NewReader("")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%q", err, out)
	}
	raw := string(out)
	status := regexp.MustCompile(`\x1b7\x1b\[24;1H\x1b\[2K[^\x1b]*\x1b8`)
	if n := len(status.FindAllString(raw, -1)); n == 0 {
		t.Fatalf("no status drawn on the bottom row (the test would prove nothing):\n%q", raw)
	}
	if !strings.Contains(raw, "\x1b7\x1b[1;23r\x1b8") || !strings.Contains(raw, "\x1b7\x1b[r\x1b[24;1H\x1b[2K\x1b8") {
		t.Errorf("scroll region not set, or not given back:\n%q", raw)
	}
	clean := status.ReplaceAllString(raw, "")
	clean = strings.ReplaceAll(clean, "\x1bD\x1b[1A\x1b7\x1b[1;23r\x1b8", "")
	clean = strings.ReplaceAll(clean, "\x1b7\x1b[r\x1b[24;1H\x1b[2K\x1b8", "")
	for k := 0; k < 20; k++ {
		if line := fmt.Sprintf("line %d begins and ends\r\n", k); !strings.Contains(clean, line) {
			t.Errorf("the program's line %d was torn:\n%q", k, raw)
			break
		}
	}
	if strings.Contains(clean, "\x1b") {
		t.Errorf("control sequences outside the status blocks:\n%q", clean)
	}
}

// --repro records the shapes and writes the top ops' scripts into the run
// directory, listed after the report; the program's output and status
// stay its own.
func TestRepro(t *testing.T) {
	r := bn(t, runOpts{}, "--python", testutil.TorchPython(t), "--repro", ex(t, "repro_ops.py"))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	scripts, _ := filepath.Glob(filepath.Join(r.dir, "repro", "*.py"))
	if len(scripts) != reproTop {
		t.Fatalf("scripts %v, want %d\n%s", scripts, reproTop, r.stderr)
	}
	for _, s := range scripts {
		if !strings.Contains(r.stderr, "repro: "+s+" (aten::") {
			t.Errorf("%s not listed:\n%s", s, r.stderr)
		}
	}
	// the reports link them
	txt, _ := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	if !strings.Contains(string(txt), "Repro scripts of the hot ops") || !strings.Contains(string(txt), scripts[0]) {
		t.Errorf("report.txt does not list the scripts:\n%.3000s", txt)
	}
	html, _ := os.ReadFile(filepath.Join(r.dir, "report.html"))
	if !strings.Contains(string(html), `"repro/`+filepath.Base(scripts[0])+`"`) {
		t.Errorf("report.html's data does not name %s", filepath.Base(scripts[0]))
	}
}

// A program that fails before its first step (a checkpoint torch.load
// refuses, at start-up): the report says so, not "no step was detected
// ... see --step-source"; one that ends as usual without steps still
// gets the step-source hint, and one with fewer steps than the window
// skips the flags that record them.
func TestFailsBeforeItsFirstStep(t *testing.T) {
	py := torchPython(t)
	dir := t.TempDir()
	for _, c := range []struct{ name, code, why string }{
		{"raises", "import torch\nraise ValueError('no data')\n", "the program raised ValueError before its first step"},
		{"exits", "import sys, torch\nsys.exit(3)\n", "the program exited with status 3 before its first step"},
		{"ends", "import torch\nprint(torch.ones(2).sum().item())\n", "no step was detected"},
		// six optimizer steps (five timed: the first starts the count), fewer
		// than the default window's skip-first 5 + warmup 2: the flags that record them
		{"few", "import torch\nm = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(m.parameters(), lr=0.1)\nfor _ in range(6):\n    m(torch.ones(2)).sum().backward()\n    opt.step()\n",
			"the program ended after 5 optimizer steps, before the window (skip-first 5 + wait 0 + warmup 2) reached its first active step: bottleneck run --skip-first 1 --warmup 1 --active 3"},
	} {
		prog := filepath.Join(dir, c.name+".py")
		if err := os.WriteFile(prog, []byte(c.code), 0o644); err != nil {
			t.Fatal(err)
		}
		r := bn(t, runOpts{}, "--python", py, prog)
		ev := loadEvidence(t, r.dir, "rank0")
		if len(ev.Missing) == 0 || !strings.Contains(ev.Missing[0].Why, c.why) {
			t.Errorf("%s: exit %d, missing %+v: want %q", c.name, r.code, ev.Missing, c.why)
		}
	}
}

// mainSamples reads the run's Python profile: the main thread's samples
// and the run's length in seconds.
func mainSamples(t *testing.T, dir string) (int, float64) {
	var p struct {
		DurationS float64 `json:"duration_s"`
		Threads   []struct {
			Role    string `json:"role"`
			Samples int    `json:"samples"`
		} `json:"threads"`
	}
	readJSON(t, filepath.Join(dir, "pyprofile-rank0.json"), &p)
	n := 0
	for _, th := range p.Threads {
		if th.Role == "main" {
			n += th.Samples
		}
	}
	return n, p.DurationS
}
