package input_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/input"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

func TestGolden(t *testing.T) {
	for name, rel := range map[string]string{
		"dlrm_worker0":  "param/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json.gz",
		"trace_diff":    "hta/trace_diff/control/control.json.gz",
		"tb_gpu_input":  "tb_plugin_unit/gpu_metrics_input.json",
		"ns_resolution": "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
	} {
		t.Run(name, func(t *testing.T) {
			r := input.Compute(tracetest.Load(t, rel))
			testutil.CompareResult(t, name, r, report.WriteInput)
		})
	}
}

// One step of 1000 us: the DataLoader runs 0-300 us (nested __next__ calls
// counted once); a kernel runs 200-500 us, so the GPU is idle for 200 of
// the 300 us.
const dlFixture = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#7","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":1,"tid":1,"ts":0,"dur":300},
{"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":1,"tid":1,"ts":10,"dur":100},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":150,"dur":10,"args":{"correlation":5}},
{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":200,"dur":300,"args":{"correlation":5,"device":0,"stream":7}}
]}`

func TestFixture(t *testing.T) {
	r := input.Compute(tracetest.ReadString(t, dlFixture))
	if len(r.Steps) != 1 || r.Steps[0].Step != 7 {
		t.Fatalf("steps: %+v", r.Steps)
	}
	s := r.Steps[0]
	if s.Calls != 2 || s.DataLoaderUs != 300 || s.GPUIdleUs != 200 || s.StepUs != 1000 {
		t.Errorf("step: %+v", s)
	}
	if s.DataLoaderPct != 30 || s.GPUIdlePct < 66.6 || s.GPUIdlePct > 66.7 {
		t.Errorf("pct: %+v", s)
	}
}

func TestNoSteps(t *testing.T) {
	r := input.Compute(tracetest.ReadString(t, `{"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":10}]}`))
	if r.Calls != 0 || !r.SyntheticStep || len(r.Steps) != 1 || r.Steps[0].DataLoaderUs != 0 {
		t.Errorf("%+v", r)
	}
	var b bytes.Buffer
	report.WriteInput(&b, r)
	if !strings.Contains(b.String(), "no DataLoader") {
		t.Error(b.String())
	}
}
