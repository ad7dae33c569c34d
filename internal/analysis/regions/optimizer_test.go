package regions

import (
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// regionsOf computes the regions of a fixture trace by name, failing the
// test unless every name in want is one.
func regionsOf(t *testing.T, fixture string, want ...string) map[string]Region {
	t.Helper()
	out := map[string]Region{}
	for _, rg := range Compute(tracetest.ReadString(t, fixture)).Regions {
		out[rg.Name] = rg
	}
	for _, name := range want {
		if _, ok := out[name]; !ok {
			t.Fatalf("no region %s", name)
		}
	}
	return out
}

// An optimizer step that runs the model inside (a closure) or whose update
// already uses foreach ops is marked; a plain per-parameter update is not.
func TestOptimizerInside(t *testing.T) {
	const fixture = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#LBFGS.step","pid":1,"tid":1,"ts":10,"dur":300},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":20,"dur":50},
{"ph":"X","cat":"cpu_op","name":"aten::add_","pid":1,"tid":1,"ts":100,"dur":10},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#AdamW.step","pid":1,"tid":1,"ts":400,"dur":200},
{"ph":"X","cat":"cpu_op","name":"aten::_foreach_add_","pid":1,"tid":1,"ts":410,"dur":50},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#SGD.step","pid":1,"tid":1,"ts":700,"dur":200},
{"ph":"X","cat":"cpu_op","name":"aten::add_","pid":1,"tid":1,"ts":710,"dur":50},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":950,"dur":20}
]}`
	want := map[string][2]bool{
		"Optimizer.step#LBFGS.step": {true, false},
		"Optimizer.step#AdamW.step": {false, true},
		"Optimizer.step#SGD.step":   {false, false}, // the linear after it is not inside
	}
	got := regionsOf(t, fixture, slices.Collect(maps.Keys(want))...)
	for name, w := range want {
		if rg := got[name]; rg.Closure != w[0] || rg.MultiTensor != w[1] {
			t.Errorf("%s: closure %v multi-tensor %v, want %v %v", name, rg.Closure, rg.MultiTensor, w[0], w[1])
		}
	}
}

// With a closure, the update is the span of the ops that follow its last
// forward or backward op (sqrt 500 to addcdiv_'s end 650), when the
// backward ran on the region's thread (a CPU run); on
// another thread (the autograd engine's on a GPU) the closure's end is
// not seen and the update is not told.
func TestOptimizerClosureUpdate(t *testing.T) {
	const fixture = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":5000},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#Adam.step","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":10,"dur":100},
{"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":1,"ts":150,"dur":250},
{"ph":"X","cat":"cpu_op","name":"aten::sqrt","pid":1,"tid":1,"ts":500,"dur":60},
{"ph":"X","cat":"cpu_op","name":"aten::addcdiv_","pid":1,"tid":1,"ts":600,"dur":50},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#RMSprop.step","pid":1,"tid":1,"ts":2000,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":2010,"dur":100},
{"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":2,"ts":2150,"dur":250},
{"ph":"X","cat":"cpu_op","name":"aten::sqrt","pid":1,"tid":1,"ts":2500,"dur":60}
]}`
	want := map[string]float64{"Optimizer.step#Adam.step": 150, "Optimizer.step#RMSprop.step": 0}
	got := regionsOf(t, fixture, slices.Collect(maps.Keys(want))...)
	for name, w := range want {
		if rg := got[name]; !rg.Closure || rg.UpdateUs != w {
			t.Errorf("%s: closure %v update %.0f µs, want a closure and %.0f", name, rg.Closure, rg.UpdateUs, w)
		}
	}
}

