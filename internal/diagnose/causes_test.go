package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// cpuTrace is a CPU-only window: 60% native ops, 40% between ops.
func cpuTrace(run *runevidence.RunEvidence) Analyses {
	br := &breakdown.Result{AveragedSteps: 3, Average: breakdown.Costs{CPUExecUs: 60e3, RuntimeUs: 0, OtherUs: 40e3, TotalUs: 100e3},
		Steps: []breakdown.Step{{Name: "4"}, {Name: "5"}, {Name: "6"}}}
	w := &window.Result{SteadyState: true, Used: []string{"4", "5", "6"}, MedianUs: 100e3}
	return Analyses{Events: 1000, Window: w, Breakdown: br, Run: run}
}

func findingOf(d *Diagnosis, rule string) *Finding {
	for i := range d.Findings {
		if d.Findings[i].Rule == rule {
			return &d.Findings[i]
		}
	}
	return nil
}

// gc.pauses takes its share out of the time where no op ran (unexplained
// without a Python profile) and names the gc.collect line; a small pause
// per step stays silent.
func TestGCFinding(t *testing.T) {
	site := rundir.GCSite{File: "train.py", Line: 12, Func: "main", Count: 30, PauseS: 3, Explicit: true}
	d := Compute(cpuTrace(&runevidence.RunEvidence{GC: &runevidence.GCPauses{Steps: 30, PausePerStepS: 0.03, StepS: 0.1, Share: 0.3, CollectionsPerStep: 1, Sites: []rundir.GCSite{site}}}))
	f := findingOf(d, "gc.pauses")
	if f == nil {
		t.Fatalf("no gc finding: %+v", d.Findings)
	}
	if len(f.Where) == 0 || f.Where[0].Line != 12 || !strings.Contains(f.AllChanges(), "train.py:12") {
		t.Errorf("gc finding does not point at the gc.collect line: %+v %s", f.Where, f.AllChanges())
	}
	var unexplained, gc float64
	for _, c := range d.Classes {
		switch c.Class {
		case Unexplained:
			unexplained = c.SharePct
		case GC:
			gc = c.SharePct
		}
	}
	if gc != 30 || unexplained != 10 {
		t.Errorf("gc %v%% unexplained %v%%, want 30 and 10", gc, unexplained)
	}
	// automatic collections: the change is not about gc.collect
	site.Explicit = false
	d = Compute(cpuTrace(&runevidence.RunEvidence{GC: &runevidence.GCPauses{Steps: 30, PausePerStepS: 0.03, StepS: 0.1, Share: 0.3, Sites: []rundir.GCSite{site}}}))
	if f := findingOf(d, "gc.pauses"); f == nil || strings.Contains(f.AllChanges(), "gc.collect() runs") {
		t.Errorf("automatic collections: %+v", f)
	}
	// silent: 1% of the step
	d = Compute(cpuTrace(&runevidence.RunEvidence{GC: &runevidence.GCPauses{Steps: 30, PausePerStepS: 0.001, StepS: 0.1, Share: 0.01, Sites: []rundir.GCSite{site}}}))
	if f := findingOf(d, "gc.pauses"); f != nil {
		t.Errorf("1%% GC gave a finding: %s", f.Title)
	}
}

