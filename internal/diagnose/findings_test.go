package diagnose

import (
	"cmp"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
)

// The input finding's title quotes the measurement its share came from:
// with the agent's wait (635 ms of a 1.5 s agent step) the title says
// 635 ms, not the share times the trace's own mean step (1 s).
func TestInputTitleQuotesItsMeasurement(t *testing.T) {
	br := &breakdown.Result{AveragedSteps: 3, Average: breakdown.Costs{DataLoaderUs: 100e3, CPUExecUs: 900e3, TotalUs: 1e6},
		Steps: []breakdown.Step{{Name: "4"}, {Name: "5"}, {Name: "6"}}}
	w := &window.Result{SteadyState: true, Used: []string{"4", "5", "6"}, MedianUs: 1e6}
	for _, c := range []struct {
		name string
		run  *runevidence.RunEvidence
		want string
	}{
		{"trace", nil, "100 ms per step (10% of the step)"},
		{"agent", &runevidence.RunEvidence{WindowStepS: 1.5, DataLoaderWaitS: 0.635, HasDataLoader: true}, "635 ms per step (42% of the step)"},
		// the agent measured less than the trace: the trace's figure stands
		{"agent below trace", &runevidence.RunEvidence{WindowStepS: 1.5, DataLoaderWaitS: 0.03, HasDataLoader: true}, "100 ms per step (10% of the step)"},
	} {
		d := Compute(Analyses{Events: 1000, Window: w, Breakdown: br, Run: c.run})
		var title string
		for _, f := range d.Findings {
			if f.Rule == "input.loader" {
				title = f.Title
			}
		}
		if !strings.HasSuffix(title, c.want) {
			t.Errorf("%s: input finding %q, want it to end with %q", c.name, title, c.want)
		}
	}
}

// The host-wait frames stay within their gaps: a frame's time is capped
// at its gap, and a gap spent in a syncing op is a sync stall, left out.
func TestHostWaitFramesStayInTheirGaps(t *testing.T) {
	s := &state{p: Default, share: map[Class]float64{Sync: 0.3}, in: Analyses{
		Syncs: &syncs.Result{Causes: []syncs.Cause{{Op: "aten::copy_", StallUs: 80}}},
		Idle: &idle.Result{TopHostWaits: []idle.Gap{
			{Us: 100, Ops: []idle.Frame{{Name: "aten::to", Kind: "cpu_op", Us: 90}, {Name: "aten::copy_", Kind: "cpu_op", Us: 90}}},
			{Us: 50, Ops: []idle.Frame{{Name: "forward", Kind: "python_function", Us: 80}, {Name: "aten::mm", Kind: "cpu_op", Us: 20}}},
		}},
	}}
	got := s.hostWaitFrames()
	want := []Location{
		{Kind: "python", Name: "forward", Note: "ran 50.0 µs of the 50.0 µs of the largest host-wait gap"},
		{Kind: "op", Name: "aten::mm", Note: "ran 20.0 µs of the 50.0 µs of the largest host-wait gap"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("frames\n%+v\nwant\n%+v", got, want)
	}
	// without a sync finding, the first gap is host work like any other
	s.share[Sync] = 0
	if got := s.hostWaitFrames(); len(got) != 2 || got[0].Name != "aten::copy_" || got[1].Name != "aten::to" {
		t.Errorf("no sync finding: %+v", got)
	}
}

// Pinned-memory advice is for host copies: when device-to-device copies
// take most of the copy time the change names the ops that copy instead,
// and a pageable host-to-device majority keeps the pinned-memory advice.
func TestCopyAdviceFollowsDirection(t *testing.T) {
	for _, c := range []struct {
		name   string
		copies []gpu.Memcpy
		want   string
	}{
		{"dtod", []gpu.Memcpy{{Direction: "DtoD", TimeUs: 90}, {Direction: "HtoD", HostMemory: "pageable", TimeUs: 60}}, "the copies stay on the device"},
		{"htod", []gpu.Memcpy{{Direction: "DtoD", TimeUs: 40}, {Direction: "HtoD", HostMemory: "pageable", TimeUs: 60}}, "pin_memory"},
	} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{Copy: 0.2}, d: &Diagnosis{},
			in: Analyses{GPU: &gpu.Result{Devices: []gpu.Device{{Memcpy: c.copies}}}}}
		s.findings()
		if len(s.d.Findings) != 1 || !strings.Contains(s.d.Findings[0].AllChanges(), c.want) {
			t.Errorf("%s: %+v, want a change with %q", c.name, s.d.Findings, c.want)
		}
	}
}

// Dropout with no backward in the trace is a model left in training mode
// for inference, unless the agent's steps were optimizer updates: then
// the trace held no whole step, and the program trains.
func TestDropoutInferenceNotWhenTheStepsTrain(t *testing.T) {
	for _, source := range []string{"", "forward", "dataloader", "optimizer"} {
		ops := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 500}, {Name: "aten::bernoulli_", HostSelfUs: 250}, {Name: "aten::relu", HostSelfUs: 250}}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: ops, Run: &runevidence.RunEvidence{StepSource: source}}}
		s.findings()
		ch := s.d.Findings[0].AllChanges()
		if strings.Contains(ch, "call model.eval()") == (source == "optimizer") || strings.Contains(ch, "dropout's random masks (aten::dropout: its bernoulli_ draws, scaling and multiply) take 25%") != (source == "optimizer") {
			t.Errorf("steps by %q: %s", source, ch)
		}
	}
}

// With fewer ranks than the job's world size, exposed communication may be
// waiting for another rank: the change says so and confidence drops; with
// every rank in the input (or a one-rank job) it stays silent.
func TestCommWithMissingRanks(t *testing.T) {
	for _, c := range []struct {
		read, world int
		caveat      bool
	}{{1, 300, true}, {8, 8, false}, {1, 1, false}, {1, 0, false}} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{Comm: 0.5}, d: &Diagnosis{},
			in: Analyses{RanksRead: c.read, WorldSize: c.world}}
		s.findings()
		f := s.d.Findings[0]
		if got := strings.Contains(f.AllChanges(), "analyze all ranks together"); got != c.caveat || (f.Confidence == "low") != c.caveat {
			t.Errorf("%d of %d ranks: caveat %v, confidence %s: %s", c.read, c.world, got, f.Confidence, f.AllChanges())
		}
	}
}

// Convolutions on a CPU with bfloat16 instructions lead with bf16
// autocast and channels_last together; on one without (or unknown),
// channels_last, which keeps float32. Where the convolutions are little
// more than half the native time, channels_last is not advised outright
// (pytorch/examples' mnist, 53%: 0.95x in it, 1.36x under bf16 autocast).
// A model with strided depthwise convolutions gets channels_last and no
// bf16 autocast anywhere: torchvision's MobileNetV3-Small ran 0.80x under
// it on this AVX512-BF16 CPU, 1.25x in channels_last. One with stride-1
// depthwise ones gets both together, promised from its other
// convolutions, and channels_last alone is not advised (timm's
// ConvNeXt-atto: 0.95x in it, 1.08x with both, promised 48% from all its
// convolutions). channels_last alone on dense convolutions promises a
// tenth of their time.
func TestCPUConvolutionsLeadWithBF16WhereTheCPUHasIt(t *testing.T) {
	bf16 := []string{"avx2", "avx512f", "avx512_bf16"}
	for _, c := range []struct {
		name       string
		features   []string
		conv       float64 // of 1000 µs of native time
		lead, none string
		depthwise  int    // the model's strided depthwise convolutions (-1: no model recorded)
		stride1    int    // and its depthwise ones without a stride
		try        string // the run-time changes run --verify makes, by name
	}{
		{"AVX512-BF16, strided depthwise", bf16, 700, "convolutions take 70% of the native time, 4 of the model's convolutions depthwise with a stride: put the model (MobileNetV3, called at train.py:33) and its input in channels_last", "torch.autocast(", 4, 0, "channels_last"},
		{"AVX512-BF16, strided depthwise, convolutions half", bf16, 530, "convolutions take 53% of the native time, 2 of the model's convolutions depthwise with a stride: put the model", "torch.autocast(", 2, 0, "channels_last"},
		{"AVX512-BF16", bf16, 800, "convolutions take 80% of the native time, and this CPU has bfloat16 instructions: bf16 autocast", "", -1, 0, "bf16_autocast,channels_last"},
		// grouped convolutions, none depthwise with a stride (RegNetX:
		// 1.4x under bf16 autocast)
		{"AVX512-BF16, no strided depthwise", bf16, 800, "convolutions take 80% of the native time, and this CPU has bfloat16 instructions: bf16 autocast", "", 0, 0, "bf16_autocast,channels_last"},
		{"AVX512-BF16, stride-1 depthwise", bf16, 800, "convolutions take 80% of the native time, and this CPU has bfloat16 instructions: bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16), a change to the numerics) with the model (MobileNetV3, called at train.py:33) and its input in channels_last (model.to(memory_format=torch.channels_last), input.to(memory_format=torch.channels_last); a .view() of their outputs becomes .reshape()), oneDNN's fast path for convolutions; it shortens the model's 39 other convolutions, not its 13 depthwise ones", "channels_last alone, which keeps float32", 0, 13, "bf16_autocast,channels_last"},
		{"AVX2 only, stride-1 depthwise", []string{"avx2"}, 800, "convolutions take 80% of the native time: try the model", "put the model", 0, 13, "channels_last"},
		{"AVX2 only", []string{"avx2"}, 800, "convolutions take 80% of the native time: put the model and its input in channels_last", "", -1, 0, "channels_last"},
		{"unknown", nil, 800, "convolutions take 80% of the native time: put the model and its input in channels_last", "", -1, 0, "channels_last"},
		{"AVX512-BF16, convolutions half", bf16, 530, "convolutions take 53% of the native time, and this CPU has bfloat16 instructions: bf16 autocast", "channels_last", -1, 0, "bf16_autocast"},
		{"AVX2 only, convolutions half", []string{"avx2"}, 530, "convolutions take 53% of the native time: try the model and its input in channels_last", "put the model", -1, 0, "channels_last"},
	} {
		ops := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::mkldnn_convolution", HostSelfUs: c.conv}, {Name: "aten::add_", HostSelfUs: 1000 - c.conv}}, BackwardCalls: 100}
		var models []rundir.ModelCall
		if c.depthwise >= 0 {
			models = []rundir.ModelCall{{Class: "MobileNetV3", File: "train.py", Line: 33, Calls: 1, Convs: 52, Depthwise: c.depthwise + c.stride1, StridedDepthwise: c.depthwise}}
		}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{},
			in: Analyses{Ops: ops, Run: &runevidence.RunEvidence{Env: &runevidence.Env{CPUFeatures: c.features}, Models: models}}}
		s.findings()
		f := findRule(s.d.Findings, "cpu.native")
		if f == nil || !strings.HasPrefix(f.Change, c.lead) || c.none != "" && strings.Contains(f.AllChanges(), c.none) {
			t.Errorf("%s: change %+v, want it to start %q without %q", c.name, f, c.lead, c.none)
		}
		if got := strings.Join(slices.Sorted(maps.Keys(f.Try)), ","); got != c.try {
			t.Errorf("%s: try %v, want %s (the lead change, made by the agent)", c.name, f.Try, c.try)
		}
		// channels_last shortens the convolutions only, by layoutCut
		if want := 1000 * 0.9 * layoutCut * c.conv / 1000; c.depthwise > 0 && math.Abs(f.SavingUs-want) > 1 {
			t.Errorf("%s: saves %.0f µs, want %.0f (layoutCut of the convolutions' share)", c.name, f.SavingUs, want)
		}
		// alone on dense convolutions, little: oneDNN runs them in either
		// layout (pytorch/examples' DCGAN, promised 1.98x, measured 1.0x)
		if want := 1000 * 0.9 * denseLayoutCut * c.conv / 1000; c.try == "channels_last" && c.depthwise <= 0 && math.Abs(f.SavingUs-want) > 1 {
			t.Errorf("%s: saves %.0f µs, want %.0f (denseLayoutCut of the convolutions' share)", c.name, f.SavingUs, want)
		}
		// bf16 autocast shortens the other convolutions only
		if want := 1000 * 0.9 * rule("cpu.native").Factor * c.conv / 1000 * 39 / 52; c.stride1 > 0 && slices.Contains(c.features, "avx512_bf16") && math.Abs(f.SavingUs-want) > 1 {
			t.Errorf("%s: saves %.0f µs, want %.0f (the other convolutions' share)", c.name, f.SavingUs, want)
		}
	}
}

// A model with convolutions first called with gradients off (a
// distillation's teacher) whose forward holds over half the busy samples
// gets bf16 autocast and channels_last alone, tried as "frozen"; with less
// of the samples, or called with gradients, both models get them.
func TestCPUFrozenModel(t *testing.T) {
	bf16 := []string{"avx2", "avx512f", "avx512_bf16"}
	for _, c := range []struct {
		name   string
		noGrad bool
		share  float64 // of the hot samples in the teacher's forward, %
		frozen bool
	}{
		{"teacher", true, 92, true},
		{"teacher, a small share", true, 40, false},
		{"called with gradients", false, 92, false},
	} {
		ops := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::mkldnn_convolution", HostSelfUs: 800}, {Name: "aten::add_", HostSelfUs: 200}}, BackwardCalls: 100}
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUFeatures: bf16}, Models: []rundir.ModelCall{
			{Class: "DeepNN", File: "kd.py", Line: 93, Calls: 1, Convs: 4, Layers: 6, NoGrad: c.noGrad},
			{Class: "LightNN", File: "kd.py", Line: 96, Calls: 1, Convs: 2, Layers: 4}}}
		py := &runevidence.PythonEvidence{Hot: []runevidence.Line{{File: "kd.py", Line: 46, Func: "DeepNN.forward", Pct: c.share}, {File: "kd.py", Line: 71, Func: "LightNN.forward", Pct: 100 - c.share}}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, py: py, in: Analyses{Ops: ops, Run: run}}
		s.findings()
		f := findRule(s.d.Findings, "cpu.native")
		if f == nil {
			t.Fatalf("%s: no cpu.native", c.name)
		}
		alone := strings.Contains(f.Change, "of DeepNN (called at kd.py:93 with gradients off") && strings.Contains(f.Change, "around that call alone")
		if want := map[bool]string{true: "frozen", false: "true"}[c.frozen]; alone != c.frozen || f.Try["bf16_autocast"] != want || f.Try["channels_last"] != want {
			t.Errorf("%s: try %v, change %q", c.name, f.Try, f.Change)
		}
	}
}

// Large matmuls under bf16 autocast lead over unfused attention with a
// smaller share (a ViT over 65 tokens: matmuls 70%, attention 10%, 2.18x
// under bf16 autocast, none through the fused kernel), around the call of
// the model, which the agent's bf16 autocast tries; without bfloat16
// instructions the attention leads, and with no model with layers called
// (a ReLU's call alone) none is named or tried.
func TestAttentionFollowsLargeMatmuls(t *testing.T) {
	bf16 := []string{"avx2", "avx512f", "avx512_bf16"}
	vit := rundir.ModelCall{Class: "ViT", Module: "vit_pytorch.vit", File: "train.py", Line: 19, Calls: 1, Layers: 26}
	relu := rundir.ModelCall{Class: "ReLU", Module: "torch.nn.modules.activation", File: "main.py", Line: 69, Calls: 2}
	for _, c := range []struct {
		name     string
		features []string
		model    rundir.ModelCall
		lead     string
		try      string
	}{
		{"bf16", bf16, vit, "matmuls take 90% of the native time in calls of 722 µs on average, already near this CPU's speed in oneDNN/MKL (a larger batch gains them nothing per sample): bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16) around the call of the model, ViT, called at train.py:19, and its loss)", "true"},
		{"no bf16", []string{"avx2"}, vit, "attention runs unfused", ""},
		{"no layered model", bf16, relu, "matmuls take 90% of the native time in calls of 722 µs on average, already near this CPU's speed in oneDNN/MKL (a larger batch gains them nothing per sample): bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)): this CPU", ""},
	} {
		ops := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::bmm", HostSelfUs: 100, Calls: 1}, {Name: "autograd::engine::evaluate_function: SoftmaxBackward0", HostSelfUs: 20},
			{Name: "aten::addmm", HostSelfUs: 800, Calls: 1}, {Name: "aten::add", HostSelfUs: 80}}, BackwardCalls: 10}
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUFeatures: c.features}, Models: []rundir.ModelCall{c.model}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: ops, Run: run}}
		s.findings()
		f := findRule(s.d.Findings, "cpu.native")
		if f == nil || !strings.HasPrefix(f.Change, c.lead) || !strings.Contains(f.AllChanges(), "scaled_dot_product_attention") || f.Try["bf16_autocast"] != c.try {
			t.Errorf("%s: %+v, want it to start %q, attention named, try bf16 %q", c.name, f, c.lead, c.try)
		}
	}
}

// Matmuls and convolutions that lead only together, in large calls (an
// Autoformer's feed-forward is Conv1d with kernel 1), get bf16 autocast on
// a CPU with bfloat16 instructions, not torch.compile; small calls, no
// bf16 instructions, or a strided depthwise convolution keep compile.
func TestLargeDenseOpsTogether(t *testing.T) {
	bf16 := []string{"avx2", "avx512f", "avx512_bf16"}
	model := rundir.ModelCall{Class: "Model", Module: "models.Autoformer", File: "exp.py", Line: 125, Calls: 1, Layers: 30, Convs: 4}
	dw := model
	dw.Depthwise, dw.StridedDepthwise = 2, 2
	for _, c := range []struct {
		name     string
		features []string
		model    rundir.ModelCall
		calls    int // of each matmul and convolution row
		want     string
	}{
		{"large calls", bf16, model, 1, "matmuls (30%) and convolutions (25%) take 55% of the native time together, in calls of 2.77 ms on average"},
		{"small calls", bf16, model, 100, "no op family dominates"},
		{"no bf16", []string{"avx2"}, model, 1, "no op family dominates"},
		{"strided depthwise", bf16, dw, 1, "no op family dominates"},
	} {
		ops := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::mm", HostSelfUs: 3000, Calls: c.calls}, {Name: "aten::convolution_backward", HostSelfUs: 2500, Calls: c.calls},
			{Name: "aten::mul", HostSelfUs: 2500, Calls: 10}, {Name: "aten::cat", HostSelfUs: 2000, Calls: 10}}, BackwardCalls: 10}
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUFeatures: c.features}, Models: []rundir.ModelCall{c.model}}
		s := &state{p: Default, step: 10000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: ops, Run: run}}
		s.findings()
		f := findRule(s.d.Findings, "cpu.native")
		if f == nil || !strings.HasPrefix(f.Change, c.want) {
			t.Fatalf("%s: %+v, want it to start %q", c.name, f, c.want)
		}
		if together := strings.HasPrefix(c.want, "matmuls"); together != (f.Try["bf16_autocast"] == "true") || together && !strings.Contains(f.Change, "around the call of the model, Model, called at exp.py:125") {
			t.Errorf("%s: try %v, change %q: want bf16 tried and the model named only with the large calls", c.name, f.Try, f.Change)
		}
	}
}

// Matmuls that are mostly products of a sparse tensor (a GCN's adjacency
// and features) get no batching or bf16 advice and no promised saving;
// dense matmuls keep both.
func TestCPUSparseProducts(t *testing.T) {
	for _, c := range []struct {
		name   string
		sparse float64 // host total of aten::_sparse_addmm, µs
		want   string
	}{
		{"sparse", 700, "products of a sparse tensor"},
		{"dense", 0, "fewer or larger matmuls (batching)"},
		{"a little sparse", 200, "fewer or larger matmuls (batching)"},
	} {
		ops := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::_sparse_addmm", HostTotalUs: c.sparse, HostSelfUs: 1},
			{Name: "aten::addmm", HostSelfUs: 700, HostTotalUs: 700}, {Name: "aten::relu", HostSelfUs: 300, HostTotalUs: 300}}, BackwardCalls: 10}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: ops}}
		s.findings()
		f := findRule(s.d.Findings, "cpu.native")
		if f == nil || !strings.Contains(f.Change, c.want) {
			t.Fatalf("%s: %+v, want %q", c.name, f, c.want)
		}
		if sparse := c.want == "products of a sparse tensor"; (f.SavingUs == 0) != sparse {
			t.Errorf("%s: saving %v µs, want none only for sparse products", c.name, f.SavingUs)
		}
	}
}

