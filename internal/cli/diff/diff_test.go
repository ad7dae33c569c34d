package diff

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/diff"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return clitest.Run(NewCmd, args...)
}

// compare runs diff --json on base and new and decodes the result.
func compare(t *testing.T, base, new string, extra ...string) (*diff.Result, int) {
	t.Helper()
	code, out, errOut := run(t, append([]string{base, new, "--json"}, extra...)...)
	var r diff.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("exit %d, output is not JSON: %v\n%s\n%s", code, err, out, errOut)
	}
	return &r, code
}

func mlp(name string) string {
	return filepath.Join(testutil.RepoRoot(), "testdata", "diff", "mlp", name)
}

func findItem(items []diff.ItemDelta, name string) *diff.ItemDelta {
	for i := range items {
		if items[i].Name == name {
			return &items[i]
		}
	}
	return nil
}

// The same program run twice: nothing to report, and the gate stays
// silent.
func TestIdenticalRunsNoSignificantChange(t *testing.T) {
	r, code := compare(t, mlp("base"), mlp("same"), "--fail-if", "step_time > +5%", "--fail-if", "verdict changed")
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0 (gate must not fire): %+v", code, r.Gate)
	}
	h := r.Headline
	if h.Significant || !h.NoiseKnown || h.LowPct > 0 || h.HighPct < 0 {
		t.Errorf("headline %+v: want a known interval containing zero", h)
	}
	if !strings.HasPrefix(h.Summary, "No significant change") || h.Cause != "" || h.SameWork {
		t.Errorf("summary %q cause %q same-work %v", h.Summary, h.Cause, h.SameWork)
	}
	if r.Base.StepSource == "" || r.Base.Steps < 40 || r.Base.Kind != "run directory" {
		t.Errorf("base side %+v: want the agent's step times of a run directory", r.Base)
	}
	for _, list := range [][]diff.ItemDelta{r.Ops, r.Kernels} {
		for _, it := range list {
			if it.Match != diff.Exact || len(it.NewShapes) > 0 {
				t.Errorf("identical programs: %s matched %s, shapes %v -> %v", it.Name, it.Match, it.BaseShapes, it.NewShapes)
			}
		}
	}
	if len(r.Env) != 0 {
		t.Errorf("environment differences between runs on one machine: %+v", r.Env)
	}
}

// Doubling a layer's width: slower beyond the noise, the matmul named as
// the cause with its shapes, and the gate fails with status 4.
func TestWiderMatmulNamedAsCause(t *testing.T) {
	r, code := compare(t, mlp("base"), mlp("wide"), "--fail-if", "step_time > +5%", "--fail-if", "verdict changed")
	if code != exitcode.Regression {
		t.Fatalf("exit %d, want %d", code, exitcode.Regression)
	}
	h := r.Headline
	if !h.Significant || h.DeltaPct < 40 || h.LowPct <= 0 || h.ThroughputPct >= 0 {
		t.Errorf("headline %+v: want significantly slower", h)
	}
	if !strings.Contains(h.Cause, "aten::mm") && !strings.Contains(h.Cause, "aten::addmm") {
		t.Errorf("cause %q: want the matmul", h.Cause)
	}
	if !strings.Contains(h.Cause, "2048") {
		t.Errorf("cause %q: want the changed input shape", h.Cause)
	}
	mm := findItem(r.Ops, "aten::mm")
	if mm == nil || mm.DeltaUs <= 0 || mm.SharePct < 10 || len(mm.NewShapes) == 0 || !strings.Contains(strings.Join(mm.NewShapes, " "), "2048") {
		t.Errorf("aten::mm row %+v: want slower with its new shapes", mm)
	}
	if h.SameWork {
		t.Error("the work changed (shapes), but same_work is set")
	}
	var failed []string
	for _, g := range r.Gate {
		if g.Failed {
			failed = append(failed, g.Rule)
		}
	}
	if len(failed) != 1 || failed[0] != "step_time > +5%" {
		t.Errorf("failed rules %v, want only step_time", failed)
	}
}