// memory.growth needs both a growing trend and a loop variable that keeps
// tensors; it leads the findings. A large stable footprint, a trend
// without a culprit, and a growing list of small detached tensors stay
// silent.
func TestMemoryGrowthFinding(t *testing.T) {
	leak := rundir.Growth{Name: "preds", Scope: "local", Kind: "list", PerStep: 1, Holds: "tensor with autograd graph", File: "train.py", Line: 20, Func: "main"}
	small := rundir.Growth{Name: "outs", Scope: "local", Kind: "list", PerStep: 1, Holds: "tensor", ItemBytes: 1024, File: "train.py", Line: 21}
	growing := func(g ...rundir.Growth) *runevidence.MemoryTrend {
		return &runevidence.MemoryTrend{Source: "rss", Steps: 30, FirstBytes: 1e9, LastBytes: 1e9 + 30*4e6, SlopeBytes: 4e6, LateSlopeBytes: 4e6, R2: 0.97, Growing: g}
	}
	d := Compute(cpuTrace(&runevidence.RunEvidence{Memory: growing(small, leak)}))
	if len(d.Findings) == 0 || d.Findings[0].Rule != "memory.growth" {
		t.Fatalf("memory.growth not first: %+v", d.Findings)
	}
	f := d.Findings[0]
	if len(f.Where) != 1 || f.Where[0].Line != 20 || !strings.Contains(f.Title, "preds") || !strings.Contains(f.AllChanges(), "detach") {
		t.Errorf("finding %+v", f)
	}
	if !strings.Contains(d.Verdict.Why, "memory grows") || d.Verdict.Secondary[len(d.Verdict.Secondary)-1] != MemoryGrowth {
		t.Errorf("verdict does not name the growth: %+v", d.Verdict)
	}
	stable := growing(leak)
	stable.SlopeBytes, stable.LastBytes = 0, stable.FirstBytes
	// RSS rose once (the profiler's window, a cache filling) and stayed:
	// the line over the run grows, the later half is flat (a policy
	// rollout whose list of log-probs is emptied every episode: the
	// probes saw it grow within one)
	once := growing(leak)
	once.LateSlopeBytes = 0.1e6
	for name, m := range map[string]*runevidence.MemoryTrend{
		"stable footprint":       stable,
		"rose once":              once,
		"no culprit":             growing(),
		"small detached tensors": growing(small),
		"slow growth":            {Source: "rss", Steps: 30, FirstBytes: 1e9, LastBytes: 1e9 + 8<<20, SlopeBytes: 8 << 20 / 30, Growing: []rundir.Growth{leak}},
	} {
		d := Compute(cpuTrace(&runevidence.RunEvidence{Memory: m}))
		if f := findingOf(d, "memory.growth"); f != nil {
			t.Errorf("%s: %s", name, f.Title)
		}
		if strings.Contains(d.Verdict.Why, "memory grows") {
			t.Errorf("%s: verdict %s", name, d.Verdict.Why)
		}
	}
}

