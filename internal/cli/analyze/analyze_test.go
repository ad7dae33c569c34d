package analyze

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
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
	ios, _, out, errOut := iostreams.Test()
	cmd := NewCmd(ios)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err := cmd.Execute()
	var ee *exitcode.Error
	switch {
	case err == nil:
		code = exitcode.OK
	case errors.As(err, &ee):
		code = ee.Code
	default:
		code = exitcode.Usage
	}
	return code, out.String(), errOut.String()
}

func TestTextReport(t *testing.T) {
	code, out, _ := run(t, write(t, "a.json", good))
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
	}
	for _, c := range cases {
		code, out, errOut := run(t, c.paths...)
		if code != c.want {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.name, code, c.want, out, errOut)
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
	dir := filepath.Join(testutil.SharedTraces(t), "param", "dlrm_kineto")
	code, out, _ := run(t, "--top", "3", dir)
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
	path := filepath.Join(testutil.SharedTraces(t), "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
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