// The CPU change follows the ops that take the native time.
func TestCPUChangeFollowsOps(t *testing.T) {
	// training steps (a backward ran) unless inference() says otherwise
	rows := func(rs ...optable.OpRow) *optable.OpTable { return &optable.OpTable{Rows: rs, BackwardCalls: 100} }
	inference := func(t *optable.OpTable) *optable.OpTable { t.BackwardCalls = 0; return t }
	for _, c := range []struct {
		name string
		ops  *optable.OpTable
		want string
	}{
		{"conv", rows(optable.OpRow{Name: "aten::mkldnn_convolution", HostSelfUs: 600}, optable.OpRow{Name: "aten::add_", HostSelfUs: 400}), "channels_last"},
		{"gemm", rows(optable.OpRow{Name: "aten::addmm", HostSelfUs: 800}, optable.OpRow{Name: "aten::relu", HostSelfUs: 200}), "matmuls take 80% of the native time and already run in oneDNN/MKL: fewer or larger matmuls (batching); or bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)) on CPUs with AVX512-BF16/AMX: half the bytes per value (try it: small layers can get slower); or an accelerator"},
		// matmuls of 0.8 ms a call are large already: no batching
		{"large gemm", rows(optable.OpRow{Name: "aten::addmm", HostSelfUs: 800, Calls: 1}, optable.OpRow{Name: "aten::relu", HostSelfUs: 200, Calls: 1}),
			"matmuls take 80% of the native time in calls of 800 µs on average, already near this CPU's speed in oneDNN/MKL (a larger batch gains them nothing per sample): bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)) on CPUs with AVX512-BF16/AMX: half the bytes per value (try it: small layers can get slower); or an accelerator"},
		// half the time elsewhere: what fusion could save is named too
		{"gemm and the rest", rows(optable.OpRow{Name: "aten::addmm", HostSelfUs: 500}, optable.OpRow{Name: "aten::mul", HostSelfUs: 100}, optable.OpRow{Name: "aten::native_layer_norm", HostSelfUs: 250}, optable.OpRow{Name: "aten::relu", HostSelfUs: 150}),
			"matmuls take 50% of the native time and already run in oneDNN/MKL: fewer or larger matmuls (batching); or bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)) on CPUs with AVX512-BF16/AMX: half the bytes per value (try it: small layers can get slower); or an accelerator; then the other 50% (largest: aten::native_layer_norm 25%, aten::relu 15%): torch.compile(model) fuses elementwise, normalization and softmax ops (try it: compiling costs seconds to minutes before the first step, and the gain depends on the model; bottleneck diff compares the two runs)"},
		// dropout's masks at 25%: named after the matmul change; at 10% not
		{"gemm and dropout", rows(optable.OpRow{Name: "aten::addmm", HostSelfUs: 500}, optable.OpRow{Name: "aten::bernoulli_", HostSelfUs: 250}, optable.OpRow{Name: "aten::relu", HostSelfUs: 250}),
			"; then dropout's random masks (aten::dropout: its bernoulli_ draws, scaling and multiply) take 25% of the native time"},
		// at 40%, counted by the op around the masks (its scaling and
		// multiply too), fewer masks lead (PyG's GCN: its input's dropout
		// off 3.9x, compiled 1.65x)
		{"dropout first", rows(optable.OpRow{Name: "aten::dropout", HostSelfUs: 5, HostTotalUs: 400}, optable.OpRow{Name: "aten::bernoulli_", HostSelfUs: 300, HostTotalUs: 300}, optable.OpRow{Name: "aten::mul", HostSelfUs: 200, HostTotalUs: 200},
			optable.OpRow{Name: "aten::scatter_add_", HostSelfUs: 150, HostTotalUs: 150}, optable.OpRow{Name: "aten::mm", HostSelfUs: 150, HostTotalUs: 150}, optable.OpRow{Name: "aten::add", HostSelfUs: 195, HostTotalUs: 195}),
			"dropout's random masks (aten::dropout: its bernoulli_ draws, scaling and multiply) take 40% of the native time, and drawing random numbers is slow on a CPU (~13 ns an element here; torch.compile's code draws them about twice as fast): mask fewer elements: an input that is mostly zeros (sparse features) keeps its meaning with dropout on its nonzero values only (x.to_sparse(), dropout on its values()), else a lower p, or dropout only where the model overfits; then no op family dominates"},
		// the same with no backward in the steps: a model left in training
		// mode for inference, and model.eval() comes first
		{"inference with dropout", inference(rows(optable.OpRow{Name: "aten::addmm", HostSelfUs: 500}, optable.OpRow{Name: "aten::bernoulli_", HostSelfUs: 250}, optable.OpRow{Name: "aten::relu", HostSelfUs: 250})),
			"dropout draws random masks (aten::bernoulli_, native_dropout: 25% of the native time) though no backward runs in these steps: the model is in training mode: call model.eval()"},
		{"inference, dropout off", inference(rows(optable.OpRow{Name: "aten::addmm", HostSelfUs: 800}, optable.OpRow{Name: "aten::dropout", HostSelfUs: 5}, optable.OpRow{Name: "aten::relu", HostSelfUs: 195})),
			"matmuls take 80% of the native time and already run in oneDNN/MKL: fewer or larger matmuls (batching); or bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)) on CPUs with AVX512-BF16/AMX: half the bytes per value (try it: small layers can get slower); or an accelerator"},
		// attention by hand: softmax (its backward row only, the forward's
		// fell out of the top rows) and bmm; not with a fused op, not a
		// classifier's softmax without bmm
		{"unfused attention", rows(optable.OpRow{Name: "aten::bmm", HostSelfUs: 300}, optable.OpRow{Name: "autograd::engine::evaluate_function: SoftmaxBackward0", HostSelfUs: 50}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 650}),
			"attention runs unfused (softmax and batched matmuls: 35% of the native time): torch.nn.functional.scaled_dot_product_attention"},
		{"fused attention", rows(optable.OpRow{Name: "aten::bmm", HostSelfUs: 300}, optable.OpRow{Name: "aten::_scaled_dot_product_flash_attention_for_cpu", HostSelfUs: 50}, optable.OpRow{Name: "aten::softmax", HostSelfUs: 50}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 600}), "take 90% of the native time"},
		{"classifier softmax", rows(optable.OpRow{Name: "aten::_softmax", HostSelfUs: 300}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 700}), "take 70% of the native time"},
		// an LSTM: oneDNN's RNN layer and its backward; not torch.compile,
		// nor shorter sequences or a wider batch (no gain per sample)
		{"lstm", rows(optable.OpRow{Name: "aten::mkldnn_rnn_layer_backward", HostSelfUs: 500}, optable.OpRow{Name: "aten::mkldnn_rnn_layer", HostSelfUs: 250}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 250}),
			"recurrent layers (LSTM/GRU/RNN) take 75% of the native time and already run as oneDNN's fused RNN, one time step after another, where a wider batch or shorter sequences do not lower the time per sample: an accelerator runs them as cuDNN's RNN; or bf16 autocast"},
		// synthetic inputs drawn every step; a layer's init or a shuffle's
		// randperm at 10% does not lead
		{"random inputs", rows(optable.OpRow{Name: "aten::normal_", HostSelfUs: 350}, optable.OpRow{Name: "aten::uniform_", HostSelfUs: 250}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 300}, optable.OpRow{Name: "aten::add", HostSelfUs: 100}),
			"drawing random numbers (torch.randn/rand/randint/randn_like: aten::normal_, uniform_, random_) takes 60% of the native time: make synthetic inputs once"},
		{"a little random", rows(optable.OpRow{Name: "aten::randperm", HostSelfUs: 100}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 900}), "take 90% of the native time and already run in oneDNN/MKL"},
		// neither family reaches 40%: no conv or matmul advice
		{"spread", rows(optable.OpRow{Name: "aten::addmm", HostSelfUs: 300}, optable.OpRow{Name: "aten::conv2d", HostSelfUs: 300}, optable.OpRow{Name: "aten::mul", HostSelfUs: 500}), "no op family dominates"},
		// already compiled: no advice to compile
		{"compiled, spread", rows(optable.OpRow{Name: "Torch-Compiled Region: 0/0", HostSelfUs: 10}, optable.OpRow{Name: "CompiledFunction", HostSelfUs: 20}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 300}, optable.OpRow{Name: "aten::conv2d", HostSelfUs: 300}, optable.OpRow{Name: "aten::mul", HostSelfUs: 500}),
			"no op family dominates the native time (largest: aten::mul 44%, aten::addmm 27%, aten::conv2d 27%): the model already runs under torch.compile: look for graph breaks"},
		{"not compiled, spread", rows(optable.OpRow{Name: "aten::addmm", HostSelfUs: 300}, optable.OpRow{Name: "aten::conv2d", HostSelfUs: 300}, optable.OpRow{Name: "aten::mul", HostSelfUs: 500}), "no op family dominates the native time (largest: aten::mul 45%, aten::addmm 27%, aten::conv2d 27%): torch.compile(model) fuses its elementwise, normalization and softmax ops and the many small ones (try it: compiling costs seconds to minutes before the first step, and the gain depends on the model; bottleneck diff compares the two runs)"},
		// the same LSTM called once per time step in a loop: once on the
		// whole sequence; two layers called once each are not that
		{"lstm loop", rows(optable.OpRow{Name: "aten::mkldnn_rnn_layer_backward", HostSelfUs: 500}, optable.OpRow{Name: "aten::lstm", Calls: 50, HostSelfUs: 50}, optable.OpRow{Name: "aten::mkldnn_rnn_layer", HostSelfUs: 200}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 250}),
			"recurrent layers (LSTM/GRU/RNN) take 75% of the native time, called 50 times a step: a loop that feeds a layer one time step per call"},
		{"lstm cells", rows(optable.OpRow{Name: "aten::lstm_cell", Calls: 100, HostSelfUs: 800}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 200}), "called 100 times a step"},
		{"two lstm layers", rows(optable.OpRow{Name: "aten::mkldnn_rnn_layer_backward", HostSelfUs: 500}, optable.OpRow{Name: "aten::lstm", Calls: 2, HostSelfUs: 50}, optable.OpRow{Name: "aten::mkldnn_rnn_layer", HostSelfUs: 200}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 250}),
			"recurrent layers (LSTM/GRU/RNN) take 75% of the native time and already run as oneDNN's fused RNN"},
		{"small lstm", rows(optable.OpRow{Name: "aten::lstm", HostSelfUs: 300}, optable.OpRow{Name: "aten::conv2d", HostSelfUs: 300}, optable.OpRow{Name: "aten::mul", HostSelfUs: 500}), "no op family dominates"},
		// graph message passing: out.index_add_(0, dst, h[src]); the
		// gather's backward (IndexBackward0's total: index_put_) and the
		// sum into rows are each named
		{"message passing", rows(optable.OpRow{Name: "aten::_index_put_impl_", HostSelfUs: 380}, optable.OpRow{Name: "IndexBackward0", HostSelfUs: 1, HostTotalUs: 385},
			optable.OpRow{Name: "aten::index", HostSelfUs: 170}, optable.OpRow{Name: "aten::index_select", HostSelfUs: 110}, optable.OpRow{Name: "aten::scatter_add_", HostSelfUs: 85}, optable.OpRow{Name: "aten::mm", HostSelfUs: 90}, optable.OpRow{Name: "aten::add", HostSelfUs: 45}),
			"gathers and scatters by a tensor of indices (aten::index, index_select, index_add_, scatter_add_, index_put_) take 85% of the native time: they move memory more than they compute, and torch.compile does little for them; then the backward of x[idx] (IndexBackward0: index_put_ with accumulate, 44% of the native time) is the slowest of them: x.index_select(0, idx)"},
		// lookups by index_select, no x[idx] backward, no sum into rows:
		// neither rewrite
		{"gathers alone", rows(optable.OpRow{Name: "aten::index_select", HostSelfUs: 600}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 300}, optable.OpRow{Name: "aten::add", HostSelfUs: 100}),
			"take 60% of the native time: they move memory more than they compute, and torch.compile does little for them; then the other 40%"},
		// a full sort to take the top k: topk; a shuffle's sort at 10% not
		{"sort", rows(optable.OpRow{Name: "aten::sort", HostSelfUs: 890}, optable.OpRow{Name: "aten::mm", HostSelfUs: 60}, optable.OpRow{Name: "aten::copy_", HostSelfUs: 50}),
			"sorting (aten::sort: torch.sort, argsort, msort) takes 89% of the native time: where only the first k of each sorted row are used (argsort(...)[:, :k]), torch.topk(x, k)"},
		// the sorts inside an embedding's dense backward are not the
		// program's: no topk
		{"an embedding's sorts", rows(optable.OpRow{Name: "aten::sort", HostSelfUs: 500, HostTotalUs: 520}, optable.OpRow{Name: "aten::_embedding_bag_dense_backward", HostSelfUs: 50, HostTotalUs: 570},
			optable.OpRow{Name: "aten::_embedding_bag", HostSelfUs: 300}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 150}), "no op family dominates the native time (largest: aten::sort 50%, aten::_embedding_bag 30%"},
		{"a little sorting", rows(optable.OpRow{Name: "aten::sort", HostSelfUs: 100}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 900}), "take 90% of the native time and already run in oneDNN/MKL"},
		// gathers below 40%: the matmuls lead, nothing about indices
		{"few gathers", rows(optable.OpRow{Name: "aten::index", HostSelfUs: 300}, optable.OpRow{Name: "aten::addmm", HostSelfUs: 700}), "take 70% of the native time and already run in oneDNN/MKL"},
	} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: c.ops}}
		s.findings()
		// the matmul changes are whole: nothing about the rest at 80%
		f := s.d.Findings[0]
		if !strings.Contains(f.AllChanges(), c.want) || strings.HasPrefix(c.want, "matmuls") && f.AllChanges() != c.want {
			t.Errorf("%s: %s, want %q", c.name, f.AllChanges(), c.want)
		}
		if strings.Contains(f.AllChanges(), "dropout") != strings.Contains(c.want, "dropout") || strings.Contains(f.AllChanges(), "scaled_dot_product") != strings.Contains(c.want, "scaled_dot_product") {
			t.Errorf("%s: dropout or attention named or not: %s", c.name, f.AllChanges())
		}
		if msg := c.name == "message passing"; strings.Contains(f.AllChanges(), "sparse matmul") != msg || strings.Contains(f.AllChanges(), "index_select(0, idx)") != msg {
			t.Errorf("%s: the x[idx] backward or the sparse matmul named or not: %s", c.name, f.AllChanges())
		}
	}
}

// Matmuls of a model called many times a step on one sample each (a
// seq2seq decoder once a token, one pair a step): give each call many
// rows, and no bf16 autocast (1.45x slower on that tutorial); not when
// another model with layers got a batch (SAC's Q-networks beside the
// actor that steps the environment on one observation), nor when the
// model runs once a step.
func TestOneSampleMatmuls(t *testing.T) {
	decoder := rundir.ModelCall{Class: "AttnDecoderRNN", File: "s2s.py", Line: 216, Calls: 7, Layers: 3, Input: []int64{1, 1}}
	critic := rundir.ModelCall{Class: "SoftQNetwork", File: "sac.py", Line: 259, Calls: 1, Layers: 3, Input: []int64{256, 3}}
	for _, c := range []struct {
		name    string
		models  []rundir.ModelCall
		linears int // a step
		want    bool
	}{
		{"a decoder once a token", []rundir.ModelCall{decoder}, 36, true},
		{"beside a batched model", []rundir.ModelCall{decoder, critic}, 36, false},
		{"once a step", []rundir.ModelCall{decoder}, 3, false},
	} {
		ops := &optable.OpTable{Steps: 3, BackwardCalls: 100, Rows: []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 3 * 800, Calls: 3 * 100},
			{Name: "aten::linear", HostSelfUs: 3, Calls: 3 * c.linears}, {Name: "aten::relu", HostSelfUs: 3 * 200, Calls: 3 * 50}}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{},
			in: Analyses{Ops: ops, Run: &runevidence.RunEvidence{Models: c.models}}}
		s.findings()
		f := s.d.Findings[0]
		got := strings.HasPrefix(f.Change, "matmuls take 80% of the native time, each on one sample's data: the model (AttnDecoderRNN, called at s2s.py:216) runs about 12 times a step")
		if got != c.want || got && strings.Contains(f.AllChanges(), "bf16") {
			t.Errorf("%s: %v, want %v: %s", c.name, got, c.want, f.AllChanges())
		}
	}
}

// An inference loop over a DataLoader with batch_size=1 gets "batch the
// samples" first, in the CPU finding and in the Python one; so does a
// backward with no optimizer over it (input gradients: pytorch/tutorials'
// FGSM attack), without bf16 autocast for its convolutions (1.2-1.3x
// slower on one image). Not in training with an optimizer (the batch is
// a hyperparameter there: oneSampleTraining reads the model), not with
// batches of 8, not for a single sample run before the loop, not for a
// backward by hand with no DataLoader (DeepDream's one image).
func TestOneSampleInference(t *testing.T) {
	one, eight := 1, 8
	ops := func(backward int, conv bool) *optable.OpTable {
		mm := "aten::addmm"
		if conv {
			mm = "aten::mkldnn_convolution"
		}
		return &optable.OpTable{Rows: []optable.OpRow{{Name: mm, HostSelfUs: 800}, {Name: "aten::relu", HostSelfUs: 200}}, BackwardCalls: backward}
	}
	const inference, gradients = "inference on one sample per step", "a backward on one sample per step (DataLoader(TensorDataset, batch_size=1), no torch.optim optimizer"
	sgd := []rundir.Optimizer{{Class: "SGD", Params: 4}}
	for _, c := range []struct {
		name       string
		ops        *optable.OpTable
		loader     *runevidence.Loader
		optimizers []rundir.Optimizer
		want       string // the changes' start; "" for neither
	}{
		{"inference, batch_size=1", ops(0, false), &runevidence.Loader{Dataset: "TensorDataset", BatchSize: &one, Batches: 300}, nil, inference},
		{"training, batch_size=1", ops(100, false), &runevidence.Loader{Dataset: "TensorDataset", BatchSize: &one, Batches: 300}, sgd, ""},
		{"input gradients, batch_size=1", ops(100, false), &runevidence.Loader{Dataset: "TensorDataset", BatchSize: &one, Batches: 300}, nil, gradients},
		{"input gradients of convolutions", ops(100, true), &runevidence.Loader{Dataset: "TensorDataset", BatchSize: &one, Batches: 300}, nil, gradients},
		{"input gradients, batch_size=8", ops(100, false), &runevidence.Loader{Dataset: "TensorDataset", BatchSize: &eight, Batches: 300}, nil, ""},
		{"one image optimised by hand", ops(100, true), nil, nil, ""},
		{"inference, batch_size=8", ops(0, false), &runevidence.Loader{Dataset: "TensorDataset", BatchSize: &eight, Batches: 300}, nil, ""},
		{"a probe", ops(0, false), &runevidence.Loader{Dataset: "TensorDataset", BatchSize: &one, Batches: 1}, nil, ""},
	} {
		run := &runevidence.RunEvidence{Optimizers: c.optimizers}
		if c.loader != nil {
			run.Loaders = []runevidence.Loader{*c.loader}
		}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.6, Host: 0.3}, d: &Diagnosis{}, in: Analyses{Ops: c.ops, Run: run}}
		s.findings()
		for _, rule := range []string{"cpu.native", "host.python"} {
			f := findingOf(s.d, rule)
			if f == nil {
				t.Fatalf("%s: no %s finding: %+v", c.name, rule, s.d.Findings)
			}
			want := c.want
			if rule == "host.python" && want == gradients {
				want = "a backward on one sample per step: batch the samples"
			}
			if got := strings.HasPrefix(f.AllChanges(), cmp.Or(want, inference)); got != (want != "") ||
				want == "" && strings.HasPrefix(f.AllChanges(), gradients) {
				t.Errorf("%s: %s leads with batching: %v, want %q: %s", c.name, rule, got, want, f.AllChanges())
			}
			if rule == "cpu.native" && c.want != "" && strings.Contains(f.AllChanges(), "bf16 autocast (") {
				t.Errorf("%s: bf16 offered for one sample a step: %s", c.name, f.AllChanges())
			}
		}
		// on a device, the launch-bound finding leads with it too
		if c.want != inference && c.want != "" {
			continue
		}
		s = &state{p: Default, step: 1000, device: true, share: map[Class]float64{Launch: 0.5}, d: &Diagnosis{}, in: Analyses{Ops: c.ops, Run: run}}
		s.findings()
		f := findingOf(s.d, "host.launch")
		want := c.want == inference
		if f == nil || strings.HasPrefix(f.AllChanges(), "inference on one sample per step (DataLoader") != want ||
			want && (!strings.Contains(f.AllChanges(), "each kernel fills more of the device; then replay the step's kernels from a CUDA graph") || strings.Contains(f.AllChanges(), "on a CPU")) {
			t.Errorf("%s: launch finding %+v", c.name, f)
		}
	}
}

// A model called on one sample per step without a DataLoader of one (a
// generation loop: one token of one prompt per call) gets "batch the
// samples" first too, and not the large matmuls' "a larger batch gains
// them nothing per sample": a matmul on one row reads all its weights for
// one sample (GPT-2 generating for 12 prompts one at a time: 4.5-5.4x
// the time of one batch). Not in training, nor with steps that are not
// the model's calls, nor without the inputs' shapes.
func TestOneSampleModelCalls(t *testing.T) {
	ops := func(backward int) *optable.OpTable {
		return &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 800, Calls: 1}, {Name: "aten::relu", HostSelfUs: 200, Calls: 1}}, BackwardCalls: backward}
	}
	tokens := &rundir.StepInput{Step: 569, Shapes: [][]int64{{1, 1}, {1, 1}}}
	for _, c := range []struct {
		name string
		ops  *optable.OpTable
		run  runevidence.RunEvidence
		want bool
	}{
		{"generation", ops(0), runevidence.RunEvidence{StepSource: "forward", OneSample: tokens}, true},
		{"training", ops(100), runevidence.RunEvidence{StepSource: "forward", OneSample: tokens}, false},
		{"optimizer steps", ops(0), runevidence.RunEvidence{StepSource: "optimizer", OneSample: tokens}, false},
		{"batched", ops(0), runevidence.RunEvidence{StepSource: "forward"}, false},
	} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.6, Host: 0.3}, d: &Diagnosis{}, in: Analyses{Ops: c.ops, Run: &c.run}}
		s.findings()
		f := findingOf(s.d, "cpu.native")
		if f == nil {
			t.Fatalf("%s: no cpu.native finding: %+v", c.name, s.d.Findings)
		}
		ch := f.AllChanges()
		if got := strings.HasPrefix(ch, "inference on one sample per model call (every tensor argument of the step's call has a first dimension of 1: [1, 1] at step 569"); got != c.want {
			t.Errorf("%s: leads with batching: %v, want %v: %s", c.name, got, c.want, ch)
		}
		if c.want == strings.Contains(ch, "gains them nothing per sample") {
			t.Errorf("%s: %s", c.name, ch)
		}
	}
}