// cpu.tiny-ops: thousands of ops at a few µs of step each make the native
// share framework overhead; the same op count with large ops, or too few
// ops, stays cpu-compute-bound.
func TestTinyOps(t *testing.T) {
	ops := func(calls int, selfUs float64) *optable.OpTable {
		return &optable.OpTable{Calls: calls + 3, HostSelfUs: selfUs + 30, StepsFirst: 4, StepsLast: 6, Rows: []optable.OpRow{
			{Name: "aten::add_", Calls: calls / 2, HostSelfUs: selfUs / 2}, {Name: "aten::mul_", Calls: calls / 2, HostSelfUs: selfUs / 2},
			{Name: "ProfilerStep#4", Calls: 3, HostSelfUs: 30}}}
	}
	run := &runevidence.RunEvidence{RunMedianStepS: 0.02} // 20 ms outside the window
	in := cpuTrace(run)
	in.Ops = ops(3*4000, 3*50e3) // 4000 ops per step: 5 µs of step per op
	d := Compute(in)
	if d.Verdict.Primary != Overhead {
		t.Fatalf("verdict %s (%s), want %s", d.Verdict.Primary, d.Verdict.Why, Overhead)
	}
	f := findingOf(d, "cpu.tiny-ops")
	if f == nil || !strings.HasPrefix(f.Title, "4000 ops per step, one per 5.00 µs") {
		t.Fatalf("finding %+v", f)
	}
	if findingOf(d, "cpu.native") != nil {
		t.Error("cpu.native fired next to cpu.tiny-ops")
	}
	if strings.Contains(f.AllChanges(), "optimizer's update") {
		t.Errorf("no optimizer region, change %q", f.AllChanges())
	}
	// An unfused optimizer holding a third of the overhead or more leads
	// the change; a small one, or one already on foreach ops, does not.
	for name, c := range map[string]struct {
		region regions.Region
		want   string
	}{
		"AdamW, 45%":       {regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 3, TotalUs: 3 * 45e3}, "the optimizer's update (Optimizer.step#AdamW.step, 45% of the step) runs several ops per parameter: fused=True"},
		"hand-written 45%": {regions.Region{Name: "Optimizer.step#Momentum.step", Calls: 3, TotalUs: 3 * 45e3}, "(Optimizer.step#Momentum.step, 45% of the step) runs several ops per parameter: update every parameter at once with torch._foreach_*"},
		"AdamW, 15%":       {regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 3, TotalUs: 3 * 15e3}, "issue fewer, larger ops"},
		"foreach, 45%":     {regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 3, TotalUs: 3 * 45e3, MultiTensor: true}, "issue fewer, larger ops"},
	} {
		in := cpuTrace(run)
		in.Ops = ops(3*4000, 3*50e3)
		in.Regions = &regions.Result{Regions: []regions.Region{c.region}}
		d := Compute(in)
		f := findingOf(d, "cpu.tiny-ops")
		if f == nil || !strings.HasPrefix(f.AllChanges(), c.want) && !strings.Contains(f.AllChanges(), c.want) {
			t.Fatalf("%s: %+v, want %q", name, f, c.want)
		}
		// fused=True takes the update's ops out, not the model's: the
		// saving reaches the update's time only (stable-baselines3's PPO,
		// promised 46% from all of the overhead, measured 1.22-1.38x)
		reach := 1.0
		if strings.HasPrefix(f.Change, "the optimizer's update") {
			reach = 0.45 / (f.AtStakePct / 100) // the update: 45% of the step
		}
		if want := f.AtStakeUs * rule("cpu.tiny-ops").Factor * min(1, reach); math.Abs(f.SavingUs-want) > 1 {
			t.Errorf("%s: saves %.0f µs of %.0f at stake, want %.0f", name, f.SavingUs, f.AtStakeUs, want)
		}
		if cs := d.Classes; len(cs) == 0 || cs[0].Class != Overhead || math.Abs(cs[0].SavingPct-f.SavingPct) > 0.1 {
			t.Errorf("%s: classes %+v, want %s first saving its finding's %.1f%%", name, cs, Overhead, f.SavingPct)
		}
	}
	for name, c := range map[string]struct {
		run *runevidence.RunEvidence
		ops *optable.OpTable
	}{
		"large ops":           {&runevidence.RunEvidence{RunMedianStepS: 2}, ops(3*4000, 3*50e3)},  // 500 µs of step per op
		"few ops":             {&runevidence.RunEvidence{RunMedianStepS: 0.001}, ops(3*90, 3*450)}, // 90 ops of 5 µs in a 1 ms step
		"no run, window step": {nil, ops(3*4000, 3*50e3)},                                          // 100 ms window step: 25 µs per op
		// a fast CPU: 4000 ops per step at 5 µs of step each, but the time
		// is in 100 large calls of 1 ms (matmuls) next to 3900 small ones
		"large calls": {run, &optable.OpTable{Calls: 3 * 4000, HostSelfUs: 3 * 50e3, StepsFirst: 4, StepsLast: 6, Rows: []optable.OpRow{
			{Name: "aten::mm", Calls: 3 * 100, HostSelfUs: 3 * 40e3}, {Name: "aten::t", Calls: 3 * 3900, HostSelfUs: 3 * 10e3}}}},
	} {
		in := cpuTrace(c.run)
		in.Ops = c.ops
		d := Compute(in)
		if f := findingOf(d, "cpu.tiny-ops"); f != nil || d.Verdict.Primary == Overhead {
			t.Errorf("%s: %s / %+v", name, d.Verdict.Primary, f)
		}
	}
}

// A batch of one: an MLP trained one sample a step runs ~300 ops of a
// few µs each in a 1.5 ms step; every op is mostly dispatcher cost.
func TestTinyOpsBatchOfOne(t *testing.T) {
	in := cpuTrace(&runevidence.RunEvidence{RunMedianStepS: 0.0015})
	in.Ops = &optable.OpTable{Calls: 3 * 314, HostSelfUs: 3 * 314 * 4, Steps: 3, Rows: []optable.OpRow{
		{Name: "aten::addmm", Calls: 3 * 100, HostSelfUs: 3 * 100 * 6}, {Name: "aten::add_", Calls: 3 * 214, HostSelfUs: 3 * 214 * 3}}}
	if f := findingOf(Compute(in), "cpu.tiny-ops"); f == nil || !strings.HasPrefix(f.Title, "314 ops per step, one per 4.78 µs") {
		t.Errorf("batch of one: %+v", f)
	}
}

