package syncs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// A sync inside a step: aten::item -> aten::_local_scalar_dense ->
// cudaMemcpyAsync to pageable memory, then a cudaStreamSynchronize under
// python frames, a non-blocking cudaStreamWaitEvent, and a cuda_sync event.
const syncInStep = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"python_function","name":"train.py(10): step","pid":1,"tid":1,"ts":5,"dur":900},
{"ph":"X","cat":"cpu_op","name":"aten::item","pid":1,"tid":1,"ts":10,"dur":300,"args":{"External id":1}},
{"ph":"X","cat":"cpu_op","name":"aten::_local_scalar_dense","pid":1,"tid":1,"ts":11,"dur":298,"args":{"External id":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":1,"tid":1,"ts":12,"dur":290.5,"args":{"External id":2,"correlation":7}},
{"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pageable)","pid":0,"tid":7,"ts":290,"dur":5,"args":{"correlation":7,"bytes":4}},
{"ph":"X","cat":"cpu_op","name":"aten::nonzero","pid":1,"tid":1,"ts":400,"dur":200,"args":{"External id":3}},
{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":410,"dur":150,"args":{"External id":3,"correlation":8}},
{"ph":"X","cat":"cuda_runtime","name":"cudaStreamWaitEvent","pid":1,"tid":1,"ts":700,"dur":3,"args":{"correlation":9}},
{"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":7,"ts":420,"dur":140,"args":{"correlation":8}}
]}`

func TestSyncInStep(t *testing.T) {
	r := Compute(tracetest.ReadString(t, syncInStep), Options{})
	if r.Count != 2 {
		t.Fatalf("count %d, want 2 (%+v)", r.Count, r.ByCall)
	}
	if r.BlockedUs != 440.5 {
		t.Errorf("blocked %.3f µs, want 440.5", r.BlockedUs)
	}
	if len(r.PerStep) != 1 || r.PerStep[0].Count != 2 || r.PerStep[0].BlockedUs != 440.5 {
		t.Errorf("per step %+v", r.PerStep)
	}
	if r.DeviceSyncs["Stream Sync"] != 1 {
		t.Errorf("device syncs %v", r.DeviceSyncs)
	}
	c := r.Causes[0]
	if c.Op != "aten::_local_scalar_dense" || c.TopOp != "aten::item" || c.Call != "cudaMemcpyAsync" {
		t.Errorf("top cause %+v", c)
	}
	if len(c.Stack) != 1 || c.Stack[0] != "train.py(10): step" {
		t.Errorf("stack %q", c.Stack)
	}
	if r.Causes[1].Op != "aten::nonzero" || r.Causes[1].Call != "cudaStreamSynchronize" {
		t.Errorf("second cause %+v", r.Causes[1])
	}
}

func TestNoGPU(t *testing.T) {
	r := Compute(tracetest.ReadString(t, `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":5}]}`), Options{})
	if r.Count != 0 || len(r.Causes) != 0 {
		t.Errorf("%+v", r)
	}
}

// Causes that tie on time, op and call come in one order, every time:
// by their other fields (they are gathered in a map).
func TestTiedCausesInOneOrder(t *testing.T) {
	tr := tracetest.ReadString(t, `{"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"aten::to","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":1,"tid":1,"ts":1,"dur":90,"args":{"External id":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":2,"dur":50,"args":{"External id":1,"correlation":1}},
{"ph":"X","cat":"cpu_op","name":"aten::index","pid":1,"tid":1,"ts":200,"dur":100},
{"ph":"X","cat":"cpu_op","name":"aten::copy_","pid":1,"tid":1,"ts":201,"dur":90,"args":{"External id":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":202,"dur":50,"args":{"External id":2,"correlation":2}},
{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":10,"dur":5,"args":{"correlation":9}}
]}`)
	for range 20 {
		r := Compute(tr, Options{})
		if len(r.Causes) != 2 || r.Causes[0].TopOp != "aten::index" || r.Causes[1].TopOp != "aten::to" {
			t.Fatalf("causes %+v, want aten::index's then aten::to's", r.Causes)
		}
	}
}

// A capture that began mid-flight (testdata/README.md): the first kernel,
// launched at 110 µs, starts 300 ms later behind a stream wait on work
// the trace did not record, and the .item() after it waits for all of
// that. The window check finds the carry-over; given its end, that wait
// is set apart, and only the program's own sync is counted. The control,
// the same trace with the first kernel starting at once, counts both.
func TestMidFlightCapture(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "midflight.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := tracetest.ReadString(t, string(raw))
	w := window.Check(tr, window.Options{})
	if w.Carry == nil || w.Carry.UntilNs == 0 {
		t.Fatalf("the window check finds no carry-over: %+v", w.Carry)
	}
	r := Compute(tr, Options{InheritedUntilNs: w.Carry.UntilNs})
	if r.Inherited == nil || r.Inherited.Count != 1 || r.Inherited.BlockedUs != 300800 {
		t.Fatalf("inherited %+v, want the first sync's 300.8 ms", r.Inherited)
	}
	if r.Count != 1 || r.BlockedUs != 4930 || len(r.Causes) != 1 || r.Causes[0].Op != "aten::nonzero" {
		t.Errorf("count %d, blocked %.0f µs, causes %+v: want aten::nonzero's sync alone", r.Count, r.BlockedUs, r.Causes)
	}
	if r.StallUs >= 300000 {
		t.Errorf("stall %.0f µs counts the wait on unrecorded work", r.StallUs)
	}

	// the silent control: nothing inherited, both syncs are the program's
	control := strings.Replace(string(raw), `"ts":300000`, `"ts":130`, 1)
	tr = tracetest.ReadString(t, control)
	w = window.Check(tr, window.Options{})
	var o Options
	if w.Carry != nil {
		o.InheritedUntilNs = w.Carry.UntilNs
	}
	r = Compute(tr, o)
	if r.Inherited != nil || r.Count != 2 {
		t.Errorf("control: inherited %+v, count %d, want none and 2 (carry %+v)", r.Inherited, r.Count, w.Carry)
	}
}