// The optimizer finding needs the region to be the update's own time (no
// closure running the model inside), and its advice follows what the
// update already uses.
func TestOptimizerFinding(t *testing.T) {
	adam := regions.Region{Name: "Optimizer.step#Adam.step", Calls: 1, TotalUs: 300}
	// the dense backward of an embedding: 60 µs per step against a 300 µs
	// update, or 5 µs (a small table)
	dense := func(us float64) *optable.OpTable {
		return &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::_embedding_bag_dense_backward", Calls: 1, HostTotalUs: us, DeviceTotalUs: us}}}
	}
	// the run's evidence: the largest parameter of the Adam optimizer and
	// its share of the elements
	table := func(shape []int64, numel, of int64, sparse bool) *runevidence.RunEvidence {
		return &runevidence.RunEvidence{Optimizers: []rundir.Optimizer{{Class: "Adam", Numel: of,
			Largest: []rundir.OptimizerParam{{Shape: shape, Numel: numel, SparseGrad: sparse}}}}}
	}
	// ... or only how many of its parameters had sparse gradients
	sparseGrads := func(n int) *runevidence.RunEvidence {
		e := table([]int64{1024, 1024}, 1<<20, 4<<20, false)
		e.Optimizers[0].SparseGrads = n
		return e
	}
	// ... and the rows of it the first step's batch touched
	touched := func(rows int64) *runevidence.RunEvidence {
		e := table([]int64{500000, 64}, 32e6, 32.01e6, false)
		e.Optimizers[0].Largest[0].GradRows = &rows
		return e
	}
	for _, c := range []struct {
		name       string
		region     regions.Region
		device     bool
		ops        *optable.OpTable
		run        *runevidence.RunEvidence
		rule, want string // "" silent
	}{
		{"per-parameter", adam, true, nil, nil, "host.optimizer", "foreach=True"},
		{"per-parameter on a CPU", adam, false, nil, nil, "host.optimizer", "not foreach=True"},
		// fused=True raises on CPU parameters before torch 2.4
		{"per-parameter on a CPU, torch 2.3", adam, false, nil, &runevidence.RunEvidence{Env: &runevidence.Env{Torch: "2.3.1+cpu"}}, "host.optimizer", "this run has 2.3.1+cpu, where fused=True raises on CPU parameters): upgrade torch"},
		{"per-parameter on a CPU, torch 2.4", adam, false, nil, &runevidence.RunEvidence{Env: &runevidence.Env{Torch: "2.4.0"}}, "host.optimizer", "fused=True (Adam, AdamW, SGD, Adagrad; on CPU in torch 2.4 and later)"},
		{"foreach", regions.Region{Name: "Optimizer.step#Adam.step", Calls: 1, TotalUs: 300, MultiTensor: true}, true, nil, nil, "host.optimizer", "torch.compile(optimizer.step)"},
		{"closure", regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 1, TotalUs: 800, Closure: true}, true, nil, nil, "", ""},
		// a closure whose update the trace tells apart (a CPU run): 300 µs
		// of 800 are the update's, 30 µs too few to name
		{"closure, update told", regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 1, TotalUs: 800, Closure: true, UpdateUs: 300}, false, nil, nil, "host.optimizer", "fused=True"},
		{"closure, small update", regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 1, TotalUs: 800, Closure: true, UpdateUs: 30}, false, nil, nil, "", ""},
		{"small share", regions.Region{Name: "Optimizer.step#Adam.step", Calls: 1, TotalUs: 50}, false, dense(60), nil, "", ""},
		// one slow call of four: the mean (275 µs) would fire, the median
		// call (50 µs) does not
		{"an outlier call", regions.Region{Name: "Optimizer.step#Adam.step", Calls: 4, TotalUs: 1100, MedianUs: 50}, false, nil, nil, "", ""},
		// once in ten recorded steps (a policy updated per episode): 30 µs
		// a step
		{"every tenth step", regions.Region{Name: "Optimizer.step#Adam.step", Calls: 1, TotalUs: 300}, false, nil, nil, "", ""},
		// a table holding most of the update's elements
		{"dense table, evidence", adam, false, dense(60), table([]int64{500000, 64}, 32e6, 32.01e6, false), "host.dense-embedding", "sparse=True"},
		{"dense table, trace only", adam, true, dense(60), nil, "host.dense-embedding", "SparseAdam"},
		{"dense table, a few rows touched", adam, false, dense(60), touched(12000), "host.dense-embedding", "sparse=True"},
		// a batch that looks up a third of the table: a sparse gradient
		// would hold nearly as many rows, and updates them more slowly
		{"dense table, most rows touched", adam, false, dense(60), touched(170000), "host.optimizer", "fused=True"},
		// a language model's embedding: one parameter among many
		{"small table, evidence", adam, false, dense(60), table([]int64{2000, 256}, 512000, 4.2e6, false), "host.optimizer", "fused=True"},
		{"small table, trace only", adam, false, dense(5), nil, "host.optimizer", "fused=True"},
		// already sparse: the largest parameter's gradient is sparse, and
		// fused=True would raise on it (facebookresearch/dlrm's SGD)
		{"sparse table", adam, false, dense(60), table([]int64{500000, 64}, 32e6, 32.01e6, true), "", ""},
		{"sparse table, not the largest", adam, true, nil, sparseGrads(2), "", ""},
		{"no sparse gradient", adam, true, nil, sparseGrads(0), "host.optimizer", "foreach=True"},
	} {
		s := &state{p: Default, step: 1000, steps: 1, device: c.device, share: map[Class]float64{}, d: &Diagnosis{},
			in: Analyses{Regions: &regions.Result{Regions: []regions.Region{c.region}}, Ops: c.ops, Run: c.run}}
		if strings.HasPrefix(c.name, "every tenth") {
			s.in.Window = &window.Result{Steps: make([]window.Step, 10)}
		}
		s.denseEmbeddingFinding()
		s.optimizerFinding()
		switch {
		case c.rule == "" && len(s.d.Findings) > 0:
			t.Errorf("%s: fired: %+v", c.name, s.d.Findings)
		case c.rule != "" && (len(s.d.Findings) != 1 || s.d.Findings[0].Rule != c.rule || !strings.Contains(s.d.Findings[0].AllChanges(), c.want)):
			t.Errorf("%s: %+v, want %s with a change with %q", c.name, s.d.Findings, c.rule, c.want)
		case c.region.Closure && c.rule != "" && !strings.HasPrefix(s.d.Findings[0].Title, "The update in Optimizer.step#AdamW.step, after its closure's forward and backward, takes 30% of the step"):
			t.Errorf("%s: title %q", c.name, s.d.Findings[0].Title)
		}
	}
}

// run --verify tries fused=True where host.optimizer's fix is that flag:
// an unfused update of a class with a fused form, on a CPU, in a torch
// that has it; not on a device, nor where the update is foreach or fused
// already, nor for a class without one, nor before torch 2.4.
func TestOptimizerTry(t *testing.T) {
	torch := func(v string) *runevidence.RunEvidence {
		return &runevidence.RunEvidence{Env: &runevidence.Env{Torch: v}}
	}
	for _, c := range []struct {
		name   string
		region regions.Region
		device bool
		run    *runevidence.RunEvidence
		try    bool
	}{
		{"Adam on a CPU", regions.Region{Name: "Optimizer.step#Adam.step", Calls: 1, TotalUs: 300}, false, torch("2.15.0+cpu"), true},
		{"AdamW, torch unknown", regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 1, TotalUs: 300}, false, nil, true},
		{"Adam, torch 2.3", regions.Region{Name: "Optimizer.step#Adam.step", Calls: 1, TotalUs: 300}, false, torch("2.3.1+cpu"), false},
		{"Adam on a device", regions.Region{Name: "Optimizer.step#Adam.step", Calls: 1, TotalUs: 300}, true, torch("2.15.0"), false},
		{"foreach Adam", regions.Region{Name: "Optimizer.step#Adam.step", Calls: 1, TotalUs: 300, MultiTensor: true}, false, nil, false},
		{"RMSprop, no fused form", regions.Region{Name: "Optimizer.step#RMSprop.step", Calls: 1, TotalUs: 300}, false, nil, false},
	} {
		s := &state{p: Default, step: 1000, steps: 1, device: c.device, share: map[Class]float64{}, d: &Diagnosis{},
			in: Analyses{Regions: &regions.Result{Regions: []regions.Region{c.region}}, Run: c.run}}
		s.optimizerFinding()
		f := findingOf(s.d, "host.optimizer")
		if f == nil {
			t.Fatalf("%s: no host.optimizer finding", c.name)
		}
		if got := f.Try["fused_optimizer"] == "true"; got != c.try || len(f.Try) > 1 {
			t.Errorf("%s: Try %v, want fused_optimizer=true: %v", c.name, f.Try, c.try)
		}
	}
}

// An unfused update that takes most of the native time leads the CPU
// change with its fix (AdamW over 6M parameters after a bf16 forward:
// 57% of the native time, and the change was "no op family dominates:
// torch.compile(model)"); not under 40%, nor a fused or foreach update.
func TestOptimizerLeadsCPUChange(t *testing.T) {
	ops := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::mm", HostSelfUs: 300}, {Name: "aten::copy_", HostSelfUs: 300}, {Name: "aten::div", HostSelfUs: 400}}, BackwardCalls: 10}
	for _, c := range []struct {
		name   string
		region regions.Region
		lead   bool
	}{
		{"unfused, 57% of the native time", regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 1, TotalUs: 513}, true},
		{"unfused, 30%", regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 1, TotalUs: 270}, false},
		{"fused", regions.Region{Name: "Optimizer.step#AdamW.step", Calls: 1, TotalUs: 513, MultiTensor: true}, false},
	} {
		s := &state{p: Default, step: 1000, steps: 1, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{},
			in: Analyses{Ops: ops, Regions: &regions.Result{Regions: []regions.Region{c.region}}}}
		s.findings()
		f := findingOf(s.d, "cpu.native")
		if f == nil {
			t.Fatalf("%s: no cpu.native finding", c.name)
		}
		if got := strings.HasPrefix(f.AllChanges(), "the optimizer's update ("); got != c.lead ||
			got && !strings.HasPrefix(f.AllChanges(), "the optimizer's update (Optimizer.step#AdamW.step) takes 57% of the native time and runs one parameter at a time: fused=True") {
			t.Errorf("%s: the update leads: %v, want %v: %s", c.name, got, c.lead, f.AllChanges())
		}
	}
}

// Oversubscription fires when the job's threads outnumber the CPUs and the
// CPU side of the step matters; otherwise it stays silent, and then more
// intra-op threads are advised only when CPUs are free. Where the step
// thread's wait for a CPU was measured, it is what is at stake, and a
// thread that hardly waited (the workers idle) keeps the rule silent.
func TestOversubscription(t *testing.T) {
	workers := func(n int) []runevidence.Loader { return []runevidence.Loader{{Dataset: "D", NumWorkers: &n}} }
	for _, c := range []struct {
		name                 string
		cpus, threads, ranks int
		loaders              []runevidence.Loader
		share                map[Class]float64
		wait                 float64 // the step thread's share of the window waiting for a CPU; -1 not measured
		workersBusy          float64 // the workers' samples' busy share; 0 not sampled
		fires                bool
		change, nativeChange string
	}{
		{"threads+workers on 2 CPUs", 2, 2, 1, workers(2), map[Class]float64{CPUCompute: 0.6, Input: 0.3}, -1, 0, true, "OMP_NUM_THREADS=1 (or torch.set_num_threads(1) at start) and DataLoader(num_workers=1)", ""},
		{"4 ranks × 8 threads on 8 CPUs", 8, 8, 4, nil, map[Class]float64{CPUCompute: 0.6}, -1, 0, true, "OMP_NUM_THREADS=2", ""},
		{"room to spare", 8, 4, 1, workers(2), map[Class]float64{CPUCompute: 0.6}, -1, 0, false, "", "torch.set_num_threads(6)"},
		{"exactly full", 2, 2, 1, nil, map[Class]float64{CPUCompute: 0.6}, -1, 0, false, "", "matmul"},
		{"GPU step, CPU side idle", 2, 4, 1, nil, map[Class]float64{GPUCompute: 0.9, Host: 0.01}, -1, 0, false, "", ""},
		{"workers busy: the step thread waited", 2, 2, 1, workers(2), map[Class]float64{CPUCompute: 0.6, Input: 0.3}, 0.26, 0, true, "OMP_NUM_THREADS=1", ""},
		{"workers idle: the step thread hardly waited", 2, 2, 1, workers(2), map[Class]float64{CPUCompute: 0.95}, 0.04, 0, false, "", ""},
		// makemore: 4 workers busy 0.8% of their samples, 2 threads on 2
		// CPUs, the step thread waiting 12%: 1 thread and 1 worker ran
		// no faster
		{"workers idle by their samples", 2, 2, 1, workers(4), map[Class]float64{CPUCompute: 0.8, Host: 0.14}, 0.12, 0.008, false, "", ""},
		{"workers busy by their samples", 2, 2, 1, workers(4), map[Class]float64{CPUCompute: 0.5, Input: 0.4}, 0.3, 0.9, true, "OMP_NUM_THREADS=1 (or torch.set_num_threads(1) at start) and DataLoader(num_workers=1)", ""},
	} {
		run := &runevidence.RunEvidence{Loaders: c.loaders, Env: &runevidence.Env{CPUs: c.cpus, NumThreads: c.threads, LocalRanks: c.ranks, LoadAverage: -1}}
		if c.workersBusy > 0 {
			run.Workers = &pyprofile.WorkerSummary{Processes: *c.loaders[0].NumWorkers, Samples: 1000, BusyShare: c.workersBusy, CPUShare: 1}
		}
		if c.wait >= 0 {
			th := &rundir.ThreadSched{WallS: 1, CPUS: 1 - c.wait, WaitS: c.wait, ProcessCPUS: 1.5}
			run.CPUWait = &rundir.CPUWait{Run: th, Window: th}
		}
		s := &state{p: Default, step: 1000, share: c.share, d: &Diagnosis{}, in: Analyses{
			Ops: &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 500}}}, Run: run}}
		s.findings()
		var over, native *Finding
		for i, f := range s.d.Findings {
			switch f.Rule {
			case "cpu.oversubscribed":
				over = &s.d.Findings[i]
			case "cpu.native":
				native = &s.d.Findings[i]
			}
		}
		if (over != nil) != c.fires || over != nil && !strings.Contains(over.AllChanges(), c.change) {
			t.Errorf("%s: oversubscription %+v, want fires=%v with %q", c.name, over, c.fires, c.change)
		}
		if over != nil && c.wait >= 0 && over.AtStakeUs != c.wait*1000 {
			t.Errorf("%s: at stake %v µs, want the wait's %v", c.name, over.AtStakeUs, c.wait*1000)
		}
		if native != nil && c.fires && strings.Contains(native.AllChanges(), "set_num_threads") {
			t.Errorf("%s: cpu.native asks for threads while oversubscribed: %s", c.name, native.AllChanges())
		}
		if c.nativeChange != "" && (native == nil || !strings.Contains(native.AllChanges(), c.nativeChange)) {
			t.Errorf("%s: cpu.native %+v, want %q", c.name, native, c.nativeChange)
		}
	}
}

// A cgroup's CPU quota makes the CPUs fewer than the process may run on,
// which torch sized its threads by: the change names the quota, and
// run --verify tries the thread count (mnist under a 1-CPU quota on 2:
// 1.48x with one thread).
func TestOversubscriptionUnderAQuota(t *testing.T) {
	th := &rundir.ThreadSched{WallS: 1, CPUS: 0.47, WaitS: 0.53, ProcessCPUS: 1}
	run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: 1, CPUQuota: 1, NumThreads: 2, LocalRanks: 1, LoadAverage: -1},
		CPUWait: &rundir.CPUWait{Run: th, Window: th, Steps: th}}
	s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.8, Host: 0.1}, d: &Diagnosis{}, in: Analyses{
		Ops: &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::convolution", HostSelfUs: 500}}}, Run: run}}
	s.oversubscriptionFinding()
	if len(s.d.Findings) != 1 {
		t.Fatalf("findings %+v, want cpu.oversubscribed", s.d.Findings)
	}
	f := s.d.Findings[0]
	if !strings.Contains(f.Change, "the 1 CPU its cgroup's quota allows (1.00 s of CPU time a second") || !strings.Contains(f.Change, "OMP_NUM_THREADS=1") || f.Try["threads"] != "1" {
		t.Errorf("change %q, try %v", f.Change, f.Try)
	}
	// no quota: the CPUs' count alone, and the workers' change is not one
	// the agent's thread count makes
	run.Env.CPUQuota, run.Env.CPUs = 0, 2
	n := 2
	run.Loaders = []runevidence.Loader{{Dataset: "D", NumWorkers: &n}}
	s.d.Findings = nil
	s.oversubscriptionFinding()
	if len(s.d.Findings) != 1 || strings.Contains(s.d.Findings[0].Change, "quota") || s.d.Findings[0].Try != nil {
		t.Errorf("without a quota: %+v", s.d.Findings)
	}
}

// More threads are never advised on a machine whose load leaves no CPU
// free, whatever the core count says (silent), and are on an idle one.
func TestThreadsAdviceNeedsAFreeCPU(t *testing.T) {
	for _, c := range []struct {
		load  float64
		fires bool
	}{{-1, true}, {0.1, true}, {0.6, false}, {7.5, false}} {
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: 2, NumThreads: 1, LocalRanks: 1, LoadAverage: c.load}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{
			Ops: &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::conv2d", HostSelfUs: 500}}}, Run: run}}
		s.findings()
		if got := strings.Contains(s.d.Findings[0].AllChanges(), "set_num_threads(2)"); got != c.fires {
			t.Errorf("load %.1f on 2 CPUs: thread advice %v, want %v: %s", c.load, got, c.fires, s.d.Findings[0].AllChanges())
		}
	}
}

// The advice to use the free CPUs names the program's own
// torch.set_num_threads call when it made the count.
func TestThreadsChangeNamesTheCall(t *testing.T) {
	one := 1
	for _, set := range []*rundir.ThreadCall{nil, {Call: "set_num_threads", Value: &one, File: "/home/u/train.py", Line: 3, Func: "<module>"}} {
		run := &runevidence.RunEvidence{SetThreads: set, Env: &runevidence.Env{CPUs: 2, NumThreads: 1, LocalRanks: 1, LoadAverage: -1}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{
			Ops: &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::conv2d", HostSelfUs: 500}}}, Run: run}}
		s.findings()
		f := s.d.Findings[0]
		want := "torch uses 1 thread and 1 CPU is free: torch.set_num_threads(2)"
		if set != nil {
			want = "torch uses 1 thread (torch.set_num_threads(1) at train.py:3) and 1 CPU is free: torch.set_num_threads(2)"
		}
		if f.Rule != "cpu.native" || !strings.HasPrefix(f.AllChanges(), want) {
			t.Errorf("set %v: %s %q, want %q", set != nil, f.Rule, f.AllChanges(), want)
		}
	}
}

// The GPU-bound change follows the kernel families that hold most of the
// kernel time, and keeps the general change when none does.
func TestKernelsChangeFollowsFamilies(t *testing.T) {
	const (
		elementwise = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"
		layerNorm   = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"
		tcGEMM      = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
		flash       = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, false, false, false, true, true, false>(pytorch_flash::Flash_fwd_params)"
	)
	rows := func(rs ...optable.KernelRow) *optable.KernelTable {
		kt := &optable.KernelTable{Rows: rs}
		for _, r := range rs {
			kt.TotalUs += r.TotalUs
		}
		return kt
	}
	for _, c := range []struct {
		name string
		kt   *optable.KernelTable
		want string
	}{
		{"memory-bound", rows(optable.KernelRow{Name: elementwise, TotalUs: 400}, optable.KernelRow{Name: layerNorm, TotalUs: 300}, optable.KernelRow{Name: tcGEMM, TotalUs: 300}), "torch.compile(model) fuses"},
		{"tensor-core matmuls", rows(optable.KernelRow{Name: tcGEMM, TotalUs: 800}, optable.KernelRow{Name: elementwise, TotalUs: 200}), "the model's own work"},
		{"attention", rows(optable.KernelRow{Name: flash, TotalUs: 600}, optable.KernelRow{Name: tcGEMM, TotalUs: 400}), "already fused"},
		// no group holds half the kernel time: the general change
		{"mixed", rows(optable.KernelRow{Name: elementwise, TotalUs: 400}, optable.KernelRow{Name: tcGEMM, TotalUs: 400}, optable.KernelRow{Name: flash, TotalUs: 200}), "the device is the limit"},
	} {
		s := &state{p: Default, step: 1000, device: true, share: map[Class]float64{GPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Kernels: c.kt}}
		applyRules(s, "gpu.")
		var change string
		for _, f := range s.d.Findings {
			if f.Rule == "gpu.kernels" {
				change = f.AllChanges()
			}
		}
		if !strings.Contains(change, c.want) {
			t.Errorf("%s: change %q, want %q", c.name, change, c.want)
		}
	}
}

// The roofline decides the GPU-bound change when matmuls/attention hold
// most of the kernel time: near the roof the hardware is the limit, far
// below it the shapes do not fill the device; in between, or without a
// roof (no shapes, unknown device), the family change stays. Memory-bound
// kernels keep the fusion advice whatever the matmuls' roof.
func TestKernelsChangeFollowsRoofline(t *testing.T) {
	const (
		elementwise = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"
		tcGEMM      = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
	)
	matmuls := &optable.KernelTable{Rows: []optable.KernelRow{{Name: tcGEMM, TotalUs: 800}, {Name: elementwise, TotalUs: 200}}, TotalUs: 1000}
	memBound := &optable.KernelTable{Rows: []optable.KernelRow{{Name: tcGEMM, TotalUs: 200}, {Name: elementwise, TotalUs: 800}}, TotalUs: 1000}
	// Two op rows: 3/4 of the time at roofA, 1/4 at roofB; a row without a
	// roof (no shapes) does not count.
	roof := func(roofA, roofB float64) *flops.Result {
		return &flops.Result{Available: true, Ops: []flops.Op{
			{Name: "aten::mm", DeviceUs: 600, RoofTFLOPS: 989.4, RoofPct: roofA},
			{Name: "aten::_flash_attention_forward", DeviceUs: 200, RoofTFLOPS: 500, RoofPct: roofB},
			{Name: "aten::addmm", DeviceUs: 5000},
		}}
	}
	for _, c := range []struct {
		name     string
		kt       *optable.KernelTable
		fl       *flops.Result
		want     string
		wantRoof float64 // 0: no roof evidence
	}{
		{"near the roof", matmuls, roof(90, 70), "near this device's limit", 85},
		{"far below the roof", matmuls, roof(10, 30), "the device is not filled", 15},
		{"in between", matmuls, roof(50, 50), "the model's own work", 50},
		{"no roof", matmuls, &flops.Result{Available: true, Ops: []flops.Op{{Name: "aten::mm", DeviceUs: 600}}}, "the model's own work", 0},
		{"no flops analysis", matmuls, nil, "the model's own work", 0},
		{"memory-bound kernels", memBound, roof(10, 10), "torch.compile(model) fuses", 10},
	} {
		s := &state{p: Default, step: 1000, device: true, share: map[Class]float64{GPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Kernels: c.kt, Flops: c.fl}}
		applyRules(s, "gpu.")
		f := findRule(s.d.Findings, "gpu.kernels")
		if f == nil || !strings.Contains(f.AllChanges(), c.want) {
			t.Errorf("%s: finding %+v, want %q", c.name, f, c.want)
			continue
		}
		var got float64
		for _, e := range f.Measured {
			if e.Unit == "% of roof" {
				got = e.Value
			}
		}
		if got != c.wantRoof {
			t.Errorf("%s: roof evidence %v, want %v (%+v)", c.name, got, c.wantRoof, f.Measured)
		}
	}
}

// With DataLoader workers the input finding names the workers' dataset
// line and what it costs; workers that mostly wait, or no worker samples,
// leave the finding as it was.
func TestInputNamesTheWorkersLine(t *testing.T) {
	two := 2
	lines := []pyprofile.WorkerLine{{File: "/p/train.py", Line: 24, Func: "SlowDataset.__getitem__", BusyPct: 93}, {File: "/p/aug.py", Line: 7, Func: "flip", BusyPct: 5}}
	for _, c := range []struct {
		name    string
		workers *pyprofile.WorkerSummary
		named   bool
		change  string
	}{
		{"busy workers", &pyprofile.WorkerSummary{Processes: 2, Samples: 400, BusyShare: 0.97, CPUShare: 0.9, Lines: lines}, true, "2 workers cannot keep up"},
		{"workers mostly wait", &pyprofile.WorkerSummary{Processes: 2, Samples: 400, BusyShare: 0.1, CPUShare: 0.9, Lines: lines}, false, "2 workers cannot keep up"},
		{"no worker samples", nil, false, "2 workers cannot keep up"},
		// busy reading, off the CPU: more workers overlap more reads
		{"workers read", &pyprofile.WorkerSummary{Processes: 2, Samples: 400, BusyShare: 0.9, CPUShare: 0.12, Lines: lines}, true,
			"the 2 workers mostly wait rather than compute (12% of their busy time on a CPU: file or network reads, a sleep, a lock): waiting workers need no CPU, so more of them overlap more of the waits: DataLoader(num_workers=4, ...)"},
		// ... but runnable, waiting for a CPU: not the reads
		{"workers wait for a CPU", &pyprofile.WorkerSummary{Processes: 2, Samples: 400, BusyShare: 0.9, CPUShare: 0.12, WaitShare: 0.8, Lines: lines}, true, "make it cheaper; then 2 workers cannot keep up: raise num_workers or prefetch_factor"},
		// no line named: what to make cheaper; an IterableDataset makes
		// its samples in __iter__
		{"no worker samples, map", nil, false, "2 workers cannot keep up: make __getitem__ cheaper; or raise num_workers or prefetch_factor"},
		{"iterable", nil, false, "2 workers cannot keep up: make __iter__ cheaper; or raise num_workers or prefetch_factor"},
	} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{Input: 0.8}, d: &Diagnosis{}, in: Analyses{
			Run: &runevidence.RunEvidence{Loaders: []runevidence.Loader{{Dataset: "SlowDataset", NumWorkers: &two, Iterable: c.name == "iterable"}}, Workers: c.workers}}}
		s.findings()
		var f *Finding
		for i := range s.d.Findings {
			if s.d.Findings[i].Rule == "input.loader" {
				f = &s.d.Findings[i]
			}
		}
		if f == nil {
			t.Fatalf("%s: no input finding", c.name)
		}
		first := f.Where[0]
		gotNamed := first.File == "/p/train.py" && first.Line == 24
		if gotNamed != c.named {
			t.Errorf("%s: where %+v, want the worker line named=%v", c.name, f.Where, c.named)
		}
		costs := strings.Contains(f.AllChanges(), "SlowDataset.__getitem__ at train.py:24 takes 93% of the workers' busy time")
		if costs != c.named || !strings.Contains(f.AllChanges(), c.change) {
			t.Errorf("%s: change %q", c.name, f.AllChanges())
		}
		if c.named && len(f.Where) != 2 {
			t.Errorf("%s: a line under 10%% of the busy time is named: %+v", c.name, f.Where)
		}
	}
}