// The Python profile tells whose ops are the small ones: the model's
// forward (a larger batch; a loop in the program's forward named) or the
// program's own tensor code outside it (its lines named first); with
// neither clearly ahead, too few samples, a compiled model or an unfused
// optimizer that holds the time, the change is not theirs.
func TestTinyOpsSource(t *testing.T) {
	const model, loop, own = "the model's own ops are the small ones (its forward holds 50% of the busy main-thread samples, the program's own tensor code 7%)",
		"where a loop in", "the program's own tensor code outside the model issues them (loss.py:9 28%, loss.py:8 6%: 36% of the busy main-thread samples, against 3% in the model's forward)"
	inModel := &runevidence.PythonEvidence{HotSamples: 61, ModuleShare: 0.5, OutsideModelShare: 0.07, Hot: []runevidence.Line{{File: "train.py", Line: 15, Func: "<module>", Pct: 39}}}
	outside := []runevidence.Line{{File: "/src/loss.py", Line: 9, Func: "focal_loss", Pct: 28}, {File: "/src/loss.py", Line: 8, Func: "focal_loss", Pct: 6}}
	metric := func(share, forward float64) *runevidence.PythonEvidence {
		return &runevidence.PythonEvidence{HotSamples: 61, ModuleShare: forward, OutsideModelShare: 0.04, OffStepShare: share, OffStepWindowShare: share,
			OffStep: []runevidence.OffStepLine{{Line: runevidence.Line{File: "/src/train.py", Line: 20, Func: "<module>", Pct: 100 * share}, Kind: runevidence.OffStepMetrics}},
			Hot:     []runevidence.Line{{File: "train.py", Line: 15, Func: "<module>", Pct: 39}}}
	}
	perSample := &runevidence.PythonEvidence{HotSamples: 133, ModuleShare: 0.03, OutsideModelShare: 0.36, OutsideModel: outside,
		Hot: append([]runevidence.Line{{File: "/src/train.py", Line: 14, Func: "<module>", Pct: 61}}, outside...)}
	withFunc := *perSample
	withFunc.OutsideFunc = &runevidence.Line{File: "/src/loss.py", Line: 3, Func: "focal_loss", Pct: 34}
	withFunc.OutsideFuncCaller = &runevidence.Line{File: "/src/loss.py", Line: 30, Func: "total_loss", Pct: 34}
	for _, c := range []struct {
		name      string
		py        *runevidence.PythonEvidence
		region    *regions.Region
		rows      []optable.OpRow
		want, not string
		first     string // the finding's first location, file:line
	}{
		{"in the model", inModel, nil, nil, model, loop, "train.py:15"},
		{"a loop in the program's forward", &runevidence.PythonEvidence{HotSamples: 61, ModuleShare: 0.8, OutsideModelShare: 0.07, Hot: []runevidence.Line{{File: "/src/tower.py", Line: 17, Func: "Tower.forward", Pct: 48}}},
			nil, nil, "where a loop in Tower.forward (tower.py:17) runs independent layers one at a time", "", "/src/tower.py:17"},
		{"foreach optimizer", inModel, &regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 3, TotalUs: 3 * 45e3, MultiTensor: true}, nil, model, loop, "train.py:15"},
		{"per-sample loss", perSample, nil, nil, own, model, "/src/loss.py:9"},
		// its lines spread over one function and the helpers it calls
		{"per-sample loss in a function", &withFunc, nil, nil, "36% of the busy main-thread samples, against 3% in the model's forward; 34% in focal_loss (loss.py:3) and the functions it calls, called at loss.py:30 in total_loss)", model, "/src/loss.py:3"},
		{"unfused optimizer", inModel, &regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 3, TotalUs: 3 * 45e3}, nil, "the optimizer's update", model, ""},
		{"neither ahead", &runevidence.PythonEvidence{HotSamples: 61, ModuleShare: 0.4, OutsideModelShare: 0.3}, nil, nil, "issue fewer, larger ops", "program's own", ""},
		{"backward only", &runevidence.PythonEvidence{HotSamples: 61, ModuleShare: 0, OutsideModelShare: 0.1}, nil, nil, "issue fewer, larger ops", "program's own", ""},
		{"few samples", &runevidence.PythonEvidence{HotSamples: 12, ModuleShare: 0.9}, nil, nil, "issue fewer, larger ops", model, ""},
		{"no Python profile", nil, nil, nil, "issue fewer, larger ops", model, ""},
		{"compiled", inModel, nil, []optable.OpRow{{Name: "Torch-Compiled Region: 0/0", Calls: 3, HostSelfUs: 30}}, "the model already runs under torch.compile", model, ""},
		// a metric in every step (an AUROC: 31% of the samples, 8% in the
		// forward): its finding's change first; under the forward's share
		// it is not the ops' source
		{"a metric every step", metric(0.31, 0.08), nil, nil, "work that does not belong in the step issues many of them (metric computation at train.py:20: 31% of the main thread, against 8% in the model's forward)", model, "/src/train.py:20"},
		{"a small metric", metric(0.1, 0.5), nil, nil, "the model's own ops are the small ones (its forward holds 50%", "does not belong", "train.py:15"},
	} {
		in := cpuTrace(&runevidence.RunEvidence{RunMedianStepS: 0.02, Python: c.py})
		in.Ops = &optable.OpTable{Calls: 3*4000 + 3, HostSelfUs: 3*50e3 + 30, Steps: 3, Rows: append([]optable.OpRow{
			{Name: "aten::add_", Calls: 3 * 2000, HostSelfUs: 3 * 25e3}, {Name: "aten::mul_", Calls: 3 * 2000, HostSelfUs: 3 * 25e3}}, c.rows...)}
		if c.region != nil {
			in.Regions = &regions.Result{Regions: []regions.Region{*c.region}}
		}
		f := findingOf(Compute(in), "cpu.tiny-ops")
		if f == nil || !strings.Contains(f.AllChanges(), c.want) || c.not != "" && strings.Contains(f.AllChanges(), c.not) {
			t.Errorf("%s: %+v, want %q and not %q", c.name, f, c.want, c.not)
			continue
		}
		if c.first != "" && (len(f.Where) == 0 || fmt.Sprintf("%s:%d", f.Where[0].File, f.Where[0].Line) != c.first) {
			t.Errorf("%s: where %+v, want %s first", c.name, f.Where, c.first)
		}
	}
}

