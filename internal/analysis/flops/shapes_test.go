package flops_test

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
	"github.com/bottleneck-dev/bottleneck/internal/kineto"
)

// Hand-computed FLOPs for each covered op.
func TestFromShapes(t *testing.T) {
	for _, c := range []struct {
		op                    string
		dims, types, concrete string
		want                  float64
	}{
		{"aten::mm", `[[32, 96], [96, 48]]`, `["float", "float"]`, `["", ""]`, 2 * 32 * 96 * 48},
		{"aten::addmm", `[[96], [32, 64], [64, 96], [], []]`, ``, ``, 2 * 32 * 64 * 96},
		{"aten::bmm", `[[6, 20, 30], [6, 30, 10]]`, ``, ``, 2 * 6 * 20 * 30 * 10},
		{"aten::baddbmm", `[[6, 20, 10], [6, 20, 30], [6, 30, 10], [], []]`, ``, ``, 2 * 6 * 20 * 30 * 10},
		// 3x32x32 -> 16 channels, 3x3, stride 2, pad 1: 16x16 output.
		{"aten::convolution", `[[4, 3, 32, 32], [16, 3, 3, 3], [16], [], [], [], [], [], []]`, ``, `["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]`, 2 * 4 * 16 * 16 * 16 * 3 * 9},
		// dilation 2, pad 2, groups 4 (weight [32, 4, 3, 3]): 16x16 output.
		{"aten::convolution", `[[4, 16, 16, 16], [32, 4, 3, 3], [], [], [], [], [], [], []]`, ``, `["", "", "", "[1, 1]", "[2, 2]", "[2, 2]", "False", "[0, 0]", "4"]`, 2 * 4 * 16 * 16 * 32 * 4 * 9},
		// transposed: the input's spatial size counts.
		{"aten::convolution", `[[4, 16, 16, 16], [16, 8, 4, 4], [8], [], [], [], [], [], []]`, ``, `["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"]`, 2 * 4 * 16 * 16 * 16 * 8 * 16},
		// conv1d, length 50, kernel 5: 46 outputs.
		{"aten::convolution", `[[2, 8, 50], [12, 8, 5], [12], [], [], [], [], [], []]`, ``, `["", "", "", "[1]", "[0]", "[1]", "False", "[0]", "1"]`, 2 * 2 * 46 * 12 * 8 * 5},
		// SDPA: b=2, h=4, s_q=40, s_k=50, d=16, d_v=24.
		{"aten::_scaled_dot_product_flash_attention", `[[2, 4, 40, 16], [2, 4, 50, 16], [2, 4, 50, 24], [], []]`, ``, ``, 2*8*40*16*50 + 2*8*40*50*24},
	} {
		got, ok := flops.FromShapes(c.op, flops.ParseShapes(c.dims, c.types, c.concrete))
		if !ok || got.Flops != c.want {
			t.Errorf("%s %s: %v %v, want %v", c.op, c.dims, got, ok, c.want)
		}
	}
	// Bytes: each input read once, the output written once.
	for _, c := range []struct {
		op, dims, types, concrete string
		want                      float64
	}{
		{"aten::mm", `[[32, 96], [96, 48]]`, `["float", "float"]`, ``, 4 * (32*96 + 96*48 + 32*48)},
		{"aten::addmm", `[[96], [32, 64], [64, 96], [], []]`, `["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]`, ``, 2 * (96 + 32*64 + 64*96 + 32*96)},
		// transposed conv: 16x16 -> (16-1)*2 - 2 + 3 + 1 = 32x32 output, 8 channels.
		{"aten::convolution", `[[4, 16, 16, 16], [16, 8, 4, 4], [8], [], [], [], [], [], []]`, `["float", "float", "float"]`, `["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[0, 0]", "1"]`, 4 * (4*16*16*16 + 16*8*16 + 8 + 4*8*32*32)},
		{"aten::_scaled_dot_product_flash_attention", `[[2, 4, 40, 16], [2, 4, 50, 16], [2, 4, 50, 24], [], []]`, `["c10::Half", "c10::Half", "c10::Half"]`, ``, 2 * (2*4*40*16 + 2*4*50*16 + 2*4*50*24 + 2*4*40*24)},
		{"aten::mm", `[[32, 96], [96, 48]]`, `["SomeType", "SomeType"]`, ``, 0},
	} {
		got, ok := flops.FromShapes(c.op, flops.ParseShapes(c.dims, c.types, c.concrete))
		if !ok || got.Bytes != c.want {
			t.Errorf("%s %s bytes: %v %v, want %v", c.op, c.dims, got.Bytes, ok, c.want)
		}
	}
	// Not covered, or shapes that do not fit: no FLOPs.
	for _, c := range []struct{ op, dims string }{
		{"aten::linear", `[[32, 64], [96, 64], [96]]`},
		{"aten::mm", `[[32, 96]]`},
		{"aten::mm", `not json`},
		{"aten::convolution", `[[4, 3, 32, 32], [16, 3, 3]]`},
	} {
		if f, ok := flops.FromShapes(c.op, flops.ParseShapes(c.dims, "", "")); ok {
			t.Errorf("%s %s: %v", c.op, c.dims, f)
		}
	}
}