// Blocked lines are the program's lines off the CPU most of their samples,
// outside torch; a line on a CPU (even one slowed by a busy machine), a
// wait inside torch and a profile without CPU clocks give none. The
// finding takes the blocked share out of host.python's.
func TestBlocked(t *testing.T) {
	stack := func(count int, cpu float64, frames ...pyprofile.Frame) (pyprofile.Stack, []pyprofile.Frame) {
		return pyprofile.Stack{Count: count, WindowCount: count, CPUCount: cpu, WindowCPUCount: cpu}, frames
	}
	user := func(line int) pyprofile.Frame {
		return pyprofile.Frame{File: "/home/u/train.py", Line: line, Func: "main"}
	}
	lib := func(file, fn string) pyprofile.Frame {
		return pyprofile.Frame{File: sitePkgs + file, Line: 1, Func: fn}
	}
	profile := func(clock bool, stacks ...func() (pyprofile.Stack, []pyprofile.Frame)) *pyprofile.Profile {
		p := &pyprofile.Profile{Profiler: "sample", CPUClock: clock, WindowSamples: 1, Threads: []pyprofile.Thread{{Role: "main"}}}
		for _, f := range stacks {
			st, frames := f()
			for _, fr := range frames {
				p.Frames = append(p.Frames, fr)
				st.Frames = append(st.Frames, len(p.Frames)-1)
			}
			p.Stacks = append(p.Stacks, st)
		}
		return p
	}
	sleep := func() (pyprofile.Stack, []pyprofile.Frame) { return stack(30, 1, user(40)) } // time.sleep: no frame of its own
	socketWait := func() (pyprofile.Stack, []pyprofile.Frame) {
		return stack(20, 0.5, user(41), lib("/../socket.py", "SocketIO.readinto"))
	}
	compute := func() (pyprofile.Stack, []pyprofile.Frame) {
		return stack(40, 22, user(30), lib("/torch/nn/modules/module.py", "f"))
	} // a loaded machine: 55% on a CPU
	python := func() (pyprofile.Stack, []pyprofile.Frame) { return stack(10, 6, user(35)) } // a Python loop slowed by load
	torchWait := func() (pyprofile.Stack, []pyprofile.Frame) {
		return stack(10, 0, user(31), lib("/torch/autograd/__init__.py", "backward"))
	}

	ev := runevidence.FromProfile(profile(true, sleep, socketWait, compute, python, torchWait))
	if want := 50.0 / 110; ev.BlockedShare != want || len(ev.Blocked) != 2 || ev.Blocked[0].Line != 40 || ev.Blocked[1].Line != 41 || ev.Blocked[1].In != "SocketIO.readinto" {
		t.Errorf("blocked share %v lines %+v, want %v at lines 40, 41 (in SocketIO.readinto)", ev.BlockedShare, ev.Blocked, want)
	}
	for _, l := range ev.Hot {
		if l.Line == 40 || l.Line == 41 {
			t.Errorf("blocked line %d among the hot lines", l.Line)
		}
	}
	// torch.compile waiting for its C++ compiler (forward through dynamo,
	// the backward compiled lazily at the first backward) is start-up
	compileWait := func() (pyprofile.Stack, []pyprofile.Frame) {
		return stack(30, 0.5, user(50), lib("/torch/_dynamo/convert_frame.py", "_compile"), lib("/torch/_inductor/cpp_builder.py", "_run_compile_cmd"), lib("/../subprocess.py", "Popen.communicate"))
	}
	backwardCompile := func() (pyprofile.Stack, []pyprofile.Frame) {
		return stack(20, 0.2, user(51), lib("/torch/_functorch/_aot_autograd/runtime_wrappers.py", "_AutogradBackwardCompiler.get_or_compile"), lib("/../threading.py", "Condition.wait"))
	}
	if ev := runevidence.FromProfile(profile(true, compute, python, compileWait, backwardCompile)); ev.BlockedShare != 0 || len(ev.CompileLines) != 2 {
		t.Errorf("compilation taken for blocking: %v %+v, compile lines %+v", ev.BlockedShare, ev.Blocked, ev.CompileLines)
	}
	if ev := runevidence.FromProfile(profile(false, sleep, socketWait, compute)); ev.BlockedShare != 0 || ev.Blocked != nil {
		t.Errorf("without CPU clocks: %+v", ev.Blocked)
	}
	if ev := runevidence.FromProfile(profile(true, compute, python, torchWait)); ev.BlockedShare != 0 {
		t.Errorf("busy and torch lines: blocked %+v", ev.Blocked)
	}
	// a machine so busy that the thread runs 30% of the time: a line at
	// 15% is contention too; a sleep stays blocked
	busyLoop := func() (pyprofile.Stack, []pyprofile.Frame) { return stack(40, 12, user(18)) }
	contended := func() (pyprofile.Stack, []pyprofile.Frame) { return stack(20, 3, user(19)) }
	asleep := func() (pyprofile.Stack, []pyprofile.Frame) { return stack(20, 0.1, user(40)) }
	if ev := runevidence.FromProfile(profile(true, busyLoop, contended, asleep)); len(ev.Blocked) != 1 || ev.Blocked[0].Line != 40 {
		t.Errorf("loaded machine: blocked %+v, want line 40 only", ev.Blocked)
	}
	// with the run-queue wait: a computing line stays runnable however
	// little it runs; a blocked line that inherits some wait from the
	// line before it (the sample's span starts there) is still blocked
	waiting := func(count int, cpu, wait float64, line int) func() (pyprofile.Stack, []pyprofile.Frame) {
		return func() (pyprofile.Stack, []pyprofile.Frame) {
			st, fr := stack(count, cpu, user(line))
			st.WaitCount = wait
			return st, fr
		}
	}
	if ev := runevidence.FromProfile(profile(true, waiting(40, 8, 30, 18), waiting(20, 3, 16, 19), waiting(20, 1, 6, 40))); len(ev.Blocked) != 1 || ev.Blocked[0].Line != 40 {
		t.Errorf("loaded machine, run-queue wait known: blocked %+v, want line 40 only", ev.Blocked)
	}

	// with repeats (samples that followed one at the same stack): a wait
	// that fills the step leaves the short lines between its waits only
	// samples that measure it, so they are no reference (their repeats
	// are); a Python line after a sleep looks off the CPU in its other
	// samples but computes in its repeats; a line that waits for a CPU
	// on a busy machine stays runnable in its repeats
	repeats := func(count int, cpu, wait float64, rep int, repCPU, repWait float64, line int) func() (pyprofile.Stack, []pyprofile.Frame) {
		return func() (pyprofile.Stack, []pyprofile.Frame) {
			st, fr := stack(count, cpu, user(line))
			st.WaitCount, st.RepeatCount, st.RepeatCPUCount, st.RepeatWaitCount = wait, rep, repCPU, repWait
			return st, fr
		}
	}
	withRepeats := func(stacks ...func() (pyprofile.Stack, []pyprofile.Frame)) *pyprofile.Profile {
		p := profile(true, stacks...)
		p.Repeats = true
		return p
	}
	dominant := []func() (pyprofile.Stack, []pyprofile.Frame){repeats(88, 6.6, 9.1, 70, 3, 4, 41)}
	for line := 30; line < 43; line++ { // 13 short lines, each sampled once, runnable 28%
		dominant = append(dominant, repeats(1, 0.1, 0.18, 0, 0, 0, line))
	}
	if ev := runevidence.FromProfile(withRepeats(dominant...)); len(ev.Blocked) != 1 || ev.Blocked[0].Line != 41 {
		t.Errorf("a wait that fills the step: blocked %+v, want line 41", ev.Blocked)
	}
	afterSleep := repeats(10, 1.5, 0, 6, 5.4, 0, 35)
	busyPython := repeats(30, 4, 12, 20, 3, 16, 36)
	if ev := runevidence.FromProfile(withRepeats(repeats(40, 0.5, 0, 30, 0.2, 0, 40), afterSleep, busyPython)); len(ev.Blocked) != 1 || ev.Blocked[0].Line != 40 {
		t.Errorf("with repeats: blocked %+v, want line 40 only (not the line after the sleep, not the busy one)", ev.Blocked)
	}

	// a real profile: examples/diagnose/blocking_call_every_step.py with
	// three busy loops beside it on 2 CPUs
	real, err := pyprofile.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata", "pyprofile", "blocked_loaded.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev := runevidence.FromProfile(real); len(ev.Blocked) != 1 || ev.Blocked[0].Line != 41 || ev.Blocked[0].In != "SocketIO.readinto" || ev.BlockedShare < 0.5 {
		t.Errorf("real loaded run: blocked %+v (share %.2f), want line 41 in SocketIO.readinto, over half the samples", ev.Blocked, ev.BlockedShare)
	}

	// the finding: blocked 45% of a 55% host share leaves 10% to host.python, of a 48% share too little
	for _, c := range []struct {
		blocked, host float64
		rules         []string
		syncSite      bool
	}{
		{0.45, 0.55, []string{"host.blocked", "host.python"}, false},
		{0.45, 0.48, []string{"host.blocked"}, false},
		{0.03, 0.5, []string{"host.python"}, false},
		// the blocked line is a CUDA sync site (.item()): sync.blocking's
		{0.45, 0.55, []string{"host.python"}, true},
	} {
		s := &state{p: Default, step: 1000, steps: 1, share: map[Class]float64{Host: c.host, CPUCompute: 1 - c.host}, d: &Diagnosis{},
			py: &runevidence.PythonEvidence{BlockedShare: c.blocked, Blocked: []runevidence.Line{{File: "/home/u/train.py", Line: 40, Pct: 100 * c.blocked}}}}
		if c.syncSite {
			s.in.Run = &runevidence.RunEvidence{SyncSites: []runevidence.SyncSite{{File: "/home/u/train.py", Line: 40, Count: 5}}}
		}
		s.findings()
		var got []string
		for _, f := range s.d.Findings {
			if strings.HasPrefix(f.Rule, "host.") {
				got = append(got, f.Rule)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, c.rules) {
			t.Errorf("blocked %v of host %v: rules %v, want %v", c.blocked, c.host, got, c.rules)
		}
	}
}

// host.python names a training framework's own per-step work when its
// code is the innermost frame of a fifth of the busy samples or more;
// under that, with too few samples, or with none, the change is not it.
func TestFrameworkPython(t *testing.T) {
	funcs := []string{"move_data_to_device.<locals>.batch_to", "_ResultCollection._get_cache"}
	for _, c := range []struct {
		name string
		py   *runevidence.PythonEvidence
		want string // "": not the framework's change
	}{
		{"Lightning's loop", &runevidence.PythonEvidence{HotSamples: 52, Framework: "Lightning", FrameworkShare: 0.38, FrameworkFuncs: funcs},
			"Lightning's own code is the innermost frame of 38% of the busy main-thread samples (move_data_to_device.<locals>.batch_to, _ResultCollection._get_cache)"},
		{"the Trainer's loop", &runevidence.PythonEvidence{HotSamples: 52, Framework: "the Hugging Face Trainer", FrameworkShare: 0.3, FrameworkFuncs: funcs},
			"the Hugging Face Trainer's own code is the innermost frame of 30%"},
		{"a small share", &runevidence.PythonEvidence{HotSamples: 52, Framework: "Lightning", FrameworkShare: 0.15, FrameworkFuncs: funcs}, ""},
		{"few samples", &runevidence.PythonEvidence{HotSamples: 10, Framework: "Lightning", FrameworkShare: 0.5, FrameworkFuncs: funcs}, ""},
		{"no framework", &runevidence.PythonEvidence{HotSamples: 52}, ""},
	} {
		s := &state{p: Default, step: 1000, steps: 1, share: map[Class]float64{Host: 0.3, CPUCompute: 0.7}, d: &Diagnosis{}, py: c.py}
		s.findings()
		i := slices.IndexFunc(s.d.Findings, func(f Finding) bool { return f.Rule == "host.python" })
		if i < 0 {
			t.Fatalf("%s: no host.python", c.name)
		}
		if got := s.d.Findings[i].AllChanges(); c.want == "" && strings.Contains(got, "own code is the innermost frame") || c.want != "" && !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: change %q, want %q", c.name, got, c.want)
		}
	}
	// the share read from a profile: only the innermost frame counts, and
	// a model's forward under transformers/models is not the Trainer's
	p := &pyprofile.Profile{Profiler: "sample", Threads: []pyprofile.Thread{{Role: "main"}},
		Frames: []pyprofile.Frame{{File: "/home/u/train.py", Line: 9}, {File: "/site-packages/lightning/pytorch/loops/fit_loop.py", Func: "_FitLoop.run"},
			{File: "/site-packages/lightning/fabric/utilities/apply_func.py", Func: "batch_to"}, {File: "/site-packages/transformers/models/bert/modeling_bert.py", Func: "BertLayer.forward"},
			{File: "/site-packages/torch/nn/modules/linear.py", Func: "Linear.forward"}},
		Stacks: []pyprofile.Stack{
			{Frames: []int{0, 1, 2}, Count: 30},    // Lightning's own work
			{Frames: []int{0, 1, 3}, Count: 30},    // a model's forward under the loop
			{Frames: []int{0, 1, 3, 4}, Count: 40}, // its layers
		}}
	if ev := runevidence.FromWholeRun(p); ev.Framework != "Lightning" || ev.FrameworkShare != 0.3 || !slices.Equal(ev.FrameworkFuncs, []string{"batch_to"}) {
		t.Errorf("from a profile: %q %.2f %v, want Lightning, 0.30, [batch_to]", ev.Framework, ev.FrameworkShare, ev.FrameworkFuncs)
	}
}

// host.python names nn.Module call overhead only when the Python time
// between ops sits inside module calls: the samples in module calls,
// less the native ops they also cover, hold most of it. A small model
// called with one input at a time does, and its ops are called too small;
// a model whose ops outweigh the Python gets the same without that
// claim; a program whose own Python loop runs beside a compute-heavy
// model, or whose samples are outside modules, keeps the general change.
func TestModuleOverhead(t *testing.T) {
	for _, c := range []struct {
		name                string
		host, native, inMod float64
		want                string // "": the general change
	}{
		{"small layers, batch 1", 0.64, 0.21, 0.95, "too small to pay for it"},
		{"own Python loop beside a heavy model", 0.4, 0.6, 0.6, ""},
		{"Python outside modules", 0.6, 0.2, 0.1, ""},
		// the modules' Python beside larger ops: no claim that the ops are
		// small, and no DataLoader advice
		{"large convolutions, little Python", 0.12, 0.75, 1.0, "beside the ops it calls"},
		{"batch-1 transformer inference", 0.36, 0.64, 0.97, "beside the ops it calls"},
	} {
		s := &state{p: Default, step: 1000, steps: 1, share: map[Class]float64{Host: c.host, CPUCompute: c.native}, d: &Diagnosis{},
			py: &runevidence.PythonEvidence{ModuleShare: c.inMod, Hot: []runevidence.Line{{File: "/home/u/infer.py", Line: 6, Pct: 90}}}}
		ch := hostPythonChange(t, s, c.name)
		if c.want == "" && (strings.Contains(ch, "nn.Module calls") || !strings.Contains(ch, "DataLoader")) || c.want != "" && (!strings.Contains(ch, c.want) || strings.Contains(ch, "DataLoader")) {
			t.Errorf("%s: %s, want %q", c.name, ch, c.want)
		}
	}
}

// hostPythonChange runs the findings and returns host.python's change.
func hostPythonChange(t *testing.T, s *state, name string) string {
	t.Helper()
	s.findings()
	i := slices.IndexFunc(s.d.Findings, func(f Finding) bool { return f.Rule == "host.python" })
	if i < 0 {
		t.Fatalf("%s: no host.python finding", name)
	}
	return s.d.Findings[i].AllChanges()
}

// host.python names a tensor built from Python lists when that line is
// the hottest, with a quarter of the samples or more; a hot line that
// makes a tensor otherwise, or a list tensor that is not the hot line,
// keeps the general change.
func TestTensorFromLists(t *testing.T) {
	for _, c := range []struct {
		name string
		hot  []runevidence.Line
		want bool
	}{
		{"torch.tensor of a list of features", []runevidence.Line{{File: "/home/u/prep.py", Line: 13, Pct: 51, Text: "x = torch.tensor(feats)"}, {File: "/home/u/prep.py", Line: 14, Pct: 21, Text: "y = torch.randint(0, 10, (64,))"}}, true},
		{"legacy constructor", []runevidence.Line{{File: "/home/u/prep.py", Line: 13, Pct: 40, Text: "batch = torch.FloatTensor(rows)"}}, true},
		{"torch.randn", []runevidence.Line{{File: "/home/u/prep.py", Line: 13, Pct: 51, Text: "x = torch.randn(64, 256)"}}, false},
		{"not the hottest", []runevidence.Line{{File: "/home/u/prep.py", Line: 9, Pct: 60, Text: "v = featurize(t)"}, {File: "/home/u/prep.py", Line: 13, Pct: 30, Text: "x = torch.tensor(feats)"}}, false},
		{"a small share", []runevidence.Line{{File: "/home/u/prep.py", Line: 13, Pct: 15, Text: "x = torch.tensor(feats)"}}, false},
		{"no source text (older agent)", []runevidence.Line{{File: "/home/u/prep.py", Line: 13, Pct: 51}}, false},
	} {
		s := &state{p: Default, step: 1000, steps: 1, share: map[Class]float64{Host: 0.6, CPUCompute: 0.4}, d: &Diagnosis{}, py: &runevidence.PythonEvidence{Hot: c.hot}}
		ch := hostPythonChange(t, s, c.name)
		if got := strings.HasPrefix(ch, "the hottest line, prep.py:13"); got != c.want || c.want && !strings.Contains(ch, "torch.from_numpy") {
			t.Errorf("%s: %s", c.name, ch)
		}
	}
}

