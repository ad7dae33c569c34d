package trace_test

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

const small = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":30,"dur":100,"args":{"External id":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":40,"dur":20,"args":{"External id":2,"correlation":7}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":70,"dur":30,"args":{"correlation":7,"device":0,"stream":7,"grid":[4, 1, 1]}},
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":1000,"dur":1000}
]}`

func read(t *testing.T) *trace.Trace {
	t.Helper()
	tr, err := kineto.Read(strings.NewReader(small), "small.json", kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Validate(); err != nil {
		t.Fatalf("a well-formed trace: %v", err)
	}
	return tr
}

func TestValidateFindsBrokenInvariants(t *testing.T) {
	find := func(tr *trace.Trace, name string) int32 {
		for i := range tr.Events.Len() {
			if tr.Name(i) == name {
				return int32(i)
			}
		}
		t.Fatalf("no %s", name)
		return 0
	}
	for name, tc := range map[string]struct {
		corrupt func(tr *trace.Trace)
		want    string
	}{
		"parent after the child": {func(tr *trace.Trace) {
			tr.Events.Parent[find(tr, "aten::mm")] = find(tr, "ProfilerStep#2")
		}, "does not hold its start"},
		"parent on another track": {func(tr *trace.Trace) {
			tr.Events.Parent[find(tr, "aten::mm")] = find(tr, "gemm")
		}, "another track"},
		"launch to a cpu op": {func(tr *trace.Trace) {
			tr.Events.SetLaunch(int(find(tr, "gemm")), find(tr, "aten::mm"))
		}, "launch link"},
		"step out of range": {func(tr *trace.Trace) {
			tr.Events.Step[find(tr, "aten::mm")] = 9
		}, "step 9 of 2"},
		"event outside its step": {func(tr *trace.Trace) {
			tr.Events.Step[find(tr, "aten::mm")] = 1
		}, "outside its step 2"},
		"steps out of order": {func(tr *trace.Trace) {
			tr.Steps[0], tr.Steps[1] = tr.Steps[1], tr.Steps[0]
		}, "out of order"},
		"short column": {func(tr *trace.Trace) {
			tr.Events.Step = tr.Events.Step[:1]
		}, "column Step"},
		"per-launch values lost": {func(tr *trace.Trace) {
			tr.Events.ArgVals = trace.Sparse[uint32]{}
		}, "values kept false"},
		"per-launch values on an event without": {func(tr *trace.Trace) {
			tr.Events.ArgVals = trace.SparseOf([]int32{find(tr, "aten::mm")}, []uint32{0})
		}, "0 per-launch values, values kept true"},
		"track unsorted": {func(tr *trace.Trace) {
			ev := tr.Tracks[tr.Events.Track[find(tr, "aten::mm")]].Events
			ev[0], ev[1] = ev[1], ev[0]
		}, "starts before"},
	} {
		t.Run(name, func(t *testing.T) {
			tr := read(t)
			tc.corrupt(tr)
			err := tr.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}
