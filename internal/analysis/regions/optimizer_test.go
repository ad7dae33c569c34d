package regions

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

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
	r := Compute(tracetest.ReadString(t, fixture))
	want := map[string][2]bool{
		"Optimizer.step#LBFGS.step": {true, false},
		"Optimizer.step#AdamW.step": {false, true},
		"Optimizer.step#SGD.step":   {false, false}, // the linear after it is not inside
	}
	for _, rg := range r.Regions {
		if w, ok := want[rg.Name]; ok {
			if rg.Closure != w[0] || rg.MultiTensor != w[1] {
				t.Errorf("%s: closure %v multi-tensor %v, want %v %v", rg.Name, rg.Closure, rg.MultiTensor, w[0], w[1])
			}
			delete(want, rg.Name)
		}
	}
	if len(want) > 0 {
		t.Errorf("regions missing: %v", want)
	}
}