// The blocked finding's change follows what the line waited in.
func TestBlockedChange(t *testing.T) {
	for in, want := range map[string]string{
		"Condition.wait":    "for another thread",
		"Queue.get":         "for another thread",
		"SocketIO.readinto": "for the network",
		"Popen.communicate": "for a subprocess",
		"":                  "", // a builtin such as time.sleep at the line: the rule's change
	} {
		got := blockedChange(runevidence.Line{File: "/home/u/train.py", Line: 7, In: in})
		if want == "" && got != "" || !strings.Contains(got, want) || want != "" && !strings.Contains(got, "train.py:7") {
			t.Errorf("in %q: %q, want %q", in, got, want)
		}
	}
}

// The validation finding reads the framework phases of a training run:
// validation far beyond its share fires, with advice for the framework;
// a small share, a run without training steps and a run without phases
// stay silent.
// phases is run evidence with a framework's phases over wall seconds.
func phases(fw string, wall float64, ph ...rundir.Phase) *runevidence.RunEvidence {
	return &runevidence.RunEvidence{Phases: &rundir.FrameworkPhases{Framework: fw, WallS: wall, Phases: ph}}
}

func TestValidationFinding(t *testing.T) {
	train := rundir.Phase{Name: "[Strategy]SingleDeviceStrategy.training_step", Calls: 16, SelfS: 0.1}
	loader := rundir.Phase{Name: "[_TrainingEpochLoop].train_dataloader_next", Calls: 16, SelfS: 0.5}
	valNext := rundir.Phase{Name: "[_EvaluationLoop].val_next", Calls: 8, SelfS: 0.5}
	valStep := rundir.Phase{Name: "[Strategy]SingleDeviceStrategy.validation_step", Calls: 8, SelfS: 0.04}
	for _, c := range []struct {
		name string
		run  *runevidence.RunEvidence
		want string // "" silent
	}{
		{"lightning, validation a third of the run", phases("lightning", 1.6, loader, valNext, valStep, train), "give the validation DataLoader workers too"},
		{"hugging face", phases("transformers", 1.5, rundir.Phase{Name: "training_step", Calls: 16, SelfS: 0.2}, rundir.Phase{Name: "evaluate", Calls: 2, SelfS: 0.4}), "eval_steps"},
		{"validation in proportion", phases("lightning", 10, loader, valNext, valStep, train), ""},
		{"no training steps", phases("lightning", 1.6, valNext, valStep), ""},
		{"no phases", &runevidence.RunEvidence{}, ""},
	} {
		s := &state{p: Default, step: 60e3, steps: 4, share: map[Class]float64{}, d: &Diagnosis{}, in: Analyses{Run: c.run}}
		s.validationFinding()
		switch {
		case c.want == "" && len(s.d.Findings) > 0:
			t.Errorf("%s: fired: %+v", c.name, s.d.Findings[0].Title)
		case c.want != "" && (len(s.d.Findings) != 1 || !strings.Contains(s.d.Findings[0].AllChanges(), c.want)):
			t.Errorf("%s: %+v, want a change with %q", c.name, s.d.Findings, c.want)
		}
	}
}

// Checkpoint saves found by the frameworks' save_checkpoint phase; the
// on_save_checkpoint hooks inside it do not count, and a small share
// stays silent.
func TestCheckpointFinding(t *testing.T) {
	train := rundir.Phase{Name: "[Strategy]SingleDeviceStrategy.training_step", Calls: 200, SelfS: 0.9}
	save := rundir.Phase{Name: "save_checkpoint", Calls: 10, SelfS: 3.84}
	hook := rundir.Phase{Name: "[LightningModule]M.on_save_checkpoint", Calls: 10, SelfS: 0.01}
	for _, c := range []struct {
		name, title, want string // "" silent
		run               *runevidence.RunEvidence
	}{
		{"lightning, every 20 steps", "Saving checkpoints takes 39% of the run's wall time (10 saves, 384 ms each)", "AsyncCheckpointIO", phases("lightning", 9.78, train, save, hook)},
		{"hugging face", "(2 saves, 1.00 s each)", "save_only_model=True", phases("transformers", 20, rundir.Phase{Name: "training_step", Calls: 100, SelfS: 10}, rundir.Phase{Name: "save_checkpoint", Calls: 2, SelfS: 2})},
		{"a final save", "", "", phases("lightning", 100, train, rundir.Phase{Name: "save_checkpoint", Calls: 1, SelfS: 1})},
		{"hooks only", "", "", phases("lightning", 9.78, train, hook)},
		{"no training steps", "", "", phases("lightning", 9.78, save)},
	} {
		s := &state{p: Default, step: 60e3, steps: 4, share: map[Class]float64{}, d: &Diagnosis{}, in: Analyses{Run: c.run}}
		s.checkpointFinding()
		switch {
		case c.want == "" && len(s.d.Findings) > 0:
			t.Errorf("%s: fired: %+v", c.name, s.d.Findings[0].Title)
		case c.want != "" && (len(s.d.Findings) != 1 || !strings.Contains(s.d.Findings[0].Title, c.title) || !strings.Contains(s.d.Findings[0].AllChanges(), c.want)):
			t.Errorf("%s: %+v, want %q and a change with %q", c.name, s.d.Findings, c.title, c.want)
		}
	}
}

// The input change names per-epoch worker restarts when starting and
// stopping the workers costs at least the rest of the wait, over at least
// 3 epochs, without persistent workers.
func TestRestartsWorkers(t *testing.T) {
	two, zero, no, yes := 2, 0, false, true
	base := runevidence.Loader{Dataset: "TensorDataset", NumWorkers: &two, PersistentWorkers: &no, Batches: 320, WaitS: 0.55, Iterators: 40, RestartS: 1.15, FirstWaitS: 0.29}
	if !base.RestartsWorkers() {
		t.Fatalf("40 epochs of 8 batches with restarts: not found")
	}
	for name, mod := range map[string]func(l *runevidence.Loader){
		"persistent":      func(l *runevidence.Loader) { l.PersistentWorkers = &yes },
		"no workers":      func(l *runevidence.Loader) { l.NumWorkers = &zero },
		"two epochs":      func(l *runevidence.Loader) { l.Iterators = 2 },
		"slow batches":    func(l *runevidence.Loader) { l.WaitS = 20 }, // the batches' own wait dwarfs the restarts
		"old agent":       func(l *runevidence.Loader) { l.RestartS, l.FirstWaitS, l.Iterators = 0, 0, 0 },
		"unknown setting": func(l *runevidence.Loader) { l.PersistentWorkers = nil },
	} {
		l := base
		mod(&l)
		if l.RestartsWorkers() {
			t.Errorf("%s: restarts found", name)
		}
	}
	s := &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{Input: 0.6}, d: &Diagnosis{},
		in: Analyses{Run: &runevidence.RunEvidence{HasDataLoader: true, Loaders: []runevidence.Loader{base}}}}
	s.findings()
	if f := findingOf(s.d, "input.loader"); f == nil || !strings.Contains(f.AllChanges(), "40 epochs (persistent_workers=False), 8 batches each: 36.0 ms an epoch, against 6.50 ms of wait for its other batches: DataLoader(..., persistent_workers=True); kept workers keep the dataset as they first copied it") || !strings.Contains(f.AllChanges(), "needs that change made in the workers; or num_workers=0") {
		t.Errorf("change: %+v", f)
	}
	if f := findingOf(s.d, "input.loader"); f == nil || f.TrySavingPct != nil || strings.Contains(f.AllChanges(), "saves at least") {
		t.Errorf("without the run's step times, a predicted saving: %+v", f)
	}
	// with them: the starts and stops saved, and of the first waits what
	// exceeds a batch's loading (2 workers x 5 ms steps a batch, 40
	// epochs: 0.4 s, more than the 0.29 s of first waits), all but the
	// first epoch's: 39/40 x 1.15 s of 4 s of steps
	s = &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{Input: 0.6}, d: &Diagnosis{},
		in: Analyses{Run: &runevidence.RunEvidence{HasDataLoader: true, Loaders: []runevidence.Loader{base}, StepsS: 4, RunMedianStepS: 0.005}}}
	s.findings()
	if f := findingOf(s.d, "input.loader"); f == nil || f.TrySavingPct == nil || math.Abs(*f.TrySavingPct-28.0) > 0.05 || !strings.Contains(f.AllChanges(), "persistent_workers=True) (saves at least ~28% of the run's step time") {
		t.Errorf("with step times: %+v", f)
	}

	// a DataLoader made anew for each pass starts its workers each time,
	// persistent or not: make it once; one loader over many epochs, and a
	// persistent one made once, are not that
	anew := base
	anew.PersistentWorkers, anew.Loaders = &yes, 40
	if !anew.RestartsWorkers() || !anew.MadeAnew() {
		t.Errorf("a persistent loader made for each of 40 passes: restarts %v, made anew %v", anew.RestartsWorkers(), anew.MadeAnew())
	}
	s = &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{Input: 0.6}, d: &Diagnosis{},
		in: Analyses{Run: &runevidence.RunEvidence{HasDataLoader: true, Loaders: []runevidence.Loader{anew}}}}
	s.findings()
	if f := findingOf(s.d, "input.loader"); f == nil || !strings.Contains(f.AllChanges(), "the program makes a new DataLoader over its TensorDataset for each of 40 passes") ||
		!strings.Contains(f.AllChanges(), "make the DataLoader once, before the loop, with persistent_workers=True") {
		t.Errorf("change: %+v", f)
	}
	for name, l := range map[string]runevidence.Loader{"one loader": func() runevidence.Loader { l := base; l.Loaders = 1; return l }(),
		"persistent, made once": func() runevidence.Loader {
			l := base
			l.PersistentWorkers, l.Loaders, l.Iterators = &yes, 1, 1
			return l
		}(),
		"a few of many": func() runevidence.Loader { l := base; l.Loaders = 3; return l }()} {
		if l.MadeAnew() {
			t.Errorf("%s: made anew", name)
		}
	}
}

// Workers that idle keep up: the step waits for the batches' hand-over,
// and making them in the main process is the change where that costs
// less than the wait (makemore's figures: 4 workers busy 0.8% of their
// samples, the step 27.4 ms waiting 8%); silent where the workers are
// busy, or where making a batch would cost the step more than it waits.
func TestIdleWorkers(t *testing.T) {
	four := 4
	for _, c := range []struct {
		name  string
		busy  float64
		fires bool
	}{
		{"makemore: idle workers", 0.008, true},
		{"busy workers", 0.9, false},
		{"idle, but making costs more than the wait", 0.09, false}, // 0.09 x 4 x 27.4 ms > 2.2 ms
	} {
		run := &runevidence.RunEvidence{HasDataLoader: true, Loaders: []runevidence.Loader{{Dataset: "CharDataset", NumWorkers: &four, Batches: 400, WaitS: 0.87}},
			Workers: &pyprofile.WorkerSummary{Processes: 4, Samples: 1000, BusyShare: c.busy, CPUShare: 1}}
		s := &state{p: Default, step: 27400, steps: 7, share: map[Class]float64{Input: 0.08, CPUCompute: 0.79}, d: &Diagnosis{}, in: Analyses{Run: run}}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil {
			t.Fatalf("%s: no input finding", c.name)
		}
		fired := strings.Contains(f.AllChanges(), "DataLoader(num_workers=0) makes them in the main process")
		if fired != c.fires || fired && (f.Try["num_workers"] != "0" || f.TrySavingPct == nil || math.Abs(*f.TrySavingPct-4.8) > 0.1) {
			t.Errorf("%s: fired %v, want %v: %s (try %v %v)", c.name, fired, c.fires, f.AllChanges(), f.Try, f.TrySavingPct)
		}
		if c.fires && strings.Contains(f.AllChanges(), "raise num_workers") {
			t.Errorf("%s: more workers advised beside idle ones: %s", c.name, f.AllChanges())
		}
	}
}

// input.worker-restarts: workers started anew each epoch cost the steps
// around each start more than the step waits for its batches (a fork of
// a large process copies each page it writes afterwards); the figures of
// denoising-diffusion-pytorch's Trainer on this CPU, 2 restarts timed of
// 3. Silent where the steps wait for their batches (input.loader's), the
// workers persist, the restarts were not timed or cost little.
func TestRestartFinding(t *testing.T) {
	two, zero, no, yes := 2, 0, false, true
	ddpm := runevidence.Loader{Dataset: "Dataset", NumWorkers: &two, PersistentWorkers: &no, Batches: 51, WaitS: 0.37, Iterators: 4, RestartS: 0.81, FirstWaitS: 0.21, RestartStepsS: 2.2, RestartsTimed: 2}
	run := func(l runevidence.Loader, input float64) *state {
		s := &state{p: Default, step: 2.3e6, steps: 5, share: map[Class]float64{CPUCompute: 0.93, Input: input}, d: &Diagnosis{},
			in: Analyses{Run: &runevidence.RunEvidence{HasDataLoader: true, Loaders: []runevidence.Loader{l}, StepsS: 60, RunMedianStepS: 2.3}}}
		s.findings()
		return s
	}
	f := findingOf(run(ddpm, 0.004).d, "input.worker-restarts")
	// 3 restarts x (1.1 s timed - a quarter of the first waits' 0.21 s) of 60 s
	if f == nil || !strings.Contains(f.Title, "starts its 2 workers anew for each of its 4 epochs: the steps around each start take 1.10 s more than the others") ||
		!strings.Contains(f.AllChanges(), "1.10 s an epoch") || !strings.Contains(f.AllChanges(), "persistent_workers=True") || f.Try["persistent_workers"] != "true" {
		t.Fatalf("ddpm: %+v", f)
	}
	if got, want := f.SavingUs, 3*(1.1-0.21/4)/60*2.3e6; math.Abs(got-want) > 1 {
		t.Errorf("saving %v us, want %v", got, want)
	}
	for name, mod := range map[string]func(l *runevidence.Loader){
		"persistent":         func(l *runevidence.Loader) { l.PersistentWorkers = &yes },
		"no workers":         func(l *runevidence.Loader) { l.NumWorkers = &zero },
		"two epochs":         func(l *runevidence.Loader) { l.Iterators = 2 },
		"not timed":          func(l *runevidence.Loader) { l.RestartStepsS, l.RestartsTimed = 0, 0 },
		"cheap restarts":     func(l *runevidence.Loader) { l.RestartStepsS = 0.4 },
		"an unknown setting": func(l *runevidence.Loader) { l.PersistentWorkers = nil },
	} {
		l := ddpm
		mod(&l)
		if f := findingOf(run(l, 0.004).d, "input.worker-restarts"); f != nil {
			t.Errorf("%s: fired: %s", name, f.Title)
		}
	}
	// a loader made anew each pass: made once, not told to keep workers
	anew := ddpm
	anew.PersistentWorkers, anew.Loaders = &yes, 4
	if f := findingOf(run(anew, 0.004).d, "input.worker-restarts"); f == nil || f.Try != nil || !strings.Contains(f.Change, "make the DataLoader once, before the loop") {
		t.Errorf("made anew: %+v", f)
	}
	// the step waits for its batches: input.loader names the restarts
	s := run(ddpm, 0.2)
	if f := findingOf(s.d, "input.worker-restarts"); f != nil {
		t.Errorf("input-bound: fired: %s", f.Title)
	}
	if f := findingOf(s.d, "input.loader"); f == nil || !strings.Contains(f.AllChanges(), "1.10 s an epoch") {
		t.Errorf("input-bound: input.loader %+v", f)
	}
}

// What keeping the workers saves: the epochs' starts and stops, and of
// each first wait what exceeds a batch's loading (at most NumWorkers
// median steps), but for the first epoch's. dcgan (pytorch/examples, an
// H200, fake data, the run's figures) measured 1.05x.
func TestRestartSaving(t *testing.T) {
	two := 2
	dcgan := runevidence.Loader{NumWorkers: &two, Iterators: 4, Batches: 64, RestartS: 0.2503, FirstWaitS: 0.3217}
	for _, c := range []struct {
		name   string
		l      runevidence.Loader
		median float64
		want   float64 // share of the run's step time
	}{
		{"dcgan", dcgan, 0.017, 0.75 * (0.2503 + 0.3217 - 4*2*0.017) / 5.556},
		{"first waits all loading", dcgan, 0.05, 0.75 * 0.2503 / 5.556},
		// timed in the steps after each making (glue_like.py's Trainer,
		// 6 epochs, 5 restarts timed), the epochs' ends added: 5 x (262
		// ms + 365/6 ms of shutdowns - a sixth of the first waits)
		{"timed", runevidence.Loader{NumWorkers: &two, Iterators: 6, Batches: 96, RestartS: 0.84, FirstWaitS: 0.145, RestartStepsS: 1.31, RestartsTimed: 5, StopS: 0.365},
			0.114, 5 * (0.262 + 0.365/6 - 0.145/6) / 5.556},
	} {
		s := &state{in: Analyses{Run: &runevidence.RunEvidence{StepsS: 5.556, RunMedianStepS: c.median}}}
		got, ok := s.restartSaving(c.l)
		if !ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %v %v, want %v", c.name, got, ok, c.want)
		}
	}
	one := dcgan
	one.Iterators = 1
	for _, c := range []struct {
		name string
		run  runevidence.RunEvidence
		l    runevidence.Loader
	}{
		{"no step times", runevidence.RunEvidence{}, dcgan},
		{"one epoch", runevidence.RunEvidence{StepsS: 5.556, RunMedianStepS: 0.017}, one},
	} {
		s := &state{in: Analyses{Run: &c.run}}
		if got, ok := s.restartSaving(c.l); ok {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

// The busy samples outside the model, the backward and the optimizer are
// the program's own tensor work (per-item preprocessing, synthetic inputs
// drawn in the loop); a module's forward, Tensor.backward, an optimizer's
// step and a line that multiplies tensors itself (a model without
// nn.Module) are not.
func TestOutsideModelEvidence(t *testing.T) {
	user := func(line int, text string) pyprofile.Frame {
		return pyprofile.Frame{File: "/home/u/infer.py", Line: line, Func: "main", Text: text}
	}
	lib := func(file, fn string) pyprofile.Frame {
		return pyprofile.Frame{File: sitePkgs + file, Line: 1, Func: fn}
	}
	p := &pyprofile.Profile{Profiler: "sample", WindowSamples: 1, Threads: []pyprofile.Thread{{Role: "main"}}}
	add := func(n int, frames ...pyprofile.Frame) {
		st := pyprofile.Stack{Count: n, WindowCount: n, CPUCount: float64(n), WindowCPUCount: float64(n)}
		for _, f := range frames {
			p.Frames = append(p.Frames, f)
			st.Frames = append(st.Frames, len(p.Frames)-1)
		}
		p.Stacks = append(p.Stacks, st)
	}
	add(30, user(8, "im = im.float() / 255"))                                              // preprocessing
	add(10, user(16, "raw = torch.randint(0, 256, (64, 3, 160, 160), dtype=torch.uint8)")) // synthetic input
	add(25, user(18, "pred = net(x)"), lib("/torch/nn/modules/module.py", "_call_impl"))
	add(15, user(19, "loss.backward()"), lib("/torch/_tensor.py", "backward"))
	add(10, user(20, "opt.step()"), lib("/torch/optim/optimizer.py", "wrapper"))
	add(10, user(21, "h = torch.relu(x @ w1)"))                                                                            // a model written without nn.Module
	add(20, user(22, "auc = binary_auroc(p, y)"), lib("/torchmetrics/functional/classification/auroc.py", "binary_auroc")) // host.off-step's
	ev := runevidence.FromProfile(p)
	if ev.HotSamples != 120 || math.Abs(ev.OutsideModelShare-40.0/120) > 1e-9 || len(ev.OutsideModel) != 2 || ev.OutsideModel[0].Line != 8 || ev.OutsideModel[1].Line != 16 || ev.OutsideTransform != "" {
		t.Errorf("hot %d, outside %.2f %+v %q; want 120, 0.33 at lines 8 and 16, no transform", ev.HotSamples, ev.OutsideModelShare, ev.OutsideModel, ev.OutsideTransform)
	}
	// a library's data transform is an nn.Module too, but not the model:
	// torchaudio's Resample applied to each batch in the step
	add(60, user(23, "data = transform(data)"), lib("/torch/nn/modules/module.py", "_call_impl"),
		lib("/torchaudio/transforms/_transforms.py", "Resample.forward"), lib("/torchaudio/functional/functional.py", "_apply_sinc_resample_kernel"))
	ev = runevidence.FromProfile(p)
	if math.Abs(ev.OutsideModelShare-100.0/180) > 1e-9 || ev.OutsideModel[0].Line != 23 || ev.OutsideTransform != "Resample (torchaudio.transforms)" {
		t.Errorf("outside %.2f %+v %q; want 0.56 led by line 23, in torchaudio's Resample", ev.OutsideModelShare, ev.OutsideModel, ev.OutsideTransform)
	}
}

// The CPU change names the program's own tensor work first when it holds
// 40% of the busy samples; silent below, on too few samples, and when
// drawing random numbers leads (that change is already about inputs made
// in the loop).
func TestOutsideModelChange(t *testing.T) {
	spread := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::copy_", HostSelfUs: 300}, {Name: "aten::mkldnn_convolution", HostSelfUs: 300}, {Name: "aten::div", HostSelfUs: 400}}}
	random := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::random_", HostSelfUs: 600}, {Name: "aten::relu", HostSelfUs: 400}}}
	sorting := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::sort", HostSelfUs: 890}, {Name: "aten::mm", HostSelfUs: 110}}}
	lines := []runevidence.Line{{File: "/home/u/infer.py", Line: 8, Func: "preprocess", Pct: 30}, {File: "/home/u/infer.py", Line: 16, Func: "main", Pct: 10}}
	for _, c := range []struct {
		name    string
		ops     *optable.OpTable
		share   float64
		samples int
		named   bool
	}{
		{"preprocessing", spread, 0.65, 262, true},
		{"at the line", spread, 0.4, 100, true},
		{"below", spread, 0.3, 262, false},
		{"few samples", spread, 0.65, 12, false},
		{"random numbers lead", random, 0.65, 262, false},
		{"sorting leads", sorting, 0.65, 262, false},
	} {
		py := &runevidence.PythonEvidence{Window: true, Samples: c.samples, HotSamples: c.samples, OutsideModelShare: c.share, OutsideModel: lines,
			Hot: []runevidence.Line{{File: "/home/u/infer.py", Line: 18, Func: "main", Pct: 35}}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: c.ops}, py: py}
		s.findings()
		f := findingOf(s.d, "cpu.native")
		if f == nil {
			t.Fatalf("%s: no cpu.native finding", c.name)
		}
		named := strings.Contains(f.AllChanges(), "outside the model's forward, the backward and the optimizer (infer.py:8 30%, infer.py:16 10%)")
		if named && !strings.Contains(f.AllChanges(), "DataLoader workers (num_workers > 0), which overlaps it with the step") {
			t.Errorf("%s: %q, want workers offered (no CPU-share evidence says they would compete)", c.name, f.AllChanges())
		}
		if named != c.named || c.named && (len(f.Where) == 0 || f.Where[0].Line != 8) {
			t.Errorf("%s: change %q, where %+v; want the lines named: %v", c.name, f.AllChanges(), f.Where, c.named)
		}
		if !c.named && (len(f.Where) == 0 || f.Where[0].Line != 18) {
			t.Errorf("%s: where %+v, want the hot line first", c.name, f.Where)
		}
	}
}

// A data transform applied to each batch in the step is named, with
// "once before training" for a deterministic one; DataLoader workers are
// not offered where they would take the CPUs the step's native ops use.
func TestOutsideModelChangeNamesTheTransform(t *testing.T) {
	ops := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::copy_", HostSelfUs: 300}, {Name: "aten::mkldnn_convolution", HostSelfUs: 300}, {Name: "aten::div", HostSelfUs: 400}}}
	lines := []runevidence.Line{{File: "/home/u/speech.py", Line: 133, Func: "train", Pct: 36}}
	for _, c := range []struct {
		name      string
		transform string
		threads   int // intra-op threads on 2 CPUs
		want      []string
		not       string
	}{
		{"a transform, CPUs shared", "Resample (torchaudio.transforms)", 2,
			[]string{"most of them in the data transform Resample (torchaudio.transforms) applied to each batch in the step", "apply it once to the dataset before training", "keep the loading in the main process on this machine"}, "which overlaps it with the step"},
		{"a transform, CPUs to spare", "Resample (torchaudio.transforms)", 1,
			[]string{"apply it once to the dataset before training", "DataLoader workers (num_workers > 0), which overlaps it with the step"}, "keep the loading in the main process"},
		{"the program's own ops", "", 2, []string{"make what does not change once before the loop", "keep the loading in the main process on this machine"}, "data transform"},
	} {
		py := &runevidence.PythonEvidence{Window: true, Samples: 200, HotSamples: 200, OutsideModelShare: 0.47, OutsideModel: lines, OutsideTransform: c.transform}
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: 2, NumThreads: c.threads}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.75, Input: 0.25}, d: &Diagnosis{}, in: Analyses{Ops: ops, Run: run}, py: py}
		s.findings()
		f := findingOf(s.d, "cpu.native")
		if f == nil {
			t.Fatalf("%s: no cpu.native finding", c.name)
		}
		for _, w := range c.want {
			if !strings.Contains(f.AllChanges(), w) {
				t.Errorf("%s: %q, want %q", c.name, f.AllChanges(), w)
			}
		}
		if strings.Contains(f.AllChanges(), c.not) {
			t.Errorf("%s: %q, want no %q", c.name, f.AllChanges(), c.not)
		}
	}
}