// A model called in a loop, one sample at a time, runs its layers many
// times a step for its parameters: the change says to call it once on
// the batch, or, where a recurrent cell runs as often (a loop over time
// steps), a recurrent layer over the sequence; not a transformer stepped once (68 linears a step for 53
// tensors, with 4 micro-batches), inference, or two optimizers (a GAN).
func TestRepeatedForward(t *testing.T) {
	for _, c := range []struct {
		name             string
		linears, params  int
		backward, nOptim int
		batches          int // DataLoader batches a step
		want             bool
		cells            int // aten::lstm_cell calls a step
	}{
		{"per-sample loop", 128, 4, 100, 1, 1, true, 0},
		{"accumulated micro-batches", 68, 53, 100, 1, 0, false, 0},
		// 16 micro-batches of a 2-layer MLP: 32 linears a step, 2 a batch
		{"accumulated from a DataLoader", 128, 4, 100, 1, 16, false, 0},
		{"inference", 128, 4, 0, 1, 0, false, 0},
		{"two optimizers", 128, 4, 100, 2, 0, false, 0},
		// an LSTMCell over a sequence's steps, its output through a Linear
		{"time steps through a cell", 128, 4, 100, 1, 1, true, 128},
		{"a cell stepped a few times", 128, 4, 100, 1, 1, true, 4},
		// torchdiffeq's solver calls the model (through its own
		// module) 56 times a step, each on the whole batch
		{"an ODE solver's evaluations", 128, 4, 100, 1, 1, true, 0},
	} {
		run := &runevidence.RunEvidence{RunMedianStepS: 0.02}
		ode := c.name == "an ODE solver's evaluations"
		if ode {
			run.StepCalls, run.StepCallsMedian = &rundir.StepCalls{Class: "_PerturbFunc", Module: "torchdiffeq._impl.misc"}, 56
		}
		for range c.nOptim {
			run.Optimizers = append(run.Optimizers, rundir.Optimizer{Class: "SGD", Params: c.params})
		}
		in := cpuTrace(run)
		in.Ops = &optable.OpTable{Calls: 3 * 4000, HostSelfUs: 3 * 50e3, Steps: 3, BackwardCalls: c.backward, Rows: []optable.OpRow{
			{Name: "aten::add_", Calls: 3 * 2000, HostSelfUs: 3 * 25e3}, {Name: "aten::mul_", Calls: 3*2000 - 3*c.linears, HostSelfUs: 3 * 24e3},
			{Name: "aten::linear", Calls: 3 * c.linears, HostSelfUs: 3 * 1e3}, {Name: "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", Calls: 3 * c.batches},
			{Name: "aten::lstm_cell", Calls: 3 * c.cells, HostSelfUs: 3 * 1e3}}}
		f := findingOf(Compute(in), "cpu.tiny-ops")
		if f == nil {
			t.Fatalf("%s: no tiny-ops finding", c.name)
		}
		// the layer ops that ran are named: linear alone here, no convolutions
		if got := strings.HasPrefix(f.Change, "aten::linear run "); got != c.want ||
			got && !strings.HasPrefix(f.Change, "aten::linear run 128 times a step for the model's 4 parameter tensors") {
			t.Errorf("%s: the loop named: %v, want %v: %s", c.name, got, c.want, f.AllChanges())
		}
		// a cell's time steps get nn.LSTM over the sequence, not a batch
		cell := strings.Contains(f.Change, "calls a recurrent cell (aten::lstm_cell 128 times a step)") && strings.Contains(f.Change, "nn.LSTM/nn.GRU/nn.RNN over the whole sequence")
		if cell != (c.cells >= 16) || cell && strings.Contains(f.AllChanges(), "torch.stack the samples") {
			t.Errorf("%s: recurrent cell's change %v: %s", c.name, cell, f.AllChanges())
		}
		// a solver's evaluations each take the last one's result: no
		// batching them
		solver := strings.Contains(f.Change, "torchdiffeq's ODE solver calls the model a median 56 times a step") && strings.Contains(f.Change, `method="rk4"`)
		if solver != ode || solver && strings.Contains(f.AllChanges(), "torch.stack the samples") {
			t.Errorf("%s: solver's change %v: %s", c.name, solver, f.AllChanges())
		}
	}
}

