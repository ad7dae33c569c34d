package regions_test

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

func TestGolden(t *testing.T) {
	for name, rel := range map[string]string{
		"h100_qwen":  "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
		"trace_diff": "hta/trace_diff/control/control.json.gz",
		"simple_add": "hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz",
	} {
		t.Run(name, func(t *testing.T) {
			r := regions.Compute(tracetest.Load(t, rel))
			testutil.CompareResult(t, name, r, report.WriteRegions)
			// Main-thread self times and (unannotated) add up to wall time.
			var sum float64
			for _, g := range r.Regions {
				if g.MainThread {
					sum += g.SelfUs
				}
			}
			if d := sum - r.WallUs; d > 0.01 || d < -0.01 {
				t.Errorf("self times sum to %.3f us, wall %.3f us", sum, r.WallUs)
			}
		})
	}
}

// Step of 1000 us: "outer" 100-700 holds "inner" 200-400 twice-called
// region and an op; a worker thread runs "fetch". Metadata "run" is shown,
// profiler flags are not.
const nested = `{"with_stack":true,"run":{"lr":0.1},"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"outer","pid":1,"tid":1,"ts":100,"dur":600},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":150,"dur":300},
{"ph":"X","cat":"user_annotation","name":"inner","pid":1,"tid":1,"ts":200,"dur":100},
{"ph":"X","cat":"user_annotation","name":"inner","pid":1,"tid":1,"ts":500,"dur":100},
{"ph":"X","cat":"python_function","name":"nn.Module: Net_0","pid":1,"tid":1,"ts":120,"dur":500},
{"ph":"X","cat":"python_function","name":"nn.Module: Linear_0","pid":1,"tid":1,"ts":130,"dur":400},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":210,"dur":10,"args":{"correlation":9}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":230,"dur":50,"args":{"correlation":9,"device":0,"stream":7}},
{"ph":"X","cat":"user_annotation","name":"fetch","pid":1,"tid":2,"ts":0,"dur":900}
]}`

func TestNested(t *testing.T) {
	r := regions.Compute(tracetest.ReadString(t, nested))
	if r.WallUs != 1000 {
		t.Fatalf("wall %v", r.WallUs)
	}
	got := map[string]regions.Region{}
	for _, g := range r.Regions {
		got[g.Name] = g
	}
	if o := got["outer"]; o.Calls != 1 || o.TotalUs != 600 || o.SelfUs != 400 || !o.MainThread {
		t.Errorf("outer %+v", o)
	}
	if in := got["inner"]; in.Calls != 2 || in.TotalUs != 200 || in.SelfUs != 200 || in.MeanUs != 100 {
		t.Errorf("inner %+v", in)
	}
	if u := got[regions.Unannotated]; u.SelfUs != 400 {
		t.Errorf("unannotated %+v", u)
	}
	if f := got["fetch"]; f.MainThread || f.SelfUs != 900 {
		t.Errorf("fetch %+v", f)
	}
	if _, ok := got["ProfilerStep#3"]; ok {
		t.Error("the step is a region")
	}
	if len(r.Modules) != 2 || r.Modules[0].Path != "Net_0" || r.Modules[1].Path != "Net_0.Linear_0" ||
		r.Modules[1].DeviceUs != 50 || r.Modules[0].DeviceUs != 50 || r.Modules[0].HostUs != 500 || r.Modules[1].Depth != 1 {
		t.Errorf("modules %+v", r.Modules)
	}
	if len(r.Metadata) != 1 || r.Metadata[0].Key != "run" || r.Metadata[0].Value != `{"lr":0.1}` {
		t.Errorf("metadata %+v", r.Metadata)
	}
}

func TestNoAnnotations(t *testing.T) {
	r := regions.Compute(tracetest.ReadString(t, `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":10}]}`))
	if len(r.Regions) != 1 || r.Regions[0].Name != regions.Unannotated || r.Regions[0].SelfUs != 10 || len(r.Modules) != 0 {
		t.Errorf("%+v", r)
	}
}