// The backward of per-step slices leads the CPU change from 15% of the
// native time, with the packed-RNN advice when an RNN op runs; silent
// below and without slices.
func TestSliceBackwardChange(t *testing.T) {
	for _, c := range []struct {
		name string
		rows []optable.OpRow
		want string // "" : not named
	}{
		{"packed lstm", []optable.OpRow{{Name: "aten::slice_backward", HostTotalUs: 300, HostSelfUs: 10}, {Name: "aten::fill_", HostSelfUs: 290}, {Name: "aten::mm", HostSelfUs: 400}, {Name: "aten::lstm", HostSelfUs: 300}},
			"(aten::slice_backward / select_backward, with autograd's sums of their gradients: 30% of the native time) zero-fills a gradient of the whole tensor for every slice and adds the slice's into it, then adds those whole-tensor gradients up: nn.LSTM/GRU over a pack_padded_sequence"},
		{"x[:, t] in a loop", []optable.OpRow{{Name: "aten::select_backward", HostTotalUs: 200, HostSelfUs: 10}, {Name: "aten::fill_", HostSelfUs: 190}, {Name: "aten::addmm", HostSelfUs: 800}},
			"select_backward, with autograd's sums of their gradients: 20% of the native time) zero-fills a gradient of the whole tensor for every slice and adds the slice's into it, then adds those whole-tensor gradients up: take a sequence's steps once with x.unbind(dim)"},
		// autograd's node holds the backward and the sum of its gradient
		// into the others' (a Mamba's selective scan: 31% and 67%)
		{"with autograd's sums", []optable.OpRow{{Name: "autograd::engine::evaluate_function: SelectBackward0", HostTotalUs: 700, HostSelfUs: 10}, {Name: "aten::select_backward", HostTotalUs: 300, HostSelfUs: 10},
			{Name: "aten::fill_", HostSelfUs: 280}, {Name: "aten::add_", HostSelfUs: 400}, {Name: "aten::mul", HostSelfUs: 300}}, "70% of the native time"},
		{"a few slices", []optable.OpRow{{Name: "aten::slice_backward", HostTotalUs: 100, HostSelfUs: 10}, {Name: "aten::addmm", HostSelfUs: 990}}, ""},
		{"no slices", []optable.OpRow{{Name: "aten::lstm", HostSelfUs: 500}, {Name: "aten::addmm", HostSelfUs: 500}}, ""},
	} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: &optable.OpTable{Rows: c.rows}}}
		s.findings()
		f := findingOf(s.d, "cpu.native")
		if f == nil {
			t.Fatalf("%s: no cpu.native", c.name)
		}
		if named := strings.Contains(f.AllChanges(), "zero-fills a gradient"); named != (c.want != "") || c.want != "" && !strings.Contains(f.AllChanges(), c.want) {
			t.Errorf("%s: %s", c.name, f.AllChanges())
		}
	}
}

// mainThreadProfile is a sampled profile of the main thread with one
// stack of 10 samples, all on the CPU and in the window, per frames.
func mainThreadProfile(stacks ...[]pyprofile.Frame) *pyprofile.Profile {
	p := &pyprofile.Profile{Profiler: "sample", WindowSamples: 1, Threads: []pyprofile.Thread{{Role: "main"}}}
	for _, frames := range stacks {
		st := pyprofile.Stack{Count: 10, WindowCount: 10, CPUCount: 10, WindowCPUCount: 10}
		for _, f := range frames {
			p.Frames = append(p.Frames, f)
			st.Frames = append(st.Frames, len(p.Frames)-1)
		}
		p.Stacks = append(p.Stacks, st)
	}
	return p
}

// A program whose one line calls a library that makes its own DataLoader
// (pytorch-tabnet's clf.fit: its TorchDataset indexed one sample at a
// time) is told to make the dataset's sample method and collation
// cheaper, loaded in the library's loop called at that line, not to make
// the line's function (<module>) cheaper; where the line is the
// program's own dataset code under the loader, that function is named.
func TestLoaderInsideLibrary(t *testing.T) {
	frame := func(file string, line int, fn string) pyprofile.Frame {
		return pyprofile.Frame{File: file, Line: line, Func: fn}
	}
	fit := frame("/home/u/train_tabnet.py", 16, "<module>")
	epoch := frame(sitePkgs+"/pytorch_tabnet/abstract_model.py", 1, "TabModel._train_epoch")
	next := frame(sitePkgs+"/torch/utils/data/dataloader.py", 1, "_BaseDataLoaderIter.__next__")
	item := frame(sitePkgs+"/pytorch_tabnet/utils.py", 1, "TorchDataset.__getitem__")
	batch := frame(sitePkgs+"/pytorch_tabnet/abstract_model.py", 2, "TabModel._train_batch")
	own := frame("/home/u/data.py", 30, "Rows.__getitem__")
	zero := 0
	for _, c := range []struct {
		name string
		py   *runevidence.PythonEvidence
		want string
	}{
		// training under the same line takes most of its samples: the
		// loading's library call is read from the loader's samples alone
		{"library's loader", runevidence.FromProfile(mainThreadProfile([]pyprofile.Frame{fit, epoch, next, item}, []pyprofile.Frame{fit, epoch, batch}, []pyprofile.Frame{fit, epoch, batch})),
			"make the dataset's __getitem__ and the batch's collation (loaded in pytorch_tabnet's TabModel._train_epoch, called at train_tabnet.py:16, 33% of the main thread's samples) cheaper"},
		{"program's dataset", runevidence.FromProfile(mainThreadProfile([]pyprofile.Frame{fit, epoch, next, own}, []pyprofile.Frame{fit, epoch, batch})),
			"make Rows.__getitem__ at data.py:30 (50% of the main thread's samples) cheaper"},
	} {
		s := &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{Input: 0.6}, d: &Diagnosis{}, py: c.py,
			in: Analyses{Run: &runevidence.RunEvidence{HasDataLoader: true, Loaders: []runevidence.Loader{{Dataset: "TorchDataset", NumWorkers: &zero}}}}}
		s.findings()
		if f := findingOf(s.d, "input.loader"); f == nil || !strings.Contains(f.AllChanges(), c.want) {
			t.Errorf("%s: %+v, want %q", c.name, f, c.want)
		}
	}
}

// A Dataset that reads a file per sample (torch.load in __getitem__ under
// the DataLoader) is input work, not checkpointing: its samples count as
// DataLoader code, and the input change names the reads and packing; a
// torch.save in the loop stays file I/O, and a loader that computes its
// samples gets no such text.
func TestLoaderFileReads(t *testing.T) {
	user := func(line int, fn string) pyprofile.Frame {
		return pyprofile.Frame{File: "/home/u/train.py", Line: line, Func: fn}
	}
	lib := func(file, fn string) pyprofile.Frame {
		return pyprofile.Frame{File: sitePkgs + file, Line: 1, Func: fn}
	}
	next := lib("/torch/utils/data/dataloader.py", "_BaseDataLoaderIter.__next__")
	read := []pyprofile.Frame{user(40, "<module>"), next, user(10, "Files.__getitem__"), lib("/torch/serialization.py", "load")}
	compute := []pyprofile.Frame{user(40, "<module>"), next, user(11, "Files.__getitem__")}
	collate := []pyprofile.Frame{user(40, "<module>"), next, lib("/torch/utils/data/_utils/fetch.py", "fetch"), user(20, "pad_batch")}
	save := []pyprofile.Frame{user(45, "<module>"), lib("/torch/serialization.py", "save")}

	ev := runevidence.FromProfile(mainThreadProfile(read, read, read, compute, save))
	if ev.LoaderShare != 0.8 || ev.LoaderIOShare != 0.75 || ev.IOShare != 0.2 || len(ev.IOLines) != 1 || ev.IOLines[0].Line != 45 || ev.IOReadShare != 0 {
		t.Errorf("loader %.2f (file reads %.2f), I/O %.2f at %+v; want 0.80 (0.75), 0.20 at line 45", ev.LoaderShare, ev.LoaderIOShare, ev.IOShare, ev.IOLines)
	}

	// outside the DataLoader, a read in the loop is input (a shard
	// np.load-ed per step), a save is a checkpoint: io.in-step's change
	// follows
	loopRead := []pyprofile.Frame{user(50, "<module>"), lib("/numpy/lib/_npyio_impl.py", "load")}
	for _, c := range []struct {
		py    *runevidence.PythonEvidence
		reads bool
	}{{runevidence.FromProfile(mainThreadProfile(loopRead, loopRead, compute)), true}, {runevidence.FromProfile(mainThreadProfile(save, save, compute)), false}} {
		s := &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{IO: 0.6}, d: &Diagnosis{}, py: c.py, in: Analyses{Breakdown: &breakdown.Result{AveragedSteps: 3}}}
		s.findings()
		if f := findingOf(s.d, "io.in-step"); f == nil || strings.HasPrefix(f.AllChanges(), "the step reads files (100% of its I/O samples") != c.reads ||
			!c.reads && f.Change != strings.Split(rule("io.in-step").Change, altMark)[0] {
			t.Errorf("reads %v: %+v", c.reads, f)
		}
		s.verdict()
		if v := s.d.Verdict; v.Primary != IO || strings.HasPrefix(v.Detail, "file reads in the step") != c.reads {
			t.Errorf("reads %v: verdict %s (%s)", c.reads, v.Primary, v.Detail)
		}
	}

	zero := 0
	for _, c := range []struct {
		name    string
		py      *runevidence.PythonEvidence
		reads   bool
		cheaper string // the loading line named when not file reads
	}{
		{"file per sample", ev, true, ""},
		{"computed samples", runevidence.FromProfile(mainThreadProfile(compute, compute, read, save)), false, "or make Files.__getitem__ at train.py:11 (50% of the main thread's samples) cheaper"},
		// a collate_fn, not __getitem__, builds the batches
		{"collate", runevidence.FromProfile(mainThreadProfile(collate, collate, collate, compute, save)), false, "or make pad_batch at train.py:20 (60% of the main thread's samples) cheaper"},
	} {
		s := &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{Input: 0.6}, d: &Diagnosis{}, py: c.py,
			in: Analyses{Run: &runevidence.RunEvidence{HasDataLoader: true, Loaders: []runevidence.Loader{{Dataset: "Files", NumWorkers: &zero}}}}}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil {
			t.Fatalf("%s: no input finding", c.name)
		}
		if got := strings.Contains(f.AllChanges(), "file per sample"); got != c.reads || !strings.Contains(f.AllChanges(), "num_workers=0") || !strings.Contains(f.AllChanges(), c.cheaper) {
			t.Errorf("%s: change %q", c.name, f.AllChanges())
		}
	}
}

// Unfused attention inside nn.MultiheadAttention gets need_weights=False
// at the line that calls it (and, on a CPU, the fast path off when its
// native op ran); attention written by hand, or too few samples in the
// module, keeps scaled_dot_product_attention.
func TestMultiheadAttentionChange(t *testing.T) {
	user := func(line int) pyprofile.Frame {
		return pyprofile.Frame{File: "/home/u/vit.py", Line: line, Func: "Block.forward"}
	}
	lib := func(file, fn string) pyprofile.Frame {
		return pyprofile.Frame{File: sitePkgs + file, Line: 1, Func: fn}
	}
	profile := func(stacks map[int][]pyprofile.Frame) *runevidence.PythonEvidence {
		p := &pyprofile.Profile{Profiler: "sample", WindowSamples: 1, Threads: []pyprofile.Thread{{Role: "main"}}}
		for n, frames := range stacks {
			st := pyprofile.Stack{Count: n, WindowCount: n, CPUCount: float64(n), WindowCPUCount: float64(n)}
			for _, f := range frames {
				p.Frames = append(p.Frames, f)
				st.Frames = append(st.Frames, len(p.Frames)-1)
			}
			p.Stacks = append(p.Stacks, st)
		}
		return runevidence.FromProfile(p)
	}
	module := lib("/torch/nn/modules/module.py", "Module._call_impl")
	mha := profile(map[int][]pyprofile.Frame{
		30: {user(8), module, lib("/torch/nn/modules/activation.py", "MultiheadAttention.forward"), lib("/torch/nn/functional.py", "multi_head_attention_forward")},
		60: {user(9), module, lib("/torch/nn/modules/linear.py", "Linear.forward")},
		10: {user(10), module, lib("/torch/nn/modules/activation.py", "GELU.forward")},
	})
	if mha.MHAShare != 0.3 || len(mha.MHALines) != 1 || mha.MHALines[0].Line != 8 {
		t.Fatalf("MHA share %.2f at %+v, want 0.30 at line 8", mha.MHAShare, mha.MHALines)
	}
	old := profile(map[int][]pyprofile.Frame{ // Python 3.10: no class in the name
		30: {user(8), module, lib("/torch/nn/modules/activation.py", "forward"), lib("/torch/nn/functional.py", "multi_head_attention_forward")},
		70: {user(9), module, lib("/torch/nn/modules/activation.py", "forward")},
	})
	if old.MHAShare != 0.3 {
		t.Errorf("Python 3.10 names: MHA share %.2f, want 0.30", old.MHAShare)
	}
	few := profile(map[int][]pyprofile.Frame{2: {user(8), lib("/torch/nn/functional.py", "multi_head_attention_forward")}, 98: {user(9)}})
	native := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::_native_multi_head_attention"}, {Name: "aten::bmm"}}}
	for _, c := range []struct {
		name string
		py   *runevidence.PythonEvidence
		ops  *optable.OpTable
		cpu  bool
		want string
	}{
		{"by hand", nil, nil, true, "scaled_dot_product_attention(q, k, v"},
		{"few samples in the module", few, nil, true, "scaled_dot_product_attention(q, k, v"},
		{"module, training", mha, nil, true, "need_weights=False where they are not used (vit.py:8)"},
		{"module, GPU", mha, native, false, "need_weights=False where they are not used (vit.py:8)"},
		{"fast path on a CPU", mha, native, true, "set_fastpath_enabled(False) and need_weights=False in its calls (vit.py:8)"},
	} {
		s := &state{p: Default, py: c.py, in: Analyses{Ops: c.ops}}
		got, where := s.attentionFix(c.cpu)
		if !strings.Contains(got, c.want) || (c.py == mha) != (len(where) == 1 && where[0].Line == 8) {
			t.Errorf("%s: %q at %+v, want %q", c.name, got, where, c.want)
		}
	}
}

// Gradient accumulation under DDP without no_sync() syncs after every
// micro-batch: the syncs beyond one per update are at stake, and the
// change is no_sync(). One sync per update (no accumulation, or no_sync
// in place) gives no such finding, and then comm.exposed does not propose
// no_sync either.
func TestGradSyncFinding(t *testing.T) {
	for _, c := range []struct {
		name     string
		sync     *regions.GradSync
		fires    bool
		exposed  string // in comm.exposed's change
		excluded string // not in it
	}{
		{"accumulation without no_sync", &regions.GradSync{Steps: 3, Forwards: 12, Synced: 12, Updates: 3}, true, "no_sync() during gradient accumulation", ""},
		{"no_sync in place", &regions.GradSync{Steps: 3, Forwards: 12, Synced: 3, Updates: 3}, false, "already sync once per optimizer update", "no_sync() during"},
		{"no accumulation", &regions.GradSync{Steps: 3, Forwards: 3, Synced: 3, Updates: 3}, false, "no_sync() during gradient accumulation", ""},
		{"a GAN", &regions.GradSync{Steps: 3, Forwards: 6, Synced: 6, Updates: 6}, false, "no_sync() during gradient accumulation", ""},
		{"no DDP", nil, false, "no_sync() during gradient accumulation", ""},
	} {
		s := &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{Comm: 0.4}, d: &Diagnosis{},
			in: Analyses{Regions: &regions.Result{GradSync: c.sync}}}
		s.findings()
		f := findingOf(s.d, "comm.no-sync")
		if (f != nil) != c.fires {
			t.Fatalf("%s: finding %+v, want one: %v", c.name, f, c.fires)
		}
		if f != nil && (f.AtStakeUs != 300 || !strings.Contains(f.AllChanges(), "model.no_sync()") || !strings.Contains(f.Title, "4 times per optimizer update")) {
			t.Errorf("%s: %+v, want 300 µs at stake (3 of 4 syncs of 400 µs) and no_sync()", c.name, f)
		}
		e := findingOf(s.d, "comm.exposed")
		if e == nil || !strings.Contains(e.AllChanges(), c.exposed) || c.excluded != "" && strings.Contains(e.AllChanges(), c.excluded) {
			t.Errorf("%s: comm.exposed %+v, want %q in its change", c.name, e, c.exposed)
		}
	}
}

// comm.exposed on a DDP model whose gradients are under 1 MiB (one
// bucket, all-reduced when the backward ends) says the all-reduce is
// latency and asks for fewer of them, not overlap; a larger model, a
// program without DDP, or no optimizer record keep the overlap change.
func TestCommSmallGradients(t *testing.T) {
	ddp := []rundir.ModelCall{{Class: "DistributedDataParallel", Module: "torch.nn.parallel.distributed", Calls: 1}}
	opt := func(numel int64, dtype string) []rundir.Optimizer {
		return []rundir.Optimizer{{Class: "SGD", Params: 2, Numel: numel, Largest: []rundir.OptimizerParam{{Numel: numel, DType: dtype}}}}
	}
	for _, c := range []struct {
		name   string
		models []rundir.ModelCall
		opts   []rundir.Optimizer
		small  string
	}{
		{"Linear(20, 1) under DDP", ddp, opt(21, "float32"), "the gradients are only 84 B (21 parameters)"},
		{"a 1M-parameter model in bfloat16", ddp, opt(400_000, "bfloat16"), "the gradients are only 781 KiB (400000 parameters)"},
		{"a 1M-parameter model", ddp, opt(1_000_000, "float32"), ""},
		{"no DDP", nil, opt(21, "float32"), ""},
		{"no optimizer recorded", ddp, nil, ""},
	} {
		s := &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{Comm: 0.5}, d: &Diagnosis{},
			in: Analyses{Run: &runevidence.RunEvidence{Models: c.models, Optimizers: c.opts}}}
		s.findings()
		f := findingOf(s.d, "comm.exposed")
		if f == nil {
			t.Fatalf("%s: no comm.exposed", c.name)
		}
		ch := f.AllChanges()
		if c.small != "" && (!strings.HasPrefix(f.Change, c.small) || strings.Contains(ch, "overlap communication with backward")) ||
			c.small == "" && (!strings.Contains(ch, "overlap communication with backward") || strings.Contains(ch, "gradients are only")) {
			t.Errorf("%s: change %q, want %q first", c.name, ch, c.small)
		}
	}
}