// A model whose first call got one sample (no batch dimension, or one
// of 1), its layers run many times a step: the step calls it per item,
// an RL policy once per environment step (pytorch/examples'
// actor_critic: 3 Linear layers, 6 parameter tensors, episodes of tens
// of steps, under the per-parameter bound). Silent on a batch, below
// MinItemCalls calls (a GAN's discriminator thrice), and without the
// model's layer count (runs recorded before it).
func TestItemModel(t *testing.T) {
	for _, c := range []struct {
		name    string
		linears int // a step
		input   []int64
		layers  int
		want    string
	}{
		{"policy per environment step", 90, []int64{4}, 3, "the model (Policy, called at ac.py:80) runs about 30 times a step, each call on one sample (its input [4])"},
		{"leading dimension of 1", 90, []int64{1, 4}, 3, "runs about 30 times a step, each call on one sample (its input [1, 4])"},
		{"batched calls", 90, []int64{64, 4}, 3, ""},
		{"a few calls", 9, []int64{1, 4}, 3, ""},
		{"no layer count", 90, []int64{4}, 0, ""},
	} {
		run := &runevidence.RunEvidence{RunMedianStepS: 0.02, Optimizers: []rundir.Optimizer{{Class: "Adam", Params: 6}},
			Models: []rundir.ModelCall{{Class: "Policy", Module: "__main__", File: "ac.py", Line: 80, Calls: 64, Layers: c.layers, Input: c.input}}}
		in := cpuTrace(run)
		in.Ops = &optable.OpTable{Calls: 3 * 4000, HostSelfUs: 3 * 50e3, Steps: 3, BackwardCalls: 100, Rows: []optable.OpRow{
			{Name: "aten::add_", Calls: 3 * 2000, HostSelfUs: 3 * 25e3}, {Name: "aten::mul_", Calls: 3*2000 - 3*c.linears, HostSelfUs: 3 * 24e3},
			{Name: "aten::linear", Calls: 3 * c.linears, HostSelfUs: 3 * 1e3}}}
		f := findingOf(Compute(in), "cpu.tiny-ops")
		if f == nil {
			t.Fatalf("%s: no tiny-ops finding", c.name)
		}
		got := strings.Contains(f.Change, "each call on one sample")
		if got != (c.want != "") || got && (!strings.Contains(f.Change, c.want) || !strings.Contains(f.Change, "gymnasium.vector.SyncVectorEnv")) {
			t.Errorf("%s: %s, want %q", c.name, f.Change, c.want)
		}
	}
}

