package analyze

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

const good = `{"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {"External id": 1, "Input Dims": [[2, 2], [2, 2]]}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5, "args": {"External id": 1, "correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": "gemm<script>", "pid": 0, "tid": 7, "ts": 30, "dur": 40, "args": {"device": 0, "stream": 7, "correlation": 9, "blocks per SM": 2, "est. achieved occupancy %": 25}}
]}`

func write(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(NewCmd, args...)
}

func TestTextReport(t *testing.T) {
	code, out, _ := run(t, "--full", write(t, "a.json", good))
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	for _, want := range []string{"1 step(s) (#1)", "aten::mm", "gemm<script>", "aten::mm 100%", "Step-time breakdown"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("piped output carries control codes")
	}
}

func TestJSONReport(t *testing.T) {
	code, out, _ := run(t, "--json", "--group-by-shape", write(t, "a.json", good))
	if code != exitcode.OK {
		t.Fatalf("exit %d", code)
	}
	var r struct {
		Schema string
		Traces []struct {
			Operators struct {
				Rows []struct {
					Name         string  `json:"name"`
					InputDims    string  `json:"input_dims"`
					DeviceSelfUs float64 `json:"device_self_us"`
					HostSelfUs   float64 `json:"host_self_us"`
				}
			}
			Kernels struct {
				Rows []struct {
					Name         string  `json:"name"`
					BlocksPerSM  float64 `json:"blocks_per_sm"`
					OccupancyPct float64 `json:"est_achieved_occupancy_pct"`
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if r.Schema != "bottleneck.report/v1" {
		t.Errorf("schema %q", r.Schema)
	}
	ops := r.Traces[0].Operators.Rows
	var mm bool
	for _, o := range ops {
		if o.Name == "aten::mm" {
			mm = true
			if o.InputDims != "[[2, 2], [2, 2]]" || o.DeviceSelfUs != 40 || o.HostSelfUs != 45 {
				t.Errorf("aten::mm row %+v, want dims [[2, 2], [2, 2]], device self 40, host self 45", o)
			}
		}
	}
	if !mm {
		t.Error("no aten::mm row")
	}
	if k := r.Traces[0].Kernels.Rows[0]; k.BlocksPerSM != 2 || k.OccupancyPct != 25 {
		t.Errorf("kernel row %+v", k)
	}
}

func TestExitCodes(t *testing.T) {
	damaged := strings.Replace(good, `"dur": 50`, `"dur": N/A`, 1)
	truncated := good[:len(good)/2]
	cases := []struct {
		name  string
		paths []string
		want  int
	}{
		{"damaged", []string{write(t, "d.json", damaged)}, exitcode.Partial},
		{"truncated", []string{write(t, "t.json", truncated)}, exitcode.Partial},
		{"one unreadable of two", []string{write(t, "a.json", good), write(t, "x.json", "not json")}, exitcode.Partial},
		{"nothing readable", []string{write(t, "x.json", "not json")}, exitcode.Failed},
		{"missing file", []string{filepath.Join(t.TempDir(), "nope.json")}, exitcode.Failed},
		{"empty file", []string{write(t, "e.json", "")}, exitcode.Failed},
		{"one missing of two", []string{write(t, "a.json", good), filepath.Join(t.TempDir(), "nope.json")}, exitcode.Partial},
		{"a trace and an empty directory", []string{write(t, "a.json", good), t.TempDir()}, exitcode.Partial},
	}
	for _, c := range cases {
		code, out, errOut := run(t, c.paths...)
		if code != c.want {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, code, c.want, out, errOut)
		}
		// exit 3 names the damaged or unreadable input (the last path of
		// each case) on stderr too, not only in the report on stdout
		if bad := c.paths[len(c.paths)-1]; code == exitcode.Partial && !strings.Contains(errOut, "bottleneck: could not read "+bad) && !strings.Contains(errOut, "bottleneck: "+bad+": problem: ") {
			t.Errorf("%s: exit 3 with stderr %q: want %s named", c.name, errOut, bad)
		}
		// stdout carries only a report: none when nothing was read (the
		// error goes to stderr), else the readable part.
		if hasReport := strings.Contains(out, "Read 1 trace file(s)"); hasReport != (code != exitcode.Failed) || code == exitcode.Failed && out != "" {
			t.Errorf("%s: exit %d with stdout %q", c.name, code, out)
		}
	}
	if code, _, _ := run(t, "--sort", "bogus", write(t, "a.json", good)); code != exitcode.Usage {
		t.Errorf("bad --sort: exit %d, want 2", code)
	}
	if code, _, _ := run(t, "--rank", "5", write(t, "a.json", good)); code != exitcode.Usage {
		t.Errorf("absent --rank: exit %d, want 2", code)
	}
}

// A problem names the file and the byte offset.
func TestProblemsAreLocated(t *testing.T) {
	p := write(t, "d.json", strings.Replace(good, `"dur": 50`, `"dur": N/A`, 1))
	_, out, _ := run(t, p)
	if !strings.Contains(out, p) || !strings.Contains(out, "problem: byte ") || !strings.Contains(out, "unreadable dur (N/A)") {
		t.Errorf("report does not locate the problem:\n%s", out)
	}
}

// A tensorboard_trace_handler directory with several ranks.
func TestDirectoryOfRanks(t *testing.T) {
	dir := filepath.Join(testutil.Traces(t), "param", "dlrm_kineto")
	code, out, _ := run(t, "--full", "--top", "3", dir)
	if code != exitcode.OK {
		t.Fatalf("exit %d", code)
	}
	for r := range 8 {
		if !strings.Contains(out, "=== rank "+string(rune('0'+r))+":") {
			t.Errorf("no section for rank %d", r)
		}
	}
}

// --definition hta reproduces HTA's idle-time breakdown and launch
// statistics on a trace with ns decimals
// (reference/hta_out_ns_resolution_trace.txt: 1709 / 8404 µs host / kernel
// wait, 2173 short kernels), where the default keeps the exact figures.
func TestDefinitionHTA(t *testing.T) {
	path := filepath.Join(testutil.Traces(t), "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
	stats := func(args ...string) (host, kernel float64, short int) {
		code, out, stderr := run(t, append(args, "--json", path)...)
		if code != exitcode.OK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var r struct {
			Traces []struct {
				Idle struct {
					Streams []struct {
						Stream       int64   `json:"stream"`
						HostWaitUs   float64 `json:"host_wait_us"`
						KernelWaitUs float64 `json:"kernel_wait_us"`
					} `json:"streams"`
				} `json:"gpu_idle"`
				Launch struct {
					Short int `json:"short_kernels"`
				} `json:"kernel_launches"`
			} `json:"traces"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Traces) != 1 || len(r.Traces[0].Idle.Streams) == 0 {
			t.Fatalf("unexpected report (%v): %.300s", err, out)
		}
		st := r.Traces[0].Idle.Streams[0]
		return st.HostWaitUs, st.KernelWaitUs, r.Traces[0].Launch.Short
	}
	if host, kernel, short := stats("--definition", "hta"); host != 1709 || kernel != 8404 || short != 2173 {
		t.Errorf("--definition hta: host/kernel wait %v/%v µs, %d short kernels; HTA has 1709/8404, 2173", host, kernel, short)
	}
	if host, kernel, short := stats(); host == 1709 || kernel == 8404 || short == 2173 {
		t.Errorf("default definition: host/kernel wait %v/%v µs, %d short kernels; want the exact (unrounded) figures", host, kernel, short)
	}
	if code, _, _ := run(t, "--definition", "nope", path); code != exitcode.Usage {
		t.Errorf("--definition nope: exit %d, want %d", code, exitcode.Usage)
	}
}

// Without --full the terminal gets the opening only: the verdict, what was
// read, every problem, and how to see the rest.
func TestSummaryByDefault(t *testing.T) {
	dir := filepath.Join(testutil.Traces(t), "param", "dlrm_kineto")
	code, out, _ := run(t, dir, write(t, "x.json", "not json"))
	if code != exitcode.Partial {
		t.Fatalf("exit %d, want %d", code, exitcode.Partial)
	}
	for _, want := range []string{"Verdict across 8 ranks", "Read 8 trace file(s)", "could not read", "--full"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Step-time breakdown") || strings.Contains(out, "=== rank") {
		t.Errorf("summary holds the full report:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > report.TerminalWidth {
			t.Errorf("line of %d columns: %s", n, line)
		}
	}
}

// Names from the trace cannot reach the terminal as escape sequences: the
// device name (GPU table), op and kernel names (tables, critical path).
func TestNoControlCharactersInTheTextReport(t *testing.T) {
	const esc = `\u001b]8;;http://x\u0007\u001b[2J`
	trace := strings.Replace(good, `{"traceEvents": [`, `{"deviceProperties": [{"id": 0, "name": "H100`+esc+`"}], "traceEvents": [`, 1)
	trace = strings.ReplaceAll(trace, `"aten::mm"`, `"aten::mm`+esc+`"`)
	trace = strings.ReplaceAll(trace, `"gemm<script>"`, `"gemm`+esc+`"`)
	_, summary, _ := run(t, write(t, "esc.json", trace))
	code, out, errOut := run(t, "--full", write(t, "esc.json", trace))
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	out += summary
	if !strings.Contains(out, "H100?]8;;http://x??[2J") {
		t.Errorf("device name not shown sanitised:\n%s", out)
	}
	if i := strings.IndexFunc(out, func(c rune) bool { return c < 0x20 && c != '\n' && c != '\t' || c == 0x7f }); i >= 0 {
		t.Errorf("control character in the report at %d: %q", i, out[max(i-30, 0):min(i+30, len(out))])
	}
}

// A run directory whose bottleneck was SIGKILLed (manifest still
// "running") is analyzed, with a note on stderr that the run was
// interrupted; a run that ended gets no note.
func TestInterruptedRunDirIsSaid(t *testing.T) {
	for state, want := range map[string]bool{"running": true, "ended": false} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "trace-rank0.pt.trace.json"), []byte(good), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := rundir.WriteManifest(dir, &rundir.Manifest{Format: rundir.ManifestFormat, Version: 1, State: state}); err != nil {
			t.Fatal(err)
		}
		_, out, errOut := run(t, dir)
		if !strings.Contains(out, "Read 1 trace file(s)") {
			t.Errorf("state %s: trace not analyzed:\n%s", state, out)
		}
		if got := strings.Contains(errOut, "interrupted: bottleneck ended before the run did"); got != want {
			t.Errorf("state %s: note = %v, want %v; stderr:\n%s", state, got, want, errOut)
		}
	}
}

// A directory entry that may hold traces but cannot be read (a trace
// name that is a dangling link, a subdirectory that cannot be listed)
// makes the input incomplete: exit 3, the entry named; the readable
// traces are still analysed. A plain directory beside them stays silent.
func TestUnreadableDirectoryEntries(t *testing.T) {
	t.Run("dangling link", func(t *testing.T) {
		dir := filepath.Dir(write(t, "a.json", good))
		if err := os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "b.json")); err != nil {
			t.Skip("no symbolic links here:", err)
		}
		os.Mkdir(filepath.Join(dir, "empty"), 0o755)
		code, out, stderr := run(t, dir)
		if code != exitcode.Partial || !strings.Contains(stderr, "b.json") || !strings.Contains(out, "Read 1 trace file") {
			t.Errorf("exit %d, stderr %q, stdout %q", code, stderr, out)
		}
	})
	t.Run("unlistable subdirectory", func(t *testing.T) {
		dir := filepath.Dir(write(t, "a.json", good))
		sub := filepath.Join(dir, "rank1")
		os.Mkdir(sub, 0o755)
		os.WriteFile(filepath.Join(sub, "b.json"), []byte(good), 0o644)
		os.Chmod(sub, 0)
		defer os.Chmod(sub, 0o755)
		if _, err := os.ReadDir(sub); err == nil {
			t.Skip("premise absent: a directory with mode 000 is still readable here (running as root)")
		}
		code, _, stderr := run(t, dir)
		if code != exitcode.Partial || !strings.Contains(stderr, "rank1") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
	t.Run("clean", func(t *testing.T) {
		dir := filepath.Dir(write(t, "a.json", good))
		os.Mkdir(filepath.Join(dir, "empty"), 0o755)
		os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
		if code, _, stderr := run(t, dir); code != exitcode.OK {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
}

// A run directory copied without its manifest is a directory of traces:
// its own files (environment, evidence, Python profile, report) are not
// read as traces, so it reads fully (exit 0). A Python profile alone is
// no trace: exit 1, saying which command draws it.
func TestRunFilesWithoutManifest(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"trace-rank0.pt.trace.json": good, "env.json": `{}`, "evidence-rank0.json": `{}`, "report.json": `{}`,
		"pyprofile-rank0.json": `{"format":"bottleneck.pyprofile","version":1,"profiler":"sample","frames":[],"threads":[],"stacks":[]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, stderr := run(t, dir); code != exitcode.OK || !strings.Contains(out, "Read 1 trace file(s)") || stderr != "" {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, stderr, out)
	}
	py := filepath.Join(dir, "pyprofile-rank0.json")
	if code, out, stderr := run(t, py); code != exitcode.Failed || out != "" || !strings.Contains(stderr, "no trace, only Python profiles") {
		t.Errorf("a Python profile: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