// The main thread blocked inside torch while another thread runs Python
// on a CPU waits for the GIL: host.gil names the thread's line, and the
// verdict is host-bound. Silent when the other thread runs torch ops
// (they release the GIL), mostly waits, when the main thread stays on a
// CPU, and on a device.
func TestGILFinding(t *testing.T) {
	lib := func(file, fn string) pyprofile.Frame {
		return pyprofile.Frame{File: sitePkgs + file, Line: 1, Func: fn}
	}
	user := func(line int, fn, text string) pyprofile.Frame {
		return pyprofile.Frame{File: "/home/u/train.py", Line: line, Func: fn, Text: text}
	}
	type stack struct {
		thread   int
		n        int
		cpu      float64
		frames   []pyprofile.Frame
		mainWait float64
	}
	profile := func(stacks ...stack) *runevidence.PythonEvidence {
		p := &pyprofile.Profile{Profiler: "sample", CPUClock: true, WindowSamples: 1,
			Threads: []pyprofile.Thread{{Role: "main", Name: "MainThread", Samples: 100}, {Role: "other", Name: "Thread-1 (parser)", Samples: 100}}}
		for _, s := range stacks {
			st := pyprofile.Stack{Thread: s.thread, Count: s.n, WindowCount: s.n, CPUCount: s.cpu, WindowCPUCount: s.cpu, WaitCount: s.mainWait}
			for _, f := range s.frames {
				p.Frames = append(p.Frames, f)
				st.Frames = append(st.Frames, len(p.Frames)-1)
			}
			p.Stacks = append(p.Stacks, st)
		}
		return runevidence.FromProfile(p)
	}
	backward := []pyprofile.Frame{user(14, "<module>", "loss.backward()"), lib("/torch/autograd/__init__.py", "backward")}
	blockedMain := stack{0, 100, 20, backward, 20} // 60 of 100 off the CPU, not waiting for one
	busyMain := stack{0, 100, 85, backward, 7}     // 8% blocked
	parser := stack{1, 100, 90, []pyprofile.Frame{user(9, "parser", "d = json.loads(line)"), lib("/../json/decoder.py", "JSONDecoder.raw_decode")}, 0}
	matmuls := stack{1, 100, 90, []pyprofile.Frame{user(8, "worker", "a = torch.tanh(a @ a)")}, 0}
	waiting := stack{1, 100, 1, []pyprofile.Frame{user(9, "parser", "d = json.loads(line)"), lib("/../threading.py", "Condition.wait")}, 0}
	for _, c := range []struct {
		name   string
		py     *runevidence.PythonEvidence
		device bool
		fires  bool
	}{
		{"a thread parsing JSON", profile(blockedMain, parser), false, true},
		{"on a device", profile(blockedMain, parser), true, false},
		{"a thread running matmuls", profile(blockedMain, matmuls), false, false},
		{"a waiting thread", profile(blockedMain, waiting), false, false},
		{"the main thread on a CPU", profile(busyMain, parser), false, false},
	} {
		s := &state{p: Default, step: 1000, steps: 3, device: c.device, py: c.py, share: map[Class]float64{Host: 0.3, CPUCompute: 0.7}, d: &Diagnosis{}}
		s.findings()
		f := findingOf(s.d, "host.gil")
		if (f != nil) != c.fires {
			t.Errorf("%s: host.gil %+v, want %v (GIL evidence %+v)", c.name, f, c.fires, c.py.GIL)
			continue
		}
		if f != nil && (f.AtStakeUs != 800 || len(f.Where) == 0 || f.Where[0].Line != 9 || findingOf(s.d, "host.python") != nil) {
			t.Errorf("%s: %+v, want 800 µs at stake (off the CPU, waits included) at the parser's line 9, and no host.python", c.name, f)
		}
	}
}

// On a device, host.python says the host's time is the step's own
// framework calls, and asks for more work per kernel and CUDA graphs,
// when most of the main thread's samples are the model's forward, the
// backward and the optimizer; the program's own Python between them, too
// few samples, or no device keep the general change.
func TestStepOverheadChange(t *testing.T) {
	for _, c := range []struct {
		name    string
		device  bool
		outside float64
		samples int
		want    bool
	}{
		{"small CNN on an H100", true, 0.05, 21 + 10, true},
		{"the program's own Python", true, 0.5, 40, false},
		{"few samples", true, 0.05, 10, false},
		{"CPU-only", false, 0.05, 40, false},
	} {
		s := &state{p: Default, step: 3300, steps: 30, device: c.device, share: map[Class]float64{Host: 0.9, GPUCompute: 0.04}, d: &Diagnosis{},
			py: &runevidence.PythonEvidence{HotSamples: c.samples, OutsideModelShare: c.outside, Hot: []runevidence.Line{{File: "/home/u/train.py", Line: 47, Pct: 52}}}}
		if ch := hostPythonChange(t, s, c.name); strings.Contains(ch, `mode="reduce-overhead"`) != c.want {
			t.Errorf("%s: %s", c.name, ch)
		}
	}
}

// On a CPU, host.python names the model's forward, the backward and the
// optimizer as where its Python runs when the window's busy samples are
// mostly there (transformers' Trainer: all of them), with the program's
// own code as an alternative where it holds MinFinding of them; silent
// where the program's own code holds OutsideModelShare, with few samples,
// or on a device (stepOverheadChange's).
func TestInsideModelChange(t *testing.T) {
	for _, c := range []struct {
		name          string
		device        bool
		outside       float64
		samples       int
		want, aroundX bool
	}{
		{"a Trainer's BERT", false, 0, 103, true, false},
		{"a DQN's own code beside it", false, 0.37, 80, true, true},
		{"the program's own Python", false, 0.5, 80, false, false},
		{"few samples", false, 0.05, 10, false, false},
		{"on a device", true, 0.05, 40, false, false},
	} {
		s := &state{p: Default, step: 3300, steps: 30, device: c.device, share: map[Class]float64{Host: 0.3, CPUCompute: 0.6}, d: &Diagnosis{},
			py: &runevidence.PythonEvidence{HotSamples: c.samples, OutsideModelShare: c.outside, Hot: []runevidence.Line{{File: "/home/u/train.py", Line: 47, Pct: 52}}}}
		ch := hostPythonChange(t, s, c.name)
		if strings.Contains(ch, "inside the model's forward, the backward and the optimizer step") != c.want || strings.Contains(ch, "vectorise the program's own tensor code around the model") != c.aroundX {
			t.Errorf("%s: %s", c.name, ch)
		}
		if c.want && (strings.Contains(ch, "vectorise it with tensor ops") || strings.Contains(ch, "a larger batch") || !strings.Contains(ch, "whether that saves more than it costs is the model's")) {
			t.Errorf("%s: promises: %s", c.name, ch)
		}
	}
}

// On a device, host.python names token-by-token decoding when the
// window's hottest line, with half of its samples or more, calls
// generate(; another hot line, a minor one, or no device keep the rest.
func TestDecodeChange(t *testing.T) {
	for _, c := range []struct {
		name   string
		device bool
		line   runevidence.Line
		want   bool
	}{
		{"generate on a GPU", true, runevidence.Line{File: "/home/u/gen.py", Line: 12, Pct: 100, Text: "out = model.generate(prompt, max_new_tokens=96)"}, true},
		{"a training line", true, runevidence.Line{File: "/home/u/train.py", Line: 12, Pct: 100, Text: "loss.backward()"}, false},
		{"generate a minor share", true, runevidence.Line{File: "/home/u/gen.py", Line: 12, Pct: 30, Text: "out = model.generate(prompt)"}, false},
		{"generate on a CPU", false, runevidence.Line{File: "/home/u/gen.py", Line: 12, Pct: 100, Text: "out = model.generate(prompt)"}, false},
	} {
		s := &state{p: Default, step: 9000, steps: 30, device: c.device, share: map[Class]float64{Host: 0.9, GPUCompute: 0.03}, d: &Diagnosis{},
			py: &runevidence.PythonEvidence{HotSamples: 60, ModuleShare: 0.84, Hot: []runevidence.Line{c.line}}}
		if ch := hostPythonChange(t, s, c.name); strings.Contains(ch, "static KV cache") != c.want {
			t.Errorf("%s: %s", c.name, ch)
		}
	}
}

// host.inference-grad: steps that are a module's forwards, run with
// autograd on, no backward in the window, and enough ops a step for
// their recording to matter. Silent: a backward ran, grad mode off,
// DataLoader steps (their boundary is outside the program's no_grad
// block), a few large ops a step.
func TestInferenceGradFinding(t *testing.T) {
	for _, c := range []struct {
		name          string
		source        string
		grad          bool
		calls, backwd int
		want          bool
	}{
		{"small layers, autograd on", "forward", true, 164 * 20, 0, true},
		{"a backward ran", "forward", true, 164 * 20, 40, false},
		{"under no_grad", "forward", false, 164 * 20, 0, false},
		{"DataLoader steps", "dataloader", true, 164 * 20, 0, false},
		{"a few large matmuls", "forward", true, 12 * 20, 0, false},
	} {
		run := &runevidence.RunEvidence{StepSource: c.source, Env: &runevidence.Env{Flags: map[string]any{"grad_enabled": c.grad}}}
		s := &state{p: Default, step: 2670, steps: 20, share: map[Class]float64{Host: 0.48, CPUCompute: 0.52}, d: &Diagnosis{},
			in: Analyses{Run: run, Ops: &optable.OpTable{Calls: c.calls, Steps: 20, BackwardCalls: c.backwd}}}
		s.findings()
		if f := findingOf(s.d, "host.inference-grad"); (f != nil) != c.want {
			t.Errorf("%s: finding %+v, want %v", c.name, f, c.want)
		} else if f != nil && (math.Abs(f.AtStakeUs-328) > 1 || !strings.Contains(f.Title, "164 ops")) {
			t.Errorf("%s: %s, at stake %.0f µs, want 164 ops x 2 µs", c.name, f.Title, f.AtStakeUs)
		}
	}
}

// host.launch under a serving engine names the engine's graph mode (vLLM
// run with enforce_eager, SGLang with --disable-cuda-graph); other
// programs keep CUDA graphs through torch.compile.
func TestLaunchChangeNamesTheServingEngine(t *testing.T) {
	for _, c := range []struct{ op, graphs, want string }{
		{"vllm::unified_attention_with_output", "", "drop enforce_eager=True"},
		{"sgl_kernel::rmsnorm", "", "drop --disable-cuda-graph"},
		{"aten::mm", "", "torch.compile(model)"},
		// the engine's graphs already launch: its eager mode is not the cause
		{"vllm::unified_attention_with_output", "cudaGraphLaunch", "torch.compile(model)"},
	} {
		rows := []optable.OpRow{{Name: c.op, Calls: 100, HostSelfUs: 500}}
		if c.graphs != "" {
			rows = append(rows, optable.OpRow{Name: c.graphs, Calls: 1, HostSelfUs: 10})
		}
		s := &state{p: Default, step: 1000, steps: 1, device: true, share: map[Class]float64{Launch: 0.7}, d: &Diagnosis{},
			in: Analyses{Ops: &optable.OpTable{Rows: rows}}}
		s.findings()
		f := findingOf(s.d, "host.launch")
		if f == nil || !strings.Contains(f.AllChanges(), c.want) || c.want != "drop enforce_eager=True" && strings.Contains(f.AllChanges(), "enforce_eager") {
			t.Errorf("%s %s: %+v, want the change to name %q", c.op, c.graphs, f, c.want)
		}
	}
}

// With a training loader and an evaluation loader, the input finding
// judges the one the step waited for, names it and lists it first,
// whatever the order the run lists them in: a training loader with 4
// workers was once told num_workers=0, the evaluation loader's. One
// loader keeps the change as it was.
func TestInputJudgesTheLoaderWaitedFor(t *testing.T) {
	zero, four := 0, 4
	train := runevidence.Loader{Dataset: "TrainImages", NumWorkers: &four, Batches: 400, WaitS: 12}
	eval := runevidence.Loader{Dataset: "EvalImages", NumWorkers: &zero, Batches: 50, WaitS: 2}
	for _, c := range []struct {
		name    string
		loaders []runevidence.Loader
		want    string
		nowant  string
		first   string
	}{
		{"training first", []runevidence.Loader{train, eval}, "the step waits for the DataLoader over TrainImages (12.0 s of the run's 14.0 s of DataLoader wait; the program has 2 loaders): 4 workers cannot keep up", "num_workers=0", "TrainImages"},
		{"evaluation first", []runevidence.Loader{eval, train}, "the step waits for the DataLoader over TrainImages", "num_workers=0", "TrainImages"},
		// the evaluation's loader waited for most: it is the one judged
		{"evaluation waited for", []runevidence.Loader{train, {Dataset: "EvalImages", NumWorkers: &zero, Batches: 50, WaitS: 20}}, "DataLoader over EvalImages (20.0 s of the run's 32.0 s", "4 workers", "EvalImages"},
		{"one loader", []runevidence.Loader{eval}, "the DataLoader over EvalImages loads its batches in the main thread (num_workers=0)", "the program has", "EvalImages"},
	} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{Input: 0.8}, d: &Diagnosis{}, in: Analyses{Run: &runevidence.RunEvidence{Loaders: c.loaders}}}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil {
			t.Fatalf("%s: no input finding", c.name)
		}
		if !strings.Contains(f.AllChanges(), c.want) || strings.Contains(f.AllChanges(), c.nowant) {
			t.Errorf("%s: change %q, want %q and not %q", c.name, f.AllChanges(), c.want, c.nowant)
		}
		if i := slices.IndexFunc(f.Where, func(l Location) bool { return l.Kind == "dataloader" }); i < 0 || f.Where[i].Name != c.first {
			t.Errorf("%s: where %+v, want %s first", c.name, f.Where, c.first)
		}
	}
}

// host.python's general change names the DataLoader only where the trace
// or the run shows one.
func TestHostPythonNamesTheDataLoaderOnlyWhereOneRuns(t *testing.T) {
	for _, c := range []struct {
		name   string
		ops    []optable.OpRow
		run    *runevidence.RunEvidence
		loader bool
	}{
		{"no loader", []optable.OpRow{{Name: "aten::mm", Calls: 10, HostSelfUs: 100}}, nil, false},
		{"no loader in the run", []optable.OpRow{{Name: "aten::mm", Calls: 10, HostSelfUs: 100}}, &runevidence.RunEvidence{}, false},
		{"loader in the trace", []optable.OpRow{{Name: "aten::mm", Calls: 10, HostSelfUs: 100}, {Name: "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", Calls: 3, HostSelfUs: 30}}, nil, true},
		{"loader in the run", []optable.OpRow{{Name: "aten::mm", Calls: 10, HostSelfUs: 100}}, &runevidence.RunEvidence{HasDataLoader: true}, true},
	} {
		s := &state{p: Default, step: 1000, steps: 1, device: true, share: map[Class]float64{Host: 0.6, GPUCompute: 0.4}, d: &Diagnosis{},
			in: Analyses{Ops: &optable.OpTable{Rows: c.ops}, Run: c.run}}
		s.findings()
		f := findingOf(s.d, "host.python")
		if f == nil {
			t.Fatalf("%s: no host.python finding", c.name)
		}
		if got := strings.Contains(f.AllChanges(), "DataLoader"); got != c.loader {
			t.Errorf("%s: DataLoader named: %v, want %v: %s", c.name, got, c.loader, f.AllChanges())
		}
	}
}

// Loading in the main process that waits (a Dataset that sleeps or
// reads) gets as many workers as hide a batch behind the rest of the
// step, beyond the CPUs; loading that computes gets the CPUs but one.
func TestWorkersForLoadingThatWaits(t *testing.T) {
	zero := 0
	for _, c := range []struct {
		name    string
		offCPU  float64
		workers int
	}{
		{"sleeps", 0.95, 8},  // 90% input: 9 batches' worth, capped at 8
		{"computes", 0.1, 1}, // 2 CPUs: one worker
		{"half waits", 0.5, 1},
	} {
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: 2}, Loaders: []runevidence.Loader{{Dataset: "Slow", NumWorkers: &zero, Batches: 20}}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{Input: 0.9}, d: &Diagnosis{}, in: Analyses{Run: run},
			py: &runevidence.PythonEvidence{LoaderOffCPU: c.offCPU}}
		if n := s.advisedWorkers(); n != c.workers {
			t.Errorf("%s: %d workers, want %d", c.name, n, c.workers)
		}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil || !strings.Contains(f.Change, "DataLoader(num_workers="+strconv.Itoa(c.workers)+",") ||
			strings.Contains(f.Change, "waiting workers need no CPU") != (c.workers > 1) {
			t.Errorf("%s: %+v", c.name, f)
		}
	}
}

// A batch the main thread makes in less time than a worker takes to hand
// one over gets no workers first (Lightning's quick-start autoencoder on
// a TensorDataset, 0.25 ms a batch: one persistent worker took 1.7x as
// long); a batch of 30 ms keeps them, and so does a loader whose wait
// was not measured. An iterable dataset is told to yield whole batches
// (Lightning's DQN template collated 16 samples of 5 tensors a batch:
// 1.21x yielding slices), an indexed one to fetch them by a BatchSampler.
func TestNoWorkersForBatchesFasterThanAHandover(t *testing.T) {
	zero := 0
	for _, c := range []struct {
		name     string
		waitS    float64
		workers  bool
		iterable bool
	}{
		{"0.25 ms a batch", 0.47, false, false},
		{"0.25 ms a batch, iterable", 0.47, false, true},
		{"30 ms a batch", 56, true, false},
		{"wait not measured", 0, true, false},
	} {
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: 16}, Loaders: []runevidence.Loader{{Dataset: "TensorDataset", NumWorkers: &zero, Batches: 1875, WaitS: c.waitS, Iterable: c.iterable}}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{Input: 0.3}, d: &Diagnosis{}, in: Analyses{Run: run}}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil {
			t.Fatalf("%s: no finding", c.name)
		}
		if got := strings.Contains(f.Change, "persistent_workers=True) loads them in background workers"); got != c.workers || got == strings.Contains(f.Change, "less than handing a batch over") {
			t.Errorf("%s: workers first %v, want %v: %s", c.name, got, c.workers, f.AllChanges())
		}
		if !c.workers && (strings.Contains(f.Change, "__iter__ yields whole batches") != c.iterable || strings.Contains(f.Change, "BatchSampler") == c.iterable) {
			t.Errorf("%s: one call a batch: %s", c.name, f.Change)
		}
	}
}

// Loading that computes in the main process of a run without an
// accelerator whose intra-op threads take every CPU, beside a step of
// native ops, gets no workers promised: they would share the step's CPUs
// (mnist_rnn on 2 CPUs: num_workers=1 made it 1.27-1.84x slower). One
// thread on 2 CPUs, an accelerator, loading that waits, or a step of
// Python keep the workers.
func TestInputWorkersShareTheStepsCPUs(t *testing.T) {
	zero := 0
	for _, c := range []struct {
		name            string
		cpus, threads   int
		gpu             bool
		offCPU, cpuComp float64
		shared          bool
	}{
		{"2 threads on 2 CPUs, native ops", 2, 2, false, 0.05, 0.35, true},
		{"1 thread on 2 CPUs", 2, 1, false, 0.05, 0.35, false},
		{"an accelerator", 2, 2, true, 0.05, 0.35, false},
		{"loading that waits", 2, 2, false, 0.95, 0.35, false},
		{"a step of Python", 2, 2, false, 0.05, 0.1, false},
		{"a file per sample", 2, 2, false, 0.05, 0.35, false},
	} {
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: c.cpus, NumThreads: c.threads}, Loaders: []runevidence.Loader{{Dataset: "FakeMNIST", NumWorkers: &zero, Batches: 900}}}
		py := &runevidence.PythonEvidence{LoaderOffCPU: c.offCPU, LoaderLines: []runevidence.Line{{File: "/home/u/main.py", Line: 46, Func: "train", Pct: 63, Text: "for batch_idx, (data, target) in enumerate(train_loader):", CallsLoader: true}}}
		if c.name == "a file per sample" { // packing the samples leads
			py.LoaderIOShare = 0.9
		}
		s := &state{p: Default, step: 1000, share: map[Class]float64{Input: 0.6, CPUCompute: c.cpuComp}, d: &Diagnosis{}, in: Analyses{Run: run}, py: py, usesGPU: c.gpu, device: c.gpu}
		// packing the samples leads there: no workers saving either way
		if _, ok := s.workersSaving(); ok != (!c.shared && py.LoaderIOShare == 0) {
			t.Errorf("%s: a workers saving predicted: %v", c.name, ok)
		}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil {
			t.Fatalf("%s: no input finding", c.name)
		}
		ch := f.AllChanges()
		if strings.Contains(ch, "workers would load on the CPUs the step's ops already use") != c.shared ||
			strings.HasPrefix(f.Change, "make the dataset's __getitem__ and its transforms (loaded in the loop at main.py:46") != c.shared ||
			strings.Contains(f.Change, "loads them in background workers while the step runs") == c.shared ||
			strings.Contains(ch, "pack the samples into one file") != (c.name == "a file per sample") {
			t.Errorf("%s: change %q", c.name, ch)
		}
		if c.shared && (f.TrySavingPct == nil || *f.TrySavingPct != 0 || f.Try["num_workers"] != "1") {
			t.Errorf("%s: try %v predicted %v, want num_workers=1 predicted 0%%", c.name, f.Try, f.TrySavingPct)
		}
	}
}