// Training steps that each learn from one sample (pytorch/tutorials'
// word_embeddings_tutorial.py: an n-gram model called once a step on one
// context, [2]) lead with mini-batches; silent on a batch, a model
// called many times a step (itemModel's loop), inference, and two
// optimizers (a GAN's).
func TestOneSampleTraining(t *testing.T) {
	for _, c := range []struct {
		name              string
		input             []int64
		linears, backward int // a step
		optimizers        int
		want              bool
	}{
		{"one context a step", []int64{2}, 2, 100, 1, true},
		{"a leading dimension of 1", []int64{1, 4}, 2, 100, 1, true},
		{"a batch", []int64{32, 4}, 2, 100, 1, false},
		{"called per item", []int64{4}, 40, 100, 1, false},
		{"inference", []int64{2}, 2, 0, 1, false},
		{"two optimizers", []int64{2}, 2, 100, 2, false},
		// torchtext's text classification: the batch's tokens in one row
		{"an EmbeddingBag's tokens", []int64{1200}, 2, 100, 1, false},
		// the program's own code issues most ops (a CRF's forward
		// algorithm): its vectorising leads, mini-batches after it
		{"the program's own code first", []int64{11}, 2, 100, 1, true},
		// a skip-gram's center words, DataLoader(batch_size=512): a batch
		{"a batch of token ids", []int64{512}, 2, 100, 1, false},
		// first called with gradients off: an RL rollout's action picked
		// on one observation, the training on minibatches (PPO)
		{"first called with gradients off", []int64{1, 4}, 2, 100, 1, false},
	} {
		run := &runevidence.RunEvidence{RunMedianStepS: 0.0002,
			Models: []rundir.ModelCall{{Class: "NGramLanguageModeler", Module: "__main__", File: "we.py", Line: 69, Calls: 64, Layers: 2, Input: c.input, NoGrad: c.name == "first called with gradients off"}}}
		for range c.optimizers {
			run.Optimizers = append(run.Optimizers, rundir.Optimizer{Class: "SGD", Params: 5})
		}
		in := cpuTrace(run)
		in.Ops = &optable.OpTable{Calls: 3 * 150, HostSelfUs: 3 * 150, Steps: 3, BackwardCalls: c.backward, Rows: []optable.OpRow{
			{Name: "aten::add_", Calls: 3 * 100, HostSelfUs: 3 * 100}, {Name: "aten::mul_", Calls: 3*50 - 3*c.linears, HostSelfUs: 3 * 48},
			{Name: "aten::linear", Calls: 3 * c.linears, HostSelfUs: 3 * 2}}}
		if c.name == "an EmbeddingBag's tokens" {
			in.Ops.Rows = append(in.Ops.Rows, optable.OpRow{Name: "aten::embedding_bag", Calls: 3, HostSelfUs: 3})
		}
		if c.name == "a batch of token ids" {
			batch := 512
			run.Loaders = []runevidence.Loader{{Dataset: "SkipGrams", BatchSize: &batch, Batches: 300}}
		}
		ownFirst := c.name == "the program's own code first"
		if ownFirst {
			outside := []runevidence.Line{{File: "/src/crf.py", Line: 87, Func: "CRF._forward_alg", Pct: 30}, {File: "/src/crf.py", Line: 31, Func: "log_sum_exp", Pct: 20}}
			run.Python = &runevidence.PythonEvidence{HotSamples: 100, ModuleShare: 0.1, OutsideModelShare: 0.5, OutsideModel: outside, Hot: outside}
		}
		f := findingOf(Compute(in), "cpu.tiny-ops")
		if f == nil {
			t.Fatalf("%s: no tiny-ops finding", c.name)
		}
		const one = "training on one sample per step: the model (NGramLanguageModeler, called at we.py:69) gets one sample a call"
		got := strings.Contains(f.AllChanges(), one)
		if got != c.want || got && !strings.Contains(f.AllChanges(), "train on mini-batches") {
			t.Errorf("%s: %v, want %v: %s", c.name, got, c.want, f.AllChanges())
		}
		if got && strings.HasPrefix(f.Change, one) == ownFirst {
			t.Errorf("%s: one sample a step leads: %v, want %v: %s", c.name, !ownFirst, ownFirst, f.Change)
		}
	}
}