// An added .item() on the CPU: new operators named, no significant
// change of the step.
func TestAddedItemNamesNewOps(t *testing.T) {
	r, _ := compare(t, mlp("base"), mlp("item"))
	for _, name := range []string{"aten::item", "aten::_local_scalar_dense"} {
		if it := findItem(r.Ops, name); it == nil || it.Match != diff.Added || it.NewCalls < 1 {
			t.Errorf("%s: %+v, want a new operator called every step", name, it)
		}
	}
	if r.Headline.Significant {
		t.Errorf("headline %+v: a CPU .item() costs nothing measurable", r.Headline)
	}
}

// Two real traces of different programs on different GPUs (HTA's
// trace_diff pair): the device warning, matmul kernels matched by their
// operator across architectures, the precision and tensor-core change.
func TestHTATraceDiffPair(t *testing.T) {
	dir := testutil.Traces(t)
	r, code := compare(t, filepath.Join(dir, "hta/trace_diff/control"), filepath.Join(dir, "hta/trace_diff/test"))
	if code != exitcode.OK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "different devices (NVIDIA A100-PG509-200 vs Tesla V100-SXM2-16GB)") {
		t.Errorf("warnings %q: want the device mismatch", r.Warnings)
	}
	if r.Headline.DeltaPct < 30 || !r.Headline.Significant {
		t.Errorf("headline %+v", r.Headline)
	}
	mm := findItem(r.Kernels, "kernels of aten::mm")
	if mm == nil || mm.Match != diff.SameOp || !strings.HasPrefix(mm.BaseNames[0], "ampere_") || !strings.HasPrefix(mm.NewNames[0], "volta_") {
		t.Errorf("aten::mm kernels: %+v, want ampere -> volta matched by operator", mm)
	}
	var sawPrecision, sawTC bool
	for _, c := range r.Changes {
		sawPrecision = sawPrecision || (c.What == "matmul/convolution kernel time by precision" && strings.HasPrefix(c.Base, "fp16") && strings.HasPrefix(c.New, "fp32"))
		sawTC = sawTC || c.What == "kernel time on tensor cores"
	}
	if !sawPrecision || !sawTC {
		t.Errorf("changes %+v: want fp16 -> fp32 and the tensor-core change", r.Changes)
	}
	if r.Breakdown[0].Category != "Kernel" || r.Breakdown[0].DeltaUs <= 0 {
		t.Errorf("largest breakdown change %+v, want Kernel", r.Breakdown[0])
	}
}

// HTA's trace_compare pair: one step each (noise unknown, no cause
// claimed), the operators the test trace adds listed as new.
func TestHTATraceComparePair(t *testing.T) {
	dir := testutil.Traces(t)
	r, _ := compare(t, filepath.Join(dir, "hta/trace_compare/base"), filepath.Join(dir, "hta/trace_compare/test"))
	if r.Headline.NoiseKnown || r.Headline.Significant || r.Headline.Cause != "" {
		t.Errorf("headline %+v: one step per side cannot give an interval or a cause", r.Headline)
	}
	for _, name := range []string{"AddmmBackward0", "CatBackward0"} {
		if it := findItem(r.Ops, name); it == nil || it.Match != diff.Added {
			t.Errorf("%s: %+v, want new", name, it)
		}
	}
}

// The same model on an NVIDIA and an AMD GPU: vendor kernels matched by
// the operator that launched them.
func TestCrossVendorKernelMatching(t *testing.T) {
	dir := testutil.Traces(t)
	r, _ := compare(t, filepath.Join(dir, "tracelens/h100"), filepath.Join(dir, "tracelens/mi300"))
	for op, prefixes := range map[string][2]string{
		"kernels of aten::mm":                       {"sm90_xmma_gemm", "Cijk_"},
		"kernels of aten::_flash_attention_forward": {"void pytorch_flash::flash_fwd", "attn_fwd"},
	} {
		it := findItem(r.Kernels, op)
		if it == nil || !strings.HasPrefix(it.BaseNames[0], prefixes[0]) || !strings.HasPrefix(it.NewNames[0], prefixes[1]) {
			t.Errorf("%s: %+v, want %s -> %s", op, it, prefixes[0], prefixes[1])
			continue
		}
		// Across devices, each run's share of its kernel time is given.
		if it.BaseKernelPct <= 1 || it.NewKernelPct <= 1 || it.BaseKernelPct > 100 || it.NewKernelPct > 100 {
			t.Errorf("%s: kernel-time shares %.1f%% -> %.1f%%", op, it.BaseKernelPct, it.NewKernelPct)
		}
	}
	for _, c := range r.Changes {
		if strings.Contains(c.What, "precision") {
			t.Errorf("both run bf16 matmuls, yet %+v", c)
		}
	}
}