// A loader without workers over a torchvision dataset that holds its
// samples as one array, transformed by ToTensor and Normalize alone, is
// told to transform the array once and fetch batches in one call
// (pytorch/examples' VAE: 1.9-2.35x; mnist_rnn: 2.4-2.6x), saving the
// input fix's whole share and trying nothing at run time (the workers'
// saving, 34% for mnist_rnn, is not what it advises). A random
// transform, one it does not know, transformed targets, workers, an
// array that is not the samples' or batch_size=1 keep the loader's other
// advice.
func TestInputInMemoryDataset(t *testing.T) {
	zero, two, batch, one := 0, 2, 64, 1
	mnist := runevidence.Loader{Dataset: "MNIST", NumWorkers: &zero, BatchSize: &batch, Batches: 900, MemoryShape: []int{60000, 28, 28}, Transforms: []string{"ToTensor", "Normalize"}}
	for _, c := range []struct {
		name   string
		change func(*runevidence.Loader)
		want   string // in the change; "" where it must stay silent
	}{
		{"MNIST, ToTensor and Normalize", func(*runevidence.Loader) {}, "x = dataset.data.unsqueeze(1).float().div(255), then (x - mean) / std"},
		{"CIFAR-10, ToTensor", func(l *runevidence.Loader) {
			l.MemoryShape, l.Transforms = []int{50000, 32, 32, 3}, []string{"ToTensor"}
		}, "x = torch.as_tensor(dataset.data).permute(0, 3, 1, 2).float().div(255))"},
		{"a random crop", func(l *runevidence.Loader) { l.Transforms = []string{"RandomCrop", "ToTensor"} }, ""},
		{"a Lambda", func(l *runevidence.Loader) { l.Transforms = []string{"ToTensor", "Lambda"} }, ""},
		{"no ToTensor", func(l *runevidence.Loader) { l.Transforms = []string{"PILToTensor"} }, ""},
		{"targets transformed", func(l *runevidence.Loader) { l.TargetTransform = true }, ""},
		{"workers", func(l *runevidence.Loader) { l.NumWorkers = &two }, ""},
		{"not the samples' array", func(l *runevidence.Loader) { l.MemoryShape = nil }, ""},
		{"one sample a batch", func(l *runevidence.Loader) { l.BatchSize = &one }, ""},
	} {
		l := mnist
		c.change(&l)
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: 2, NumThreads: 2}, Loaders: []runevidence.Loader{l}}
		py := &runevidence.PythonEvidence{LoaderLines: []runevidence.Line{{File: "/home/u/main.py", Line: 45, Func: "train", Pct: 66, Text: "for batch_idx, (data, target) in enumerate(train_loader):", CallsLoader: true}}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{Input: 0.6, Overhead: 0.3}, d: &Diagnosis{}, in: Analyses{Run: run}, py: py}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil {
			t.Fatalf("%s: no input finding", c.name)
		}
		fires := strings.HasPrefix(f.Change, "MNIST holds its ")
		if fires != (c.want != "") || !strings.Contains(f.Change, c.want) {
			t.Errorf("%s: change %q, want %q", c.name, f.Change, c.want)
		}
		if fires && (f.Try != nil || math.Abs(f.SavingUs-600*rule("input.loader").Factor) > 1) {
			t.Errorf("%s: try %v, saves %.0f µs, want no try and the input fix's %.0f", c.name, f.Try, f.SavingUs, 600*rule("input.loader").Factor)
		}
	}
}

// With workers that read a DataFrame row by row, the input change leads
// with converting it once; without, it does not name it.
func TestInputNamesTheDataFrameRows(t *testing.T) {
	two := 2
	for _, rows := range []bool{true, false} {
		s := &state{p: Default, step: 1000, share: map[Class]float64{Input: 0.8}, d: &Diagnosis{}, in: Analyses{
			Run: &runevidence.RunEvidence{Loaders: []runevidence.Loader{{Dataset: "Rows", NumWorkers: &two}}, WorkersReadDataFrameRows: rows,
				Workers: &pyprofile.WorkerSummary{Processes: 2, Samples: 400, BusyShare: 0.97, CPUShare: 0.9,
					Lines: []pyprofile.WorkerLine{{File: "/p/data.py", Line: 6, Func: "Rows.__getitem__", BusyPct: 93}}}}}}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil {
			t.Fatal("no input finding")
		}
		if got := strings.Contains(f.AllChanges(), "the Dataset reads a DataFrame row by row"); got != rows || !strings.Contains(f.AllChanges(), "2 workers cannot keep up") {
			t.Errorf("rows %v: change %q", rows, f.AllChanges())
		}
	}
}

// TestMoreWorkersWhereTheCPUsHaveRoom: a step waiting for one worker is
// told more workers where the CPUs have room for them: its ops on a
// device, whose intra-op threads then idle, or threads and workers
// within the CPUs. It stays silent where they would share the CPUs: a
// CPU-only step's threads on every CPU, workers waiting for a CPU, and
// more workers than each rank's share.
func TestMoreWorkersWhereTheCPUsHaveRoom(t *testing.T) {
	one := 1
	for _, c := range []struct {
		name             string
		gpu              bool
		threads, ranks   int
		workerWait       float64
		want, wantChange string // the num_workers tried ("" none), in the change
	}{
		{"device step", true, 16, 1, 0, "8", "the step's ops run on the device"},
		{"cpu step, threads on every CPU", false, 16, 1, 0, "", "would not help"},
		{"cpu step, room beside the threads", false, 4, 1, 0, "8", "the CPUs have room for more: DataLoader(num_workers=8)"},
		{"workers wait for a CPU", true, 16, 1, 0.6, "", "1 worker cannot keep up: make __getitem__ cheaper"},
		{"four ranks", true, 16, 4, 0, "3", "DataLoader(num_workers=3)"},
		{"sixteen ranks", true, 16, 16, 0, "", "would not help"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &state{p: Default, step: 1000, usesGPU: c.gpu, share: map[Class]float64{Input: 0.6}, d: &Diagnosis{}, in: Analyses{
				Run: &runevidence.RunEvidence{
					Env:     &runevidence.Env{CPUs: 16, NumThreads: c.threads, LocalRanks: c.ranks},
					Loaders: []runevidence.Loader{{Dataset: "MNIST", NumWorkers: &one}},
					Workers: &pyprofile.WorkerSummary{Processes: 1, Samples: 400, BusyShare: 0.9, CPUShare: 0.9, WaitShare: c.workerWait}}}}
			s.findings()
			f := findRule(s.d.Findings, "input.loader")
			if f == nil {
				t.Fatal("no input finding")
			}
			if got := f.Try["num_workers"]; got != c.want || !strings.Contains(f.AllChanges(), c.wantChange) {
				t.Errorf("num_workers tried %q, want %q; change %q, want %q in it", got, c.want, f.AllChanges(), c.wantChange)
			}
		})
	}
}

// TestKernelsChangeBF16ForFP32MemoryBound: memory-bound kernels that move
// fp32 tensors on a device with bf16 get bf16 autocast beside fusing
// them; bf16 tensors, or a device without bf16 (a V100), do not.
func TestKernelsChangeBF16ForFP32MemoryBound(t *testing.T) {
	const (
		addFP32 = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"
		addBF16 = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)"
	)
	for _, c := range []struct {
		name, kernel, cc string
		want             bool
	}{
		{"fp32 on an H100", addFP32, "9.0", true},
		{"bf16 on an H100", addBF16, "9.0", false},
		{"fp32 on a V100", addFP32, "7.0", false},
	} {
		kt := &optable.KernelTable{Rows: []optable.KernelRow{{Name: c.kernel, TotalUs: 900}}, TotalUs: 1000}
		s := &state{p: Default, step: 1000, device: true, share: map[Class]float64{GPUCompute: 0.9}, d: &Diagnosis{},
			in: Analyses{Kernels: kt, GPU: &gpu.Result{Devices: []gpu.Device{{ComputeCapability: c.cc, KernelCount: 1}}}}}
		applyRules(s, "gpu.")
		f := findRule(s.d.Findings, "gpu.kernels")
		if f == nil || !strings.Contains(f.AllChanges(), "torch.compile(model) fuses") {
			t.Fatalf("%s: finding %+v, want the fusion change", c.name, f)
		}
		if got := strings.Contains(f.AllChanges(), "bf16 autocast"); got != c.want {
			t.Errorf("%s: bf16 autocast offered %v, want %v: %s", c.name, got, c.want, f.AllChanges())
		}
	}
}

// torch.compile's change names each of the program's models a step calls
// (a GAN's two), not the first alone, and never a loss module.
func TestCompileChangeNamesEachModel(t *testing.T) {
	call := func(class, module string, line int) rundir.ModelCall {
		return rundir.ModelCall{File: "/p/main.py", Line: line, Class: class, Module: module}
	}
	layered := func(m rundir.ModelCall, layers int) rundir.ModelCall {
		m.Layers = layers
		return m
	}
	bert := []rundir.ModelCall{call("BertForSequenceClassification", "transformers.models.bert.modeling_bert", 29)}
	for _, c := range []struct {
		name      string
		models    []rundir.ModelCall
		framework string // whose phases the run recorded
		want      string
	}{
		{"gan", []rundir.ModelCall{call("Discriminator", "__main__", 234), call("BCELoss", "torch.nn.modules.loss", 235), call("Generator", "__main__", 241), call("Discriminator", "__main__", 243)}, "",
			"torch.compile on each model (Discriminator, called at main.py:234; Generator, called at main.py:241) fuses"},
		{"one model and its loss", []rundir.ModelCall{call("Net", "__main__", 46), call("CrossEntropyLoss", "torch.nn.modules.loss", 47)}, "",
			"torch.compile on the model (Net, called at main.py:46) fuses"},
		{"no models recorded", nil, "", "torch.compile(model) fuses"},
		// pytorch/tutorials' neural style transfer: its image loader's
		// Resize (a torchvision transform, an nn.Module) was called before
		// the bare nn.Sequential it optimises an image through
		{"a transform and a bare Sequential", []rundir.ModelCall{layered(call("Sequential", "torch.nn.modules.container", 194), 5),
			call("Resize", "torchvision.transforms.transforms", 36)}, "", "torch.compile on the model (Sequential, called at main.py:194) fuses"},
		{"the program's loss before its layered model", []rundir.ModelCall{call("StyleLoss", "__main__", 80), layered(call("Sequential", "torch.nn.modules.container", 194), 5)}, "",
			"torch.compile on the model (Sequential, called at main.py:194) fuses"},
		// evidence without layer counts keeps the program's class first
		{"no layer counts", []rundir.ModelCall{call("Sequential", "torch.nn.modules.container", 20), call("Net", "__main__", 46)}, "",
			"torch.compile on the model (Net, called at main.py:46) fuses"},
		// the model's call site is the program's trainer.train() line
		{"Hugging Face Trainer", bert, "transformers", "TrainingArguments(torch_compile=True)"},
		{"Lightning", bert, "lightning", "torch.compile on the LightningModule before fit"},
	} {
		run := &runevidence.RunEvidence{Models: c.models}
		if c.framework != "" {
			run.Phases = &rundir.FrameworkPhases{Framework: c.framework}
		}
		s := &state{p: Default, d: &Diagnosis{}, in: Analyses{Run: run}}
		if got := s.compileChange("them"); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want it to start %q", c.name, got, c.want)
		}
	}
}

// bf16 autocast is turned on through the framework that runs the steps.
func TestAutocastCallIsTheFrameworks(t *testing.T) {
	for framework, want := range map[string]string{"": `torch.autocast("cpu", dtype=torch.bfloat16)`,
		"transformers": "TrainingArguments(bf16=True)", "lightning": `Trainer(precision="bf16-mixed")`} {
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUFeatures: []string{"avx512_bf16"}}}
		if framework != "" {
			run.Phases = &rundir.FrameworkPhases{Framework: framework}
		}
		s := &state{p: Default, d: &Diagnosis{}, in: Analyses{Run: run}}
		if got := s.bf16Advice(); !strings.Contains(got, want) {
			t.Errorf("%q: %q, want %q", framework, got, want)
		}
	}
}

// Where no op family dominates the CPU's native time, torch.compile leads
// and its saving reaches only the ops it can fuse, where large matmuls
// lead with bf16 autocast only the matmuls, in the finding and in the
// verdict alike; a change to every op (more threads) reaches all.
func TestNativeSavingReachesWhatTheChangeShortens(t *testing.T) {
	mixed := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::mm", HostSelfUs: 300}, {Name: "aten::mul", HostSelfUs: 250},
		{Name: "aten::native_layer_norm", HostSelfUs: 250}, {Name: "aten::softmax", HostSelfUs: 200}}, BackwardCalls: 10}
	largeMatmuls := &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 600, Calls: 1}, {Name: "aten::relu", HostSelfUs: 400, Calls: 1}}, BackwardCalls: 10}
	for _, c := range []struct {
		name    string
		ops     *optable.OpTable
		threads int // intra-op threads on 2 idle CPUs
		want    float64
	}{
		{"compile leads", mixed, 2, 0.8 * 0.5 * 0.7},
		{"more threads lead", mixed, 1, 0.8 * 0.5},
		{"bf16 leads for large matmuls", largeMatmuls, 2, 0.8 * 0.5 * 0.6},
	} {
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: 2, NumThreads: c.threads, LocalRanks: 1, LoadAverage: 0}}
		s := &state{p: Default, step: 1000, steps: 3, share: map[Class]float64{CPUCompute: 0.8}, d: &Diagnosis{}, in: Analyses{Ops: c.ops, Run: run, Breakdown: &breakdown.Result{AveragedSteps: 3}}}
		s.verdict()
		s.findings()
		f := findRule(s.d.Findings, "cpu.native")
		if f == nil || math.Abs(f.SavingUs-1000*c.want) > 1 {
			t.Fatalf("%s: %+v, want a saving of %.0f µs", c.name, f, 1000*c.want)
		}
		for _, sc := range s.d.Classes {
			if sc.Class == CPUCompute && math.Abs(sc.SavingPct-100*c.want) > 0.1 {
				t.Errorf("%s: the verdict's saving %.1f%%, the finding's %.1f%%", c.name, sc.SavingPct, f.SavingPct)
			}
		}
	}
}

// A model left in training mode for inference: model.eval() takes out
// dropout's masks, so the native time it reaches is theirs (planted
// eval_train_mode.py: masks 59% of the native time; its saving read 8%
// from the fusable share and ranked under a 20% finding on a loaded
// machine); in training, masks under DropoutFirst do not lead.
func TestTrainModeInferenceReach(t *testing.T) {
	reach := func(backward int) float64 {
		ops := &optable.OpTable{BackwardCalls: backward, Rows: []optable.OpRow{{Name: "aten::bernoulli_", HostSelfUs: 200, HostTotalUs: 200},
			{Name: "aten::mkldnn_convolution", HostSelfUs: 400, HostTotalUs: 400}, {Name: "aten::native_batch_norm", HostSelfUs: 400, HostTotalUs: 400}}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: ops}}
		return s.nativeReach()
	}
	if got := reach(0); math.Abs(got-0.2) > 0.01 {
		t.Errorf("inference in training mode: reach %.2f, want the masks' 0.20", got)
	}
	if got := reach(100); math.Abs(got-0.2) < 0.01 {
		t.Errorf("training, masks under DropoutFirst: reach %.2f, the masks'", got)
	}
}

// A TensorDataset loaded in batches of B in the main thread fetches each
// of a batch's samples apart and stacks them, whatever its __getitem__
// costs: the change leads with one fetch a batch (a BatchSampler; 512
// token ids: 2.23 -> 0.23 ms a batch). Not for batches of one, another
// dataset, an iterable one, nor twice where the handover branch already
// says it.
func TestTensorDatasetFetchedPerSample(t *testing.T) {
	zero, one, b512 := 0, 1, 512
	for _, c := range []struct {
		name    string
		dataset string
		batch   *int
		waitS   float64
		want    int // times the change names the BatchSampler
	}{
		{"batches of 512", "TensorDataset", &b512, 9, 1},
		{"batches of one", "TensorDataset", &one, 9, 0},
		{"another dataset", "Slow", &b512, 9, 0},
		{"faster than a handover", "TensorDataset", &b512, 0.075, 1},
	} {
		run := &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: 16}, Loaders: []runevidence.Loader{{Dataset: c.dataset, NumWorkers: &zero, Batches: 300, WaitS: c.waitS, BatchSize: c.batch}}}
		s := &state{p: Default, step: 1000, share: map[Class]float64{Input: 0.3}, d: &Diagnosis{}, in: Analyses{Run: run}}
		s.findings()
		f := findingOf(s.d, "input.loader")
		if f == nil {
			t.Fatalf("%s: no finding", c.name)
		}
		lead := strings.HasPrefix(f.Change, "a TensorDataset's batch is fetched one sample at a time (512 index calls")
		if n := strings.Count(f.AllChanges(), "BatchSampler"); n != c.want || lead != (c.name == "batches of 512") {
			t.Errorf("%s: BatchSampler %d times (want %d), leads %v: %s", c.name, n, c.want, lead, f.AllChanges())
		}
	}
}

// torch.compile is not offered where the step differentiates gradients
// (a backward's own backward in the trace: a PINN's residual from
// autograd.grad(..., create_graph=True)), which its AOTAutograd rejects;
// an ordinary backward keeps it.
func TestCompileChangeNotForDoubleBackward(t *testing.T) {
	for _, c := range []struct {
		name string
		ops  []optable.OpRow
		want string
	}{
		{"double backward", []optable.OpRow{{Name: "aten::mm"}, {Name: "autograd::engine::evaluate_function: TanhBackwardBackward0"}},
			"torch.compile(model) would fuse them, but not here: the step differentiates its gradients (torch.autograd.grad(..., create_graph=True); the trace runs TanhBackwardBackward0)"},
		{"one backward", []optable.OpRow{{Name: "aten::mm"}, {Name: "autograd::engine::evaluate_function: TanhBackward0"}}, "torch.compile(model) fuses them"},
	} {
		s := &state{p: Default, d: &Diagnosis{}, in: Analyses{Ops: &optable.OpTable{Rows: c.ops}}}
		if got := s.compileChange("them"); !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want it to start %q", c.name, got, c.want)
		}
		// cpu.native's change is that one: with a double backward it
		// promises no saving
		ops := &optable.OpTable{Rows: append([]optable.OpRow{{Name: "aten::mul", HostSelfUs: 600}, {Name: "aten::tanh", HostSelfUs: 400}}, c.ops...), BackwardCalls: 10}
		s = &state{p: Default, step: 1000, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{}, in: Analyses{Ops: ops}}
		s.findings()
		if f := findRule(s.d.Findings, "cpu.native"); f == nil || (f.SavingUs == 0) != (c.name == "double backward") || f.AtStakeUs == 0 {
			t.Errorf("%s: cpu.native %+v, want a saving only for one backward", c.name, f)
		}
	}
}

// Large matmuls and fused recurrent layers run near a CPU's speed: on one
// without bfloat16 instructions the only change for them is an
// accelerator, which saves the program nothing on this machine. The
// saving is then torch.compile's on the other ops where they are named,
// else none (pytorch/examples' word language model on an AVX2 CPU was
// promised 25% by "an accelerator"); where bf16 autocast is advised (the
// CPU has it, or is unknown) the saving reaches the matmuls as before.
func TestCPUAcceleratorAloneSavesNothingHere(t *testing.T) {
	avx2, bf16 := []string{"avx2"}, []string{"avx2", "avx512f", "avx512_bf16"}
	const step, native, factor = 1000.0, 0.9, 0.5
	for _, c := range []struct {
		name     string
		features []string
		rows     []optable.OpRow // of 1000 µs of native time
		reach    float64         // of the native time, 0: no saving
	}{
		{"AVX2, large matmuls alone", avx2, []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 800, Calls: 1}, {Name: "aten::add_", HostSelfUs: 200, Calls: 10}}, 0},
		{"AVX2, large matmuls and a log_softmax", avx2, []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 530, Calls: 1}, {Name: "aten::_log_softmax", HostSelfUs: 470, Calls: 1}}, 0.47},
		{"unknown CPU, large matmuls", nil, []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 800, Calls: 1}, {Name: "aten::add_", HostSelfUs: 200, Calls: 10}}, 0.8},
		{"AVX512-BF16, large matmuls", bf16, []optable.OpRow{{Name: "aten::addmm", HostSelfUs: 800, Calls: 1}, {Name: "aten::add_", HostSelfUs: 200, Calls: 10}}, 0.8},
		{"AVX2, fused LSTM alone", avx2, []optable.OpRow{{Name: "aten::mkldnn_rnn_layer", HostSelfUs: 800, Calls: 2}, {Name: "aten::add_", HostSelfUs: 200, Calls: 10}}, 0},
		{"AVX2, fused LSTM and a log_softmax", avx2, []optable.OpRow{{Name: "aten::mkldnn_rnn_layer", HostSelfUs: 600, Calls: 2}, {Name: "aten::_log_softmax", HostSelfUs: 400, Calls: 1}}, 0.4},
		// a loop over time steps has a change of its own: one call
		{"AVX2, an LSTM called a time step at a time", avx2, []optable.OpRow{{Name: "aten::lstm", HostSelfUs: 800, Calls: 200}, {Name: "aten::add_", HostSelfUs: 200, Calls: 10}}, 1},
	} {
		ops := &optable.OpTable{Rows: c.rows, BackwardCalls: 100}
		s := &state{p: Default, step: step, share: map[Class]float64{CPUCompute: native}, d: &Diagnosis{},
			in: Analyses{Ops: ops, Run: &runevidence.RunEvidence{Env: &runevidence.Env{CPUFeatures: c.features}}}}
		s.findings()
		f := findRule(s.d.Findings, "cpu.native")
		if f == nil {
			t.Fatalf("%s: no cpu.native finding", c.name)
		}
		if want := step * native * factor * c.reach; math.Abs(f.SavingUs-want) > 1 || f.AtStakeUs <= 0 {
			t.Errorf("%s: saves %.0f µs of %.0f at stake, want %.0f (%.2f of the native time); change %q", c.name, f.SavingUs, f.AtStakeUs, want, c.reach, f.AllChanges())
		}
	}
}