// Ops are judged on the time the main thread ran: on a machine where it
// waited for a CPU 60% of the time, 1000 ops per step of 24 µs each
// (9.6 µs running) in 30 ms steps (12 µs per op running) are tiny; on a
// quiet machine the same numbers are not, nor are ops of 100 µs on the
// busy one.
func TestTinyOpsLessCPUWait(t *testing.T) {
	ops := func(perCallUs float64) *optable.OpTable {
		return &optable.OpTable{Calls: 3000, HostSelfUs: 3000 * perCallUs, Steps: 3, Rows: []optable.OpRow{
			{Name: "aten::addmm", Calls: 1500, HostSelfUs: 1500 * perCallUs}, {Name: "aten::tanh", Calls: 1500, HostSelfUs: 1500 * perCallUs}}}
	}
	busy := &rundir.CPUWait{Run: &rundir.ThreadSched{WallS: 10, WaitS: 6}, Window: &rundir.ThreadSched{WallS: 1, WaitS: 0.6}}
	for _, c := range []struct {
		name      string
		wait      *rundir.CPUWait
		perCallUs float64
		tiny      bool
	}{
		{"busy machine", busy, 24, true},
		{"quiet machine", nil, 24, false},
		{"busy machine, large ops", busy, 100, false},
	} {
		in := cpuTrace(&runevidence.RunEvidence{RunMedianStepS: 0.03, CPUWait: c.wait})
		in.Ops = ops(c.perCallUs)
		d := Compute(in)
		if f := findingOf(d, "cpu.tiny-ops"); (f != nil) != c.tiny || c.tiny && !strings.Contains(f.Title, "one per 12.0 µs") {
			t.Errorf("%s: tiny-ops %+v, want it: %v", c.name, f, c.tiny)
		}
	}
}

// The window's own outlier steps are periodic work when two or more of
// them, at least 3 steps apart, hold MinFinding of the recorded time: not
// a busy spell (steps in a row), not every other step, not a one-off,
// not their recompilations.
func TestWindowPeriodic(t *testing.T) {
	work := &window.OutlierWork{Steps: 2, ExcessUs: 200e3, RecordedUs: 190e3, Top: []window.WorkName{{Name: "aten::linear", Us: 180e3}}}
	for _, c := range []struct {
		name     string
		outliers []int
		recomp   float64
		every    int // 0: silent
	}{
		{"every 4", []int{2, 6}, 0, 4},
		{"busy spell", []int{3, 4}, 0, 0},
		{"every other step", []int{2, 4, 6}, 0, 0},
		{"one-off", []int{5}, 0, 0},
		{"the first recorded step and one more", []int{0, 4}, 0, 0},
		{"the first recorded step and every 3", []int{0, 3, 6}, 0, 3},
		{"recompilations", []int{2, 6}, 290e3, 0},
		{"garbage collections", []int{2, 6}, -1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := cpuTrace(nil)
			if c.recomp < 0 {
				// the run's full collections fill the slow steps (gc.pauses')
				a.Run = &runevidence.RunEvidence{NotOwnS: map[int]float64{12: 0.2, 16: 0.2}}
				c.recomp = 0
			}
			w := a.Window
			w.OutlierWork = work
			w.Steps = nil
			for i := range 10 {
				st := window.Step{Step: fmt.Sprint(i + 10), Us: 100e3}
				if slices.Contains(c.outliers, i) {
					st.Us, st.Excluded, st.RecompileUs = 300e3, window.Outlier, c.recomp
				}
				w.Steps = append(w.Steps, st)
			}
			d := Compute(a)
			f := findingOf(d, "steps.periodic")
			if (f != nil) != (c.every > 0) {
				t.Fatalf("finding %v, want %v: %+v", f != nil, c.every > 0, d.Findings)
			}
			if f != nil && (!strings.HasPrefix(f.Title, fmt.Sprintf("Every %d steps a step takes 300 ms", c.every)) || !strings.Contains(f.AllChanges(), "an evaluation pass")) {
				t.Errorf("%s / %s", f.Title, f.AllChanges())
			}
		})
	}
}
