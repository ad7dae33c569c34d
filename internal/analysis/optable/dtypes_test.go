package optable

import (
	"path/filepath"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Op time by input dtype on real traces: a bf16 model's inference on an
// H100 computes mostly in bf16, every op is counted once, and a trace
// recorded without shapes has no dtype rows.
func TestDtypes(t *testing.T) {
	read := func(rel string) *trace.Trace {
		tr, err := kineto.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "traces", rel), kineto.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	tr := read("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
	d := Ops(tr, Options{}).Dtypes
	if len(d) < 2 || d[0].Dtype != "bf16" {
		t.Fatalf("dtypes %+v, want bf16 first", d)
	}
	ops, calls := 0, 0
	for _, k := range tr.Events.Kind {
		if k == trace.KindCPUOp {
			ops++
		}
	}
	for _, r := range d {
		calls += r.Calls
		if r.HostSelfUs < 0 || r.DeviceSelfUs < 0 {
			t.Errorf("negative time: %+v", r)
		}
	}
	if calls != ops {
		t.Errorf("dtype rows count %d calls, the trace has %d ops", calls, ops)
	}
	if d := Ops(read("hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"), Options{}).Dtypes; d != nil {
		t.Errorf("a trace without input types: %+v", d)
	}
}

// What made the softmax's scores, on real CPU traces: karpathy/makemore's
// attention, (q @ k.transpose) * scale masked, a product in every call;
// pytorch/examples' GAT, LeakyReLU(a · [Wh_i || Wh_j]) masked, a
// nonlinearity in every call.
func TestScoreSources(t *testing.T) {
	for _, c := range []struct {
		run  string
		want ScoreSources
	}{{"cpu_makemore", ScoreSources{Product: 28}}, {"cpu_gat", ScoreSources{Nonlinear: 30}}} {
		tr, err := kineto.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "rundir", c.run, "trace-rank0.pt.trace.json.gz"), kineto.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := Ops(tr, Options{}).Scores; got != c.want {
			t.Errorf("%s: %+v, want %+v", c.run, got, c.want)
		}
	}
}
