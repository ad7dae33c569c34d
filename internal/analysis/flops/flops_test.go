package flops_test

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

func TestGolden(t *testing.T) {
	for name, rel := range map[string]string{
		"h100_qwen": "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
	} {
		t.Run(name, func(t *testing.T) {
			r := flops.Compute(tracetest.Load(t, rel))
			testutil.CompareResult(t, name, r, report.WriteFlops)
		})
	}
}

// An A100: a bf16 addmm of 2e12 FLOP whose kernel (launched by a child op)
// runs 10 ms: 200 TFLOP/s, 64.1 % of 312. An fp32 mm without device work.
const flopsFixture = `{"deviceProperties":[{"id":0,"name":"NVIDIA A100-SXM4-80GB","totalGlobalMem":85899345920}],"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":0,"dur":100,"args":{"flops":2000000000000,"Input type":["c10::BFloat16","c10::BFloat16","c10::BFloat16","Scalar","Scalar"]}},
{"ph":"X","cat":"cpu_op","name":"aten::empty","pid":1,"tid":1,"ts":10,"dur":50},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":10,"args":{"correlation":4}},
{"ph":"X","cat":"kernel","name":"ampere_bf16_s16816gemm","pid":0,"tid":7,"ts":200,"dur":10000,"args":{"correlation":4,"device":0,"stream":7}},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":300,"dur":100,"args":{"flops":1000000,"Input type":["float","float"]}}
]}`

func TestFixture(t *testing.T) {
	r := flops.Compute(tracetest.ReadString(t, flopsFixture))
	if !r.Available || r.Device != "NVIDIA A100-SXM4-80GB" || r.DeviceUs != 10000 {
		t.Fatalf("%+v", r)
	}
	if r.TFLOPS < 199.999 || r.TFLOPS > 200.001 || r.PeakDtype != "bf16" || r.PeakTFLOPS != 312 {
		t.Errorf("total: %+v", r)
	}
	if r.CPUOnlyFlops != 1e6 || len(r.Ops) != 2 || r.Ops[0].Name != "aten::addmm" || r.Ops[0].Dtype != "bf16" || r.Ops[1].Dtype != "fp32" {
		t.Errorf("ops: %+v", r.Ops)
	}
	if p := r.Ops[0].PeakPct; p < 64.1 || p > 64.11 {
		t.Errorf("peak pct %v", p)
	}
}

func TestPeakFor(t *testing.T) {
	for name, want := range map[string]string{
		"NVIDIA H100 80GB HBM3": "H100 SXM", "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA H200": "H200",
		"NVIDIA A100-SXM4-80GB": "A100", "Tesla V100-SXM2-16GB": "V100 SXM2", "NVIDIA L4": "L4",
		"NVIDIA L40S": "", "NVIDIA A10": "A10", "AMD Instinct MI300X": "MI300X", "AMD Instinct MI250X / MI250": "MI250X",
		"AMD Instinct MI210": "MI210", "": "",
	} {
		p, ok := flops.PeakFor(name)
		if p.Name != want || ok != (want != "") {
			t.Errorf("%q: got %q", name, p.Name)
		}
	}
}

func TestNoFlops(t *testing.T) {
	r := flops.Compute(tracetest.ReadString(t, `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":10}]}`))
	if r.Available || len(r.Ops) != 0 {
		t.Errorf("%+v", r)
	}
}
