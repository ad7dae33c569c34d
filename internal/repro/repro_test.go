package repro

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// op is one cpu_op of a test trace: name, start and duration in µs, and
// its recorded inputs (nil: none recorded).
type op struct {
	name       string
	ts, dur    float64
	dims       any
	types      any
	strides    any
	concrete   any
	kernelDur  float64 // >0: it launches one kernel of this many µs
	kernelName string
}

var mmShapes = op{dims: [][]int{{64, 32}, {32, 16}}, types: []string{"float", "float"}, strides: [][]int{{32, 1}, {16, 1}}, concrete: []string{"", ""}}

func with(o op, name string, ts, dur float64) op {
	o.name, o.ts, o.dur = name, ts, dur
	return o
}

// writeTrace writes a Kineto trace of ops (and their kernels, on device
// 0 named device) to dir/name and returns its path.
func writeTrace(t *testing.T, dir, name, device string, ops []op) string {
	t.Helper()
	var events []map[string]any
	corr := 100
	for i, o := range ops {
		args := map[string]any{"External id": i + 1}
		if o.dims != nil {
			args["Input Dims"], args["Input type"], args["Input Strides"], args["Concrete Inputs"] = o.dims, o.types, o.strides, o.concrete
		}
		events = append(events, map[string]any{"ph": "X", "cat": "cpu_op", "name": o.name, "pid": 1, "tid": 1, "ts": o.ts, "dur": o.dur, "args": args})
		if o.kernelDur > 0 {
			corr++
			events = append(events,
				map[string]any{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": o.ts + 1, "dur": 1, "args": map[string]any{"correlation": corr, "External id": i + 1}},
				map[string]any{"ph": "X", "cat": "kernel", "name": "kernel_" + o.name[strings.Index(o.name, ":")+2:], "pid": 0, "tid": 7, "ts": o.ts + 5, "dur": o.kernelDur,
					"args": map[string]any{"device": 0, "stream": 7, "correlation": corr, "External id": i + 1}})
		}
	}
	doc := map[string]any{"schemaVersion": 1, "traceEvents": events}
	if device != "" {
		doc["deviceProperties"] = []map[string]any{{"id": 0, "name": device}}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, path string) *trace.Trace {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	res, _, err := driver.Load(ios, []string{path}, false)
	if err != nil || len(res.Traces) != 1 {
		t.Fatalf("load %s: %v %v", path, err, res.Failures)
	}
	return res.Traces[0]
}

func ops(scripts []Script) []string {
	var names []string
	for _, s := range scripts {
		names = append(names, s.Op)
	}
	return names
}

func TestTopByHostSelfTime(t *testing.T) {
	p := writeTrace(t, t.TempDir(), "cpu.json", "", []op{
		with(mmShapes, "aten::mm", 0, 300),
		with(op{dims: [][]int{{64, 16}}, types: []string{"float"}, strides: [][]int{{16, 1}}, concrete: []string{""}}, "aten::relu", 400, 500),
		with(op{dims: [][]int{{64, 16}, {64, 16}, {}}, types: []string{"float", "float", "Scalar"}, strides: [][]int{{16, 1}, {16, 1}, {}}, concrete: []string{"", "", "1"}}, "aten::add", 1000, 100),
	})
	tr := load(t, p)
	got, err := Generate(tr, Settings{}, Options{Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(ops(got), " "); g != "aten::relu aten::mm" {
		t.Fatalf("--top 2 wrote %q, want the two hottest by host self time, aten::relu aten::mm", g)
	}
	if got[0].FileName != "1_relu.py" || got[0].Device != "cpu" || got[0].TraceUs != 500 || got[0].TimeKind != "host" {
		t.Errorf("relu script: %+v", got[0])
	}
	all, _ := Generate(tr, Settings{}, Options{Top: 10})
	if len(all) != 3 {
		t.Errorf("--top 10 on 3 ops wrote %v", ops(all))
	}
	src := string(got[1].Source)
	for _, want := range []string{"tensor([64, 32], [32, 1], 'float', device)", "FLOPS = 65536", "VARIANTS = ['tf32', 'autocast_bf16', 'autocast_fp16']"} {
		if !strings.Contains(src, want) {
			t.Errorf("mm script lacks %q", want)
		}
	}
	// The pointwise op gets no variants and no FLOPs; add's alpha is kept.
	add, _ := Generate(tr, Settings{}, Options{Op: "aten::add"})
	for _, want := range []string{"VARIANTS = []", "FLOPS = None", "        1,\n"} {
		if !strings.Contains(string(add[0].Source), want) {
			t.Errorf("add script lacks %q:\n%s", want, add[0].Source)
		}
	}
}

func TestOpSelectsByName(t *testing.T) {
	// aten::mm inside aten::matmul: --top writes matmul (the call the
	// program made) once; --op aten::mm writes mm itself.
	p := writeTrace(t, t.TempDir(), "nested.json", "", []op{
		with(mmShapes, "aten::matmul", 0, 1000),
		with(mmShapes, "aten::mm", 10, 980),
		with(op{dims: [][]int{{64, 16}}, types: []string{"float"}, strides: [][]int{{16, 1}}, concrete: []string{""}}, "aten::relu", 2000, 50),
	})
	tr := load(t, p)
	top, _ := Generate(tr, Settings{}, Options{Top: 3})
	if g := strings.Join(ops(top), " "); g != "aten::matmul aten::relu" {
		t.Errorf("--top 3 wrote %q, want aten::matmul (holding the mm) and aten::relu", g)
	}
	one, err := Generate(tr, Settings{}, Options{Op: "aten::mm"})
	if err != nil || len(one) != 1 || one[0].Op != "aten::mm" || one[0].TraceUs != 980 {
		t.Fatalf("--op aten::mm: %v %+v", err, one)
	}
	if _, err := Generate(tr, Settings{}, Options{Op: "aten::bmm"}); err == nil || !strings.Contains(err.Error(), "nested.json") || !strings.Contains(err.Error(), "'aten::bmm'") {
		t.Errorf("--op of an op not in the trace: %v, want an error naming trace and op", err)
	}
}

func TestOpWithoutShapes(t *testing.T) {
	dir := t.TempDir()
	p := writeTrace(t, dir, "noshapes.json", "", []op{
		{name: "aten::mm", ts: 0, dur: 900},
		with(op{dims: [][]int{{64, 16}}, types: []string{"float"}, strides: [][]int{{16, 1}}, concrete: []string{""}}, "aten::relu", 1000, 100),
	})
	out := filepath.Join(dir, "out")
	w, err := WriteDir(iostreams.System(), p, out, Options{Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Scripts) != 2 || w.Failed() != 1 {
		t.Fatalf("scripts %+v", w.Scripts)
	}
	e := w.Scripts[0].Err
	if e == nil || !strings.Contains(e.Error(), p) || !strings.Contains(e.Error(), "'aten::mm'") || !strings.Contains(e.Error(), "no recorded input shapes") {
		t.Errorf("op without shapes: error %v, want one naming the trace, the op and the missing shapes", e)
	}
	if _, err := os.Stat(filepath.Join(out, "2_relu.py")); err != nil {
		t.Errorf("the op with shapes was not written: %v", err)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("wrote %d files, want only relu's", len(entries))
	}
}

// hostile is trace text that would run code if it reached the script
// unquoted.
const hostile = "x'\nimport os; os._exit(7)\n#\"\\"

func TestHostileNamesStayQuoted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run"+hostile)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := writeTrace(t, dir, "t"+strings.ReplaceAll(hostile, "/", "")+".json", "", []op{
		with(mmShapes, "aten::mm"+hostile, 0, 5000),
		with(op{dims: [][]int{{4}, {}}, types: []string{"float", "Scalar"}, strides: [][]int{{1}, {}}, concrete: []string{"", "1); import os; os._exit(7)"}}, "aten::add", 6000, 4000),
		with(op{dims: [][]int{{4}}, types: []string{"float'); os._exit(7); ('"}, strides: [][]int{{1}}, concrete: []string{""}}, "aten::neg", 11000, 3000),
		with(mmShapes, "aten::mm", 15000, 100),
	})
	tr := load(t, p)
	got, err := Generate(tr, Settings{}, Options{Top: 5})
	if err != nil {
		t.Fatal(err)
	}
	// The hostile op name is no op name: skipped; the hostile inputs are
	// refused; the plain mm is written, with the hostile path quoted.
	if g := strings.Join(ops(got), " "); g != "aten::add aten::neg aten::mm" {
		t.Fatalf("wrote %q", g)
	}
	if got[0].Err == nil || got[1].Err == nil {
		t.Errorf("hostile inputs were not refused: %v / %v", got[0].Err, got[1].Err)
	}
	if _, err := Generate(tr, Settings{}, Options{Op: "aten::mm" + hostile}); err != nil {
		t.Errorf("--op of the hostile name: %v, want a script-less result", err)
	} else if s, _ := Generate(tr, Settings{}, Options{Op: "aten::mm" + hostile}); s[0].Err == nil || s[0].Source != nil {
		t.Errorf("--op of the hostile name wrote a script")
	}
	src := string(got[2].Source)
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(line, "import os") || strings.HasPrefix(line, "#\"") {
			t.Fatalf("hostile text made a line of its own:\n%s", src)
		}
	}
	if !strings.Contains(src, "# trace:  "+pyStr(p)+"\n") {
		t.Errorf("the trace path is not quoted in the header")
	}
	py := os.Getenv("BOTTLENECK_TEST_PYTHON")
	if py == "" {
		t.Skip("BOTTLENECK_TEST_PYTHON not set: the script's parse is not checked")
	}
	// The script parses, and its statements before the inputs are the
	// header's, none from the trace.
	check := `import ast, sys
tree = ast.parse(open(sys.argv[1]).read())
names = [t.id for n in tree.body if isinstance(n, ast.Assign) for t in (n.targets[0].elts if isinstance(n.targets[0], ast.Tuple) else n.targets)]
print(" ".join(names[:12]))
print(repr(ast.literal_eval(sys.argv[2])))`
	f := filepath.Join(t.TempDir(), "s.py")
	os.WriteFile(f, got[2].Source, 0o644)
	out, err := exec.Command(py, "-c", check, f, pyStr(hostile)).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != "OP OP_NAMESPACE OP_NAME CONVOLUTION DEVICE TRACE_US TRACE_TIME_KIND CALLS FLOPS BYTES PEAK_DEVICE PEAK_TFLOPS" {
		t.Errorf("script statements: %s", lines[0])
	}
	// pyStr round-trips through Python's parser.
	want, _ := exec.Command(py, "-c", "import sys; print(repr(sys.argv[1]))", hostile).Output()
	if lines[1] != strings.TrimSpace(string(want)) {
		t.Errorf("pyStr(%q) parses as %s, want %s", hostile, lines[1], want)
	}
}

func TestGPUTraceByDeviceTime(t *testing.T) {
	// On a GPU trace the order is the device time: mm's kernel (800 µs)
	// over relu's (50 µs) though relu's host time is longer.
	p := writeTrace(t, t.TempDir(), "gpu.json", "NVIDIA H100 80GB HBM3", []op{
		func() op { o := with(mmShapes, "aten::mm", 0, 20); o.kernelDur = 800; return o }(),
		func() op {
			o := with(op{dims: [][]int{{64, 16}}, types: []string{"float"}, strides: [][]int{{16, 1}}, concrete: []string{""}}, "aten::relu", 100, 900)
			o.kernelDur = 50
			return o
		}(),
	})
	got, err := Generate(load(t, p), Settings{}, Options{Top: 2})
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(ops(got), " "); g != "aten::mm aten::relu" {
		t.Fatalf("GPU trace order %q, want by device time", g)
	}
	mm := got[0]
	if mm.Device != "cuda" || mm.TimeKind != "device" || mm.TraceUs != 800 {
		t.Errorf("mm: %+v", mm)
	}
	for _, want := range []string{"DEVICE = 'cuda'", "PEAK_DEVICE = 'H100 SXM'", "'fp32': 66.9", "BANDWIDTH_GBS = 3350"} {
		if !strings.Contains(string(mm.Source), want) {
			t.Errorf("mm script lacks %q", want)
		}
	}
}

func TestSettingsFromEnv(t *testing.T) {
	env, err := os.ReadFile("../../testdata/rundir/repro_cpu/env.json")
	if err != nil {
		t.Fatal(err)
	}
	s := SettingsFromEnv(env, "env.json", "rank0")
	if s.MatmulAllowTF32 == nil || *s.MatmulAllowTF32 || s.CudnnAllowTF32 == nil || !*s.CudnnAllowTF32 || s.Float32MatmulPrecise != "highest" || s.NumThreads != 2 {
		t.Errorf("settings %+v", s)
	}
	if got := (Settings{}).python(); got != "{}" {
		t.Errorf("no settings: %s", got)
	}
	bad := SettingsFromEnv(json.RawMessage(`{"processes":{"rank0":{"torch":{"flags":{"float32_matmul_precision":"x')"}}}}}`), "", "rank0")
	if bad.Float32MatmulPrecise != "" {
		t.Errorf("an unknown precision was kept: %q", bad.Float32MatmulPrecise)
	}
}

func TestPyScalar(t *testing.T) {
	for in, want := range map[string]string{"1": "1", "0.": "0.0", "-1e-05": "-1e-05", "True": "True", "inf": "float('inf')", "[1, 1]": "", "x": "", "1)": ""} {
		got, ok := pyScalar(in)
		if ok != (want != "") || got != want {
			t.Errorf("pyScalar(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	if got, ok := pyScalarList("[2, 0.5]"); !ok || got != "[2, 0.5]" {
		t.Errorf("pyScalarList: %q %v", got, ok)
	}
	if _, ok := pyScalarList("[1, os.system('x')]"); ok {
		t.Error("pyScalarList took code")
	}
}

func TestInputsWithTheMostTime(t *testing.T) {
	// aten::mm with two shapes: 3 short calls of one, 1 long call of the
	// other; the script rebuilds the long one's and says 1 of 4 calls.
	small := op{dims: [][]int{{8, 8}, {8, 8}}, types: []string{"float", "float"}, strides: [][]int{{8, 1}, {8, 1}}, concrete: []string{"", ""}}
	p := writeTrace(t, t.TempDir(), "shapes.json", "", []op{
		with(small, "aten::mm", 0, 100), with(small, "aten::mm", 200, 100), with(small, "aten::mm", 400, 100),
		with(mmShapes, "aten::mm", 600, 1000),
	})
	got, err := Generate(load(t, p), Settings{}, Options{Op: "aten::mm"})
	if err != nil {
		t.Fatal(err)
	}
	s := got[0]
	if s.Calls != 1 || s.AllCalls != 4 || s.TraceUs != 1000 || !strings.Contains(string(s.Source), "tensor([64, 32], [32, 1], 'float', device)") {
		t.Errorf("picked %d of %d calls, %.0f µs:\n%s", s.Calls, s.AllCalls, s.TraceUs, s.Source)
	}
	if !strings.Contains(string(s.Source), "# calls:  1 with these inputs, of 4 calls of the op in the trace") {
		t.Error("the header does not give the calls")
	}
}

func TestVariants(t *testing.T) {
	for op, want := range map[string]string{
		"aten::conv2d": "channels_last tf32 autocast_bf16 autocast_fp16", "aten::convolution": "channels_last tf32 autocast_bf16 autocast_fp16",
		"aten::mm": "tf32 autocast_bf16 autocast_fp16", "aten::scaled_dot_product_attention": "tf32 autocast_bf16 autocast_fp16",
		"aten::cudnn_convolution": "channels_last tf32 autocast_bf16 autocast_fp16", "aten::conv_transpose2d": "channels_last tf32 autocast_bf16 autocast_fp16",
		"aten::gelu": "", "aten::add": "", "aten::convert_element_type": "", "aten::conv_tbc": "",
	} {
		if got := strings.Join(variants(op), " "); got != want {
			t.Errorf("variants(%s) = %q, want %q", op, got, want)
		}
	}
}