// A real CPU run (torch 2.15, record_shapes=True, no "flops" args; see
// testdata/shapes/gen.py): the FLOPs from shapes agree, per op, with
// torch.utils.flop_counter.FlopCounterMode on the same step within 1%.
func TestShapesAgreeWithFlopCounter(t *testing.T) {
	tr, err := kineto.ReadFile("testdata/shapes/cpu_shapes.json.gz", kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/shapes/flop_counter.json")
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Total float64            `json:"total"`
		ByOp  map[string]float64 `json:"by_op"`
	}
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	r := flops.Compute(tr)
	if !r.Available || r.ShapeCalls == 0 {
		t.Fatalf("no FLOPs from shapes: %+v", r)
	}
	got := map[string]float64{}
	for _, o := range r.Ops {
		got[strings.Replace(o.Name, "::", ".", 1)] += o.Flops
		if o.Dtype != "fp32" {
			t.Errorf("%s: dtype %q", o.Name, o.Dtype)
		}
	}
	for op, w := range want.ByOp {
		if math.Abs(got[op]-w) > 0.01*w {
			t.Errorf("%s: %v FLOPs from shapes, flop_counter %v", op, got[op], w)
		}
	}
	if len(got) != len(want.ByOp) {
		t.Errorf("ops %v, flop_counter %v", got, want.ByOp)
	}
	if math.Abs(r.Flops-want.Total) > 0.01*want.Total || r.CPUOnlyFlops != r.Flops {
		t.Errorf("total %v (cpu only %v), flop_counter %v", r.Flops, r.CPUOnlyFlops, want.Total)
	}
}

// An H100 running a bf16 mm from shapes only: 4096x4096x4096 (137.4
// GFLOP, 100.7 MB) in 200 µs is 687.2 TFLOP/s; intensity 1365 FLOP/byte
// is above the ridge (989.4e12 / 3.35e12 = 295), so the roof is the peak:
// 69.5%. A 4096x4096x1 mm (GEMV-like) of 33.6 MFLOP and 33.6 MB in 20 µs
// is memory bound: roof 1 x 3350 GB/s = 3.35 TFLOP/s, reached 1.68: 50%.
const rooflineFixture = `{"deviceProperties":[{"id":0,"name":"NVIDIA H100 80GB HBM3"}],"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":100,"args":{"Input Dims":[[4096,4096],[4096,4096]],"Input type":["c10::BFloat16","c10::BFloat16"]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":10,"args":{"correlation":4}},
{"ph":"X","cat":"kernel","name":"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN","pid":0,"tid":7,"ts":200,"dur":200,"args":{"correlation":4,"device":0,"stream":7}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1000,"dur":100,"args":{"Input Dims":[[4096,4096],[4096,1]],"Input type":["c10::BFloat16","c10::BFloat16"]}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1020,"dur":10,"args":{"correlation":5}},
{"ph":"X","cat":"kernel","name":"gemv2T_kernel","pid":0,"tid":7,"ts":1200,"dur":20,"args":{"correlation":5,"device":0,"stream":7}}
]}`

func TestRoofline(t *testing.T) {
	tr, err := kineto.Read(strings.NewReader(rooflineFixture), "roofline.json", kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := flops.Compute(tr)
	if r.ShapeCalls != 2 || len(r.Ops) != 1 || r.BandwidthGBs != 3350 {
		t.Fatalf("%+v", r)
	}
	o := r.Ops[0]
	big, small := 2*4096.0*4096*4096, 2*4096.0*4096
	if o.Flops != big+small || o.Bytes != 2*(3*4096*4096)+2*(4096*4096+2*4096) {
		t.Errorf("flops %v bytes %v", o.Flops, o.Bytes)
	}
	// Both calls in one row: intensity of the sum, compute bound.
	if o.Bound != "compute" || o.RoofTFLOPS != 989.4 || math.Abs(o.RoofPct-o.TFLOPS*100/989.4) > 1e-9 {
		t.Errorf("row %+v", o)
	}
	// The GEMV alone: memory bound.
	gemv := `{"deviceProperties":[{"id":0,"name":"NVIDIA H100 80GB HBM3"}],"traceEvents":[` + strings.SplitN(rooflineFixture, "\n", 5)[4]
	tr, err = kineto.Read(strings.NewReader(gemv), "gemv.json", kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o = flops.Compute(tr).Ops[0]
	if o.Bound != "memory" || math.Abs(o.RoofTFLOPS-o.Intensity*3.35) > 1e-9 || math.Abs(o.RoofPct-50.1) > 0.1 {
		t.Errorf("gemv %+v", o)
	}
}