// A closure call before the first recorded step (Adam's first, which
// builds its state and was 250 ms on a busy machine) counts in neither
// the update nor the total: both are of the recorded steps.
func TestOptimizerClosureUpdateBeforeSteps(t *testing.T) {
	const fixture = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#Adam.step","pid":1,"tid":1,"ts":0,"dur":90000},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":10,"dur":100},
{"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":1,"ts":150,"dur":250},
{"ph":"X","cat":"cpu_op","name":"aten::addcdiv_","pid":1,"tid":1,"ts":500,"dur":80000},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":100000,"dur":5000},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#Adam.step","pid":1,"tid":1,"ts":100000,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":100010,"dur":100},
{"ph":"X","cat":"cpu_op","name":"autograd::engine::evaluate_function: AddmmBackward0","pid":1,"tid":1,"ts":100150,"dur":250},
{"ph":"X","cat":"cpu_op","name":"aten::addcdiv_","pid":1,"tid":1,"ts":100500,"dur":50}
]}`
	rg := regionsOf(t, fixture, "Optimizer.step#Adam.step")["Optimizer.step#Adam.step"]
	if rg.UpdateUs != 50 || rg.TotalUs != 1000 || rg.MedianUs != 50 {
		t.Errorf("update %.0f µs, total %.0f µs, median %.0f µs: want 50, 1000 and 50 (the recorded step's call alone)", rg.UpdateUs, rg.TotalUs, rg.MedianUs)
	}
}

// A real CPU trace of optimizer.step(closure): the update holds every
// one of Adam's per-parameter addcdiv_ calls and is a part of the region.
func TestOptimizerClosureUpdateRecorded(t *testing.T) {
	py := testutil.TorchPython(t)
	path := filepath.Join(t.TempDir(), "trace.json")
	if out, err := exec.Command(py, "testdata/record_closure.py", path).CombinedOutput(); err != nil {
		t.Fatalf("recording failed: %v\n%s", err, out)
	}
	tr, err := kineto.ReadFile(path, kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var addcdiv float64
	for i := range tr.Events.Len() {
		if tr.Name(i) == "aten::addcdiv_" {
			addcdiv += float64(tr.Events.Dur[i]) / 1e3
		}
	}
	regions := Compute(tr).Regions
	i := slices.IndexFunc(regions, func(r Region) bool { return r.Name == "Optimizer.step#Adam.step" })
	if i < 0 {
		t.Fatal("no Optimizer.step#Adam.step region")
	}
	rg := regions[i]
	if !rg.Closure || addcdiv == 0 || rg.UpdateUs < addcdiv || rg.UpdateUs >= rg.TotalUs {
		t.Errorf("closure %v, update %.1f µs of %.1f µs, addcdiv_ %.1f µs: want a closure and an update holding addcdiv_ inside the region", rg.Closure, rg.UpdateUs, rg.TotalUs, addcdiv)
	}
}

// An optimizer step that outlasts its ProfilerStep ran prof.step()
// inside it (bottleneck run's step hook): the rest is the profiler's work,
// writing the trace at the window's end, not the optimizer's. Other
// annotations keep their whole time.
func TestOptimizerClippedToStep(t *testing.T) {
	const fixture = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#SGD.step","pid":1,"tid":1,"ts":800,"dur":700},
{"ph":"X","cat":"cpu_op","name":"aten::add_","pid":1,"tid":1,"ts":810,"dur":150},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1000,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"log","pid":1,"tid":1,"ts":1500,"dur":300}
]}`
	want := map[string]float64{"Optimizer.step#SGD.step": 200, "log": 300}
	got := regionsOf(t, fixture, slices.Collect(maps.Keys(want))...)
	for name, w := range want {
		if rg := got[name]; rg.TotalUs != w {
			t.Errorf("%s: %.0f µs, want %.0f", name, rg.TotalUs, w)
		}
	}
}

// An optimizer region's median instance: one slow call (a start-up
// step, a busy machine) does not move it as it moves the mean.
func TestOptimizerMedian(t *testing.T) {
	const fixture = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":3000},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#SGD.step","pid":1,"tid":1,"ts":100,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#SGD.step","pid":1,"tid":1,"ts":1200,"dur":100},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#SGD.step","pid":1,"tid":1,"ts":1400,"dur":120},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#SGD.step","pid":1,"tid":1,"ts":1600,"dur":90},
{"ph":"X","cat":"user_annotation","name":"log","pid":1,"tid":1,"ts":2000,"dur":100}
]}`
	got := regionsOf(t, fixture, "Optimizer.step#SGD.step", "log")
	if rg := got["Optimizer.step#SGD.step"]; rg.MedianUs != 110 || rg.MeanUs != 327.5 {
		t.Errorf("median %.1f µs, mean %.1f µs: want 110 and 327.5", rg.MedianUs, rg.MeanUs)
	}
	if rg := got["log"]; rg.MedianUs != 0 {
		t.Errorf("a region not an optimizer's has a median: %.1f", rg.MedianUs)
	}
}