func TestTextAndMarkdown(t *testing.T) {
	md := filepath.Join(t.TempDir(), "comment.md")
	code, out, _ := run(t, mlp("base"), mlp("wide"), "--markdown", md, "--fail-if", "step_time > +5%")
	if code != exitcode.Regression {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"Slower: step time", "verdict unchanged: cpu-compute-bound", "Operators, per step", "gate FAIL step_time > +5%"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### bottleneck diff", "**Slower: step time", "| `step_time > +5%` | **FAIL**", "| `aten::mm`"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("markdown lacks %q:\n%s", want, b)
		}
	}
	if len(b) > 65536 {
		t.Errorf("markdown is %d bytes, over a PR comment's limit", len(b))
	}
}

func TestBadInput(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	code, _, errOut := run(t, missing, mlp("base"))
	if code != exitcode.Failed || !strings.Contains(errOut, missing) {
		t.Errorf("missing input: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = run(t, mlp("base"), mlp("same"), "--fail-if", "step_time >> 5")
	if code != exitcode.Usage || !strings.Contains(errOut, "step_time >> 5") {
		t.Errorf("bad rule: exit %d, stderr %q", code, errOut)
	}
	garbage := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(garbage, []byte("{\"traceEvents\": [ {\"ph\": \"X\", \"na"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, garbage, mlp("base"))
	if code == exitcode.OK || !strings.Contains(errOut+"", "bad.json") {
		t.Errorf("damaged trace: exit %d, stderr %q", code, errOut)
	}
}

// trace is a one-step trace whose kernel has name and runs dur µs.
func trace(t *testing.T, name string, dur int) string {
	t.Helper()
	b, _ := json.Marshal(name)
	content := `{"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 50, "args": {"External id": 1}},
 {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5, "args": {"External id": 1, "correlation": 9}},
 {"ph": "X", "cat": "kernel", "name": ` + string(b) + `, "pid": 0, "tid": 7, "ts": 30, "dur": ` + fmt.Sprint(dur) + `, "args": {"device": 0, "stream": 7, "correlation": 9}}
]}`
	p := filepath.Join(t.TempDir(), "t.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A trace cut off mid-write is compared from what could be read, with a
// warning naming the file and the byte, and exit status 3.
func TestTruncatedTrace(t *testing.T) {
	whole := trace(t, "k", 100)
	b, err := os.ReadFile(whole)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.json")
	if err := os.WriteFile(cut, b[:len(b)-40], 0o644); err != nil {
		t.Fatal(err)
	}
	r, code := compare(t, whole, cut)
	if code != exitcode.Partial {
		t.Errorf("exit %d, want %d", code, exitcode.Partial)
	}
	if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "cut.json was read with problems") || !strings.Contains(w, "at byte") {
		t.Errorf("warnings %q", r.Warnings)
	}
}

// Names from traces are escaped in every format.
func TestNamesEscaped(t *testing.T) {
	evil := "gemm|<b>*x*\x1b[31m`"
	base, next := trace(t, "plain_kernel", 100), trace(t, evil, 600)
	for _, format := range [][]string{nil, {"--markdown", "-"}} {
		_, out, _ := run(t, append([]string{base, next}, format...)...)
		if strings.Contains(out, "\x1b") {
			t.Errorf("%v: raw escape character in the output:\n%q", format, out)
		}
		if !strings.Contains(out, "gemm") {
			t.Errorf("%v: the new kernel is not listed:\n%s", format, out)
		}
		if format != nil && strings.Contains(out, "gemm|") {
			t.Errorf("markdown: unescaped | in a table cell:\n%s", out)
		}
	}
}

// num_workers 0 -> 2: faster, the DataLoader named as the cause, the
// verdict change reported and gated.
func TestDataLoaderWorkersVerdictChange(t *testing.T) {
	base := filepath.Join(testutil.RepoRoot(), "testdata", "diff", "loader", "base")
	next := filepath.Join(testutil.RepoRoot(), "testdata", "diff", "loader", "workers2")
	r, code := compare(t, base, next, "--fail-if", "verdict changed", "--fail-if", "step_time > +5%")
	if code != exitcode.Regression {
		t.Fatalf("exit %d, want %d (verdict changed)", code, exitcode.Regression)
	}
	h := r.Headline
	if !h.Significant || h.DeltaPct > -20 || h.ThroughputPct < 20 {
		t.Errorf("headline %+v: want significantly faster", h)
	}
	if !h.VerdictChanged || r.Base.Verdict != "input-bound" || r.New.Verdict != "cpu-compute-bound" {
		t.Errorf("verdicts %q -> %q (changed %v)", r.Base.Verdict, r.New.Verdict, h.VerdictChanged)
	}
	// The line that loaded the samples left the main thread (the
	// workers run it), then the DataLoader category.
	if len(h.Causes) != 2 || !strings.Contains(h.Causes[0], "loader_train.py:") || !strings.Contains(h.Causes[0], "gone") ||
		!strings.Contains(h.Causes[1], "DataLoader") {
		t.Errorf("causes %q: want the dataset's line gone, then the DataLoader", h.Causes)
	}
	if r.Breakdown[0].Category != "DataLoader" || r.Breakdown[0].DeltaUs >= 0 {
		t.Errorf("largest breakdown change %+v: want DataLoader time down", r.Breakdown[0])
	}
	for _, g := range r.Gate {
		if g.Failed != (g.Rule == "verdict changed") {
			t.Errorf("gate %+v: only the verdict rule should fail (the step got faster)", g)
		}
	}
}

// A run compared with itself, over the real trace corpus: no change, no
// listed kernel, operator or other change, and the gate stays silent.
func TestSameInputSilentOnCorpus(t *testing.T) {
	dir := testutil.Traces(t)
	for _, sub := range []string{
		"hta/amd_trace", "hta/call_stack", "hta/cpu_only", "hta/critical_path", "hta/cupti_profiler",
		"hta/distributed_info_unavailable", "hta/mtia_inference_trace", "hta/nccl_parser_config",
		"hta/ns_resolution_trace", "hta/trace_compare", "hta/trace_filter", "hta/triton_example",
		"tracelens/h100", "tracelens/mi210", "tracelens/torch_compile_triton", "tracelens/vllm_decode_full",
	} {
		t.Run(sub, func(t *testing.T) {
			p := filepath.Join(dir, sub)
			r, code := compare(t, p, p, "--fail-if", "step_time > +1%", "--fail-if", "verdict changed", "--fail-if", "kernel_time > +1%")
			if code != exitcode.OK && code != exitcode.Partial {
				t.Errorf("exit %d, gate %+v", code, r.Gate)
			}
			if r.Headline.Significant || r.Headline.DeltaPct != 0 || r.Headline.Cause != "" || !strings.HasPrefix(r.Headline.Summary, "No significant change") {
				t.Errorf("headline %+v", r.Headline)
			}
			if len(r.Kernels)+len(r.Ops)+len(r.Changes) > 0 {
				t.Errorf("listed for identical input: kernels %+v ops %+v changes %+v", r.Kernels, r.Ops, r.Changes)
			}
			for _, w := range r.Warnings {
				if strings.Contains(w, "different devices") || strings.Contains(w, "same work") {
					t.Errorf("warning %q", w)
				}
			}
		})
	}
}

func TestHTMLPage(t *testing.T) {
	page := filepath.Join(t.TempDir(), "diff.html")
	if code, _, errOut := run(t, mlp("base"), mlp("wide"), "--html", page); code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	for _, want := range []string{"Content-Security-Policy", "Slower: step time", "<polyline", "Where the step time went", "aten::mm", "Operators (per step)",
		"Diff flame graph: Op call stacks", "Diff flame graph: Python stacks", "<title>aten::mm\nbase "} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(html, "<polyline"); n != 2 {
		t.Errorf("%d step-time lines, want one per run", n)
	}
	// A trace's names cannot inject markup.
	evil := filepath.Join(t.TempDir(), "evil.html")
	run(t, trace(t, "plain", 100), trace(t, "k<script>alert(1)</script>", 500), "--html", evil)
	b, err = os.ReadFile(evil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "<script>") || !strings.Contains(string(b), "&lt;script&gt;") {
		t.Errorf("kernel name not escaped in the page:\n%s", b)
	}
	// The kernel is a frame of the op flame graph: its hover text is escaped too.
	if !strings.Contains(string(b), "<title>k&lt;script&gt;alert(1)&lt;/script&gt;\nbase 0") {
		t.Errorf("the flame graph lacks the escaped new kernel frame:\n%s", b)
	}
}

// Two-rank run directories (torchrun): both ranks' traces and agent step
// times are read; the launcher's random rendezvous port is no
// environment difference.
func TestTwoRankRunDirectories(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "diff", "ddp")
	r, code := compare(t, filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	if code != exitcode.OK {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []diff.SideSummary{r.Base, r.New} {
		if s.Traces != 2 || s.Kind != "run directory" || s.Steps < 10 || !strings.HasPrefix(s.StepSource, "agent") {
			t.Errorf("side %+v: want two traces and the agent's step times", s)
		}
	}
	for _, e := range r.Env {
		if strings.Contains(e.Key, "MASTER_PORT") {
			t.Errorf("environment difference %+v", e)
		}
	}
	if _, ok := r.Metrics["comm_time"]; !ok {
		t.Error("communication time not measured for a two-rank run")
	}
}

// flames loads base and new and returns the comparison's diff flame
// graphs by title prefix ("Op", "Python").
func flames(t *testing.T, base, next string) map[string]*diff.FlameDiff {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	b, _, err := diff.Load(ios, base)
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := diff.Load(ios, next)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*diff.FlameDiff{}
	for _, f := range diff.Compare(b, n, diff.Options{}).Flames {
		out[strings.Fields(f.Title)[0]] = f
	}
	if out["Op"] == nil || out["Python"] == nil {
		t.Fatalf("flames %v: want op and Python stacks", out)
	}
	return out
}

// The planted matmul change: the diff flame marks aten::mm (under its
// backward op) and the Python frame of the linear layer as grown, and
// nothing as shrunk.
func TestDiffFlameMarksGrownMatmul(t *testing.T) {
	for kind, f := range flames(t, mlp("base"), mlp("wide")) {
		grown := map[string]bool{}
		f.Walk(func(n *diff.FlameNode, _ int) {
			if f.Changed(n) {
				if n.DeltaNs() < 0 {
					t.Errorf("%s: %q shrank by %.0fns per step", kind, n.Name, n.DeltaNs())
				}
				grown[n.Name] = true
			}
		})
		want := map[string]string{"Op": "aten::mm", "Python": "Linear.forward (torch/nn/modules/linear.py:134)"}[kind]
		if !grown[want] {
			t.Errorf("%s: %q not marked as grown; grown: %v", kind, want, grown)
		}
	}
}

// The same program run twice: no frame changes beyond the noise.
func TestDiffFlameSilentForIdenticalRuns(t *testing.T) {
	for kind, f := range flames(t, mlp("base"), mlp("same")) {
		nodes := 0
		f.Walk(func(n *diff.FlameNode, _ int) {
			nodes++
			if f.Changed(n) {
				t.Errorf("%s: %q marked as changed: base %.0fns new %.0fns per step (noise %.0fns)", kind, n.Name, n.BaseNs, n.NewNs, f.NoiseNs)
			}
		})
		if nodes < 5 {
			t.Errorf("%s: only %d frames: the test would pass on an empty graph", kind, nodes)
		}
	}
}
