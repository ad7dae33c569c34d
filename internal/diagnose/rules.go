package diagnose

import (
	"slices"
	"strings"
)

// This file holds the verdict classes, the thresholds (Params, Default)
// and the Rule type. Each rule's entry sits beside its detector, in the
// file of the evidence it judges, so that adding a rule touches that file
// and its test. docs/diagnosis.md's reference block for each rule is
// generated from the entries (TestRulesDocumented).

// Class is a verdict class: what holds the program back.
type Class string

// The verdict classes.
const (
	Input        Class = "input-bound"         // waiting on data loading
	Host         Class = "host-bound"          // Python/framework work on the CPU starves the device (or, CPU-only, Python between ops)
	Launch       Class = "launch-bound"        // many tiny kernels: launch overhead starves the device
	Sync         Class = "sync-bound"          // the host blocks on the device again and again
	GPUCompute   Class = "gpu-compute-bound"   // device kernels fill the step
	Copy         Class = "copy-bound"          // host<->device copies not hidden behind compute
	Comm         Class = "communication-bound" // collectives not hidden behind compute
	Straggler    Class = "straggler"           // one rank holds the others back (run level)
	Memory       Class = "memory-pressure"     // device memory near capacity
	CPUCompute   Class = "cpu-compute-bound"   // CPU-only: native (ATen) ops fill the step
	IO           Class = "io-bound"            // checkpointing, logging, file I/O in the step (Python profile)
	GC           Class = "gc-bound"            // Python garbage collection pauses the step (run evidence)
	Overhead     Class = "framework-overhead"  // CPU-only: tiny ops, each mostly dispatcher cost
	Recompile    Class = "recompile-bound"     // torch.compile compiles again as inputs change (window check)
	MemoryGrowth Class = "memory-growth"       // memory grows every step: a leak (run evidence), a risk, not a share of time
	Debug        Class = "debug-mode"          // a debugging setting left on (anomaly detection): a cost across classes, not a share
	Slowing      Class = "slowing-down"        // the steps get slower as the run goes on (run evidence): a trend, not a share
	Periodic     Class = "periodic-work"       // every Nth step is slow (run evidence): work the window rarely holds, a share of the run
	Undetermined Class = "undetermined"        // the input cannot support a verdict
	Unexplained  Class = "unexplained"         // nothing recorded on the host, device idle: shown, never the verdict
)

// Params are the thresholds. Shares are fractions of the mean step time.
type Params struct {
	// MinEvents: a trace with fewer events is a degenerate capture and
	// gets no verdict.
	MinEvents int
	// MinRecordedUs: steps whose recorded activity adds up to less than
	// this (a 3 µs "step" of 24 events) are too little to judge: a share
	// of a few µs says nothing about the program.
	MinRecordedUs float64
	// MinActivity: below this share of the window covered by recorded
	// activity (ops, runtime calls, device work, DataLoader), the trace
	// shows nothing the program did, and gets no verdict.
	MinActivity float64
	// UnexplainedShare: when at least this share of the step has nothing
	// recorded on the host (device idle), no verdict is given.
	UnexplainedShare float64
	// Secondary: other classes at or above this share are named as
	// secondary.
	Secondary float64
	// MinFinding: a finding needs at least this share at stake.
	MinFinding float64
	// SyncPerStep: sync-bound needs at least this many blocking syncs
	// per step.
	SyncPerStep float64
	// LaunchKernelsPerStep and LaunchShortFrac: the host share is
	// launch-bound (not Python/framework) when at least this many kernels
	// run per step and at least this fraction are shorter than their
	// launch call.
	LaunchKernelsPerStep float64
	LaunchShortFrac      float64
	// LaunchStepUsPerKernel: and the step has at least one kernel per this
	// many µs (a host that spends much longer per kernel is slow for other
	// reasons than launching).
	LaunchStepUsPerKernel float64
	// NonTensorCoreGEMM: a precision finding needs FP32 matmul/conv
	// kernels on CUDA cores (by the kernel table) to take at least this
	// share of kernel time.
	NonTensorCoreGEMM float64
	// ConvShare: the cudnn.benchmark finding needs convolution kernels to
	// take at least this share of kernel time.
	ConvShare float64
	// KernelReach (percent): a change that only makes kernels faster
	// (cudnn.benchmark, channels_last) needs the replay's kernel fix to
	// shorten the step by at least this part of the time it takes out.
	KernelReach float64
	// AttentionShare: the fused-attention finding needs softmax + bmm ops
	// to take at least this share of device time.
	AttentionShare float64
	// OutsideModelShare: the CPU change names the program's own tensor
	// work first when at least this share of the window's busy
	// main-thread samples (of at least OutsideModelSamples) runs outside
	// the model, the backward and the optimizer (modelFiles).
	OutsideModelShare   float64
	OutsideModelSamples int
	// DominantKernels: the GPU-bound change names a kernel family group
	// (memory-bound, matmuls on tensor cores, fused attention) from this
	// share of kernel time.
	DominantKernels float64
	// RoofNear and RoofFar (percent): when matmuls/convolutions/attention
	// hold DominantKernels of kernel time, their time-weighted fraction of
	// the roofline at or above RoofNear means the hardware limit (fewer
	// FLOPs, lower precision, a larger device), at or below RoofFar a
	// shape that does not fill the device (larger batch/shapes, fusion).
	RoofNear, RoofFar float64
	// LayoutShare: the channels_last finding needs layout-conversion
	// kernels to take at least this share of kernel time.
	LayoutShare float64
	// OptimizerShare: the foreach/fused optimizer finding needs the
	// optimizer step to take at least this share of the step.
	OptimizerShare float64
	// DenseEmbeddingShare: the dense embedding backward's time, as a share
	// of the optimizer step, from which the table is taken to be a large
	// part of the parameters (the backward touches the table once or
	// twice, Adam about ten times: 0.05 is a table of about a quarter of
	// the parameters).
	DenseEmbeddingShare float64
	// DenseEmbeddingRows: a table whose rows with a gradient at the first
	// step (the run's evidence) reach this share of its rows gets no
	// sparse-gradient advice. A sparse gradient then holds nearly as
	// many rows as the dense one, and the sparse update costs more per
	// row (measured here, 200,000 rows: 3.0-7.5x faster steps at 3% of
	// the rows touched, 1.15-1.4x at 22%, 0.4-1.4x at 33-40%).
	DenseEmbeddingRows float64
	// RunInputGap: with `run`, the window is not steady state for its
	// input when the DataLoader's wait over the whole run is at least
	// this much more of the step time than in the window, and at least
	// twice it; the run's share is then the input share (the window had
	// taken batches the workers prefetched during start-up).
	RunInputGap float64
	// ValidationShare: the validation finding needs validation and
	// evaluation to take at least this share of a training run's wall
	// time (framework phases).
	ValidationShare float64
	// TinyOpsPerStep and TinyOpUs: on a CPU-only trace with at least
	// TinyOpsPerStep ops per step and at most TinyOpUs µs of step per op
	// (outside the profiler window when known), the native-op share is
	// per-op framework overhead, not computation.
	TinyOpUs       float64
	TinyOpsPerStep float64
	// TinySelfShare: and at least this share of the operator table's host
	// self time is in calls of at most TinyOpUs each: the time is the
	// small calls' (a fast CPU also runs many large ops per µs of step).
	TinySelfShare float64
	// OpFixedUs: what an op's call costs on the CPU whatever its dtype
	// (dispatch, the output's allocation): the float64 change shortens
	// only the host self time beyond it (dtypeReach).
	OpFixedUs float64
	// MemoryGrowthMiB: memory growth needs the fitted trend of the
	// process's memory (CUDA allocated, else RSS) over the steps after
	// start-up to add at least this many MiB, and a loop variable that
	// grew every step holding tensors with their autograd graph, or at
	// least GrowthItemKiB of tensors per step.
	MemoryGrowthMiB float64
	GrowthItemKiB   float64
	// MemoryPct: memory pressure from this peak reserved share of device
	// memory (percent).
	MemoryPct float64
	// Imbalance: run-level straggler from this step-time imbalance
	// (slowest vs median rank, percent).
	Imbalance float64
	// CommSpread: run-level straggler when the ranks' communication shares
	// differ by at least this many points (the rank with the least waits
	// least: the others wait for it).
	CommSpread float64
	// StartupNote: the opening names start-up costs from this share of
	// the median step; OverheadPct: profiler overhead from this percent of
	// the steps.
	StartupNote float64
	OverheadPct float64
	// ProfilerInflation: with `run`, the window is not steady state when
	// its mean step is at least this multiple of the median step outside
	// the window (the profiler's per-op overhead).
	ProfilerInflation float64
	// ProfilerBaseMin: on a device trace, a window this much slower than
	// the steps next to it has the profiler's cost taken out of the
	// replay's baseline (profilerBase), though it is still steady state.
	ProfilerBaseMin float64
	// AutogradOpUs: what recording an op for autograd costs the host
	// (µs): a 24-module model of small layers ran 19% faster under
	// torch.inference_mode on a 2-core x86 CPU, ~1.9 µs per op.
	AutogradOpUs float64
	// ProfilerOpCostUs: what the profiler adds to each recorded op (µs);
	// the inflation is the profiler's when the ops per step times this
	// cost explain at least half of the slowdown, else the window was
	// slowed by something else.
	ProfilerOpCostUs float64
	// ModuleOverhead: host.python names nn.Module call overhead as the
	// cause when at least this fraction of the Python time between ops
	// is estimated to be inside module calls (state.pythonInModules).
	ModuleOverhead float64
	// CPUWaitNote: the opening says the timings are inflated when the
	// main thread waited for a CPU this share of the recorded window;
	// CPUWaitBusy: the window is not steady state when it waited this
	// share more than over the whole run (the machine busy then).
	CPUWaitNote, CPUWaitBusy float64
	// KernelShare: cpu.page-faults fires from this share of the process's
	// CPU time over the steps outside the recorded window spent in the
	// kernel, where
	// FaultsPerKernelS page faults or more a second of it say the
	// kernel's time is first touches of fresh memory (a zeroed 4 KB page
	// costs ~1-3 µs).
	KernelShare, FaultsPerKernelS float64
	// MinListTensorPct: the share (percent) of the main thread's samples at
	// the line from which host.python names the conversion.
	MinListTensorPct float64
	// MinLayerRepeats: a layer's ops' calls per step (per DataLoader
	// batch) per parameter tensor from which the model ran many times in
	// the step (layerOps): a per-sample loop over a batch of 32 through a
	// 2-layer MLP makes 16; 16 accumulated micro-batches without a
	// DataLoader make 8.
	MinLayerRepeats int
	// MinItemCalls: a model's calls per step (per DataLoader batch), each
	// on one sample (its first call's input has no batch dimension, or
	// one of 1), from which the step calls it per item: a policy called
	// once per environment step, a loop over a batch's samples. A GAN's
	// discriminator runs 2-3 times a step, on batches.
	MinItemCalls int
	// MinFrameworkShare: the share of the busy main-thread samples whose
	// innermost frame is a training framework's own loop from which
	// host.python names it.
	MinFrameworkShare float64
	// MinOwnTinyShare: the share of the busy main-thread samples in the
	// program's own tensor code from which the tiny-ops change names it.
	MinOwnTinyShare float64
	// MinForwardLinePct: the share (percent) of the busy samples at a line of
	// the program's own forward from which the tiny-ops change names it.
	MinForwardLinePct float64
	// TinyKernelsFrac and TinyKernelsDevice: a step whose kernels are not
	// dense gets the CUDA-graph change when this share of them or more ran
	// shorter than their launch call and they fill this share of the step or
	// less (greedy generation on an H100: 99% and 3%).
	TinyKernelsFrac, TinyKernelsDevice float64
	// TinyOptimizerShare: the share of the tiny ops' time an unfused
	// optimizer step must hold for cpu.tiny-ops to lead with it.
	TinyOptimizerShare float64
	// MinIOReadShare: the share of the I/O samples reading files from which
	// io.in-step is about input, not checkpoints or logs.
	MinIOReadShare float64
	// OptimizerNativeShare: the share of the native time from which an
	// unfused update leads cpu.native's change.
	OptimizerNativeShare float64
	// MinOneSampleBatches: batches of one that make an inference loop, not a
	// probe (a single sample run before the real loop).
	MinOneSampleBatches int
	// MinSliceBackward: the share of the native time in the backward of
	// slices from which the CPU change names it first.
	MinSliceBackward float64
	// MinMHA: the share of the busy samples inside nn.MultiheadAttention
	// from which unfused attention is taken to be its.
	MinMHA float64
	// MinPaddingCut: the share of the positions a model computes that
	// padding each batch to its own longest sequence would leave out,
	// from which input.padding fires.
	MinPaddingCut float64
	// MinDropout: the share of the native time in dropout's ops from which
	// the CPU change names them (a small transformer trained here: 29% of the
	// native time; dropout 0.1 -> 0 took its step from 1.86 to 1.44 s).
	MinDropout float64
	// DropoutFirst: the share from which, in training, fewer masks lead
	// the change, before compiling the rest. A CPU draws a mask element
	// in ~13 ns here (a 2,708 x 1,433 mask: 50 ms eager, 24 ms
	// compiled): PyG's GCN on a Cora-sized graph, its masks 40% of the
	// native time, ran 3.9x faster without its input's dropout, 1.65x
	// compiled.
	DropoutFirst float64
	// WorkerHandoverS: a batch made in the main thread in less time is not
	// given to DataLoader workers first: handing a batch over between
	// processes costs more (a TensorDataset's batches of 32 x 784 floats:
	// 0.22 ms each in place, 1.7-1.9 ms from one or two workers on the
	// project's 2-CPU machine; Lightning's quick-start autoencoder on
	// them, advised one persistent worker, took 1.7x as long).
	WorkerHandoverS float64
	// MinRNNCalls: the recurrent layer calls per step from which the change
	// is about a loop over the time steps.
	MinRNNCalls int
	// MinSyncsPerUpdate: DistributedDataParallel syncing gradients after this
	// many forwards per optimizer update, on average, is gradient
	// accumulation without no_sync().
	MinSyncsPerUpdate int
	// MinSlowSamples: the samples of slow steps that name what they do (at
	// the 20 ms interval outside the window, 100 ms of them).
	MinSlowSamples int
	// MaxBaselineErrorPct: a replay whose unchanged run is further than this
	// from the measured steps is not trusted, and savings fall back to shares.
	MaxBaselineErrorPct float64
	// MinRemovedPct: a fix that takes out less of the replayed step than this
	// gives no reach (too little of its time is in the trace: its share came
	// from the run's evidence, not the trace).
	MinRemovedPct float64
	// TensorEfficiency: matmuls on tensor cores reach a smaller part of their
	// peak than on CUDA cores: on an H200, a GPT's fp32 GEMMs ran 5.3x faster
	// under TF32 (scripts/gpu-check) against a 7.4x ratio of the peaks.
	TensorEfficiency float64
	// PinnedLinkShare is the part of the host link a copy from pinned memory
	// reaches: 256 MiB copies ran at 53.7 GB/s on an H200's PCIe Gen5 x16
	// (63 GB/s).
	PinnedLinkShare float64
	// MaxWorkers: the most DataLoader workers advised; each is a process
	// with its own copy of the Dataset.
	MaxWorkers int
	// RNNLaunchShare: a launch-bound step whose device time is at least
	// this share cuDNN's recurrent-layer ops is told a larger batch or a
	// CUDA graph, not torch.compile (host.launch).
	RNNLaunchShare float64
	// WorkersShareNative: without an accelerator and with the intra-op
	// threads on every CPU, DataLoader workers are not advised for loading
	// that computes when native ops are at least this share of the rest
	// of the step (workersShareCPUs).
	WorkersShareNative float64
	// SmallGradientBytes: gradients under this many bytes in all are one
	// DDP bucket whose all-reduce costs its latency (comm.exposed's
	// change is fewer all-reduces, not overlap).
	SmallGradientBytes int64
	// LoaderWaitsShare: loading that waits this share of its samples or more
	// (slow_dataset.py's 5 ms sleep a sample: ~95%) is overlapped by more
	// workers than CPUs; a Dataset that computes is not.
	LoaderWaitsShare float64
	// MinFloat64 is the share of the op time (native time on a CPU, device
	// time on a GPU) computed in float64 from which the float64 change
	// replaces the class's general one.
	MinFloat64 float64
	// High and Medium: confidence levels (share of the primary class and
	// its margin over the next class).
	HighShare, HighMargin     float64
	MediumShare, MediumMargin float64
}

// Default are the thresholds the tool uses.
var Default = Params{
	MinEvents:             15,
	MinRecordedUs:         100,
	MinActivity:           0.05,
	UnexplainedShare:      0.5,
	Secondary:             0.15,
	MinFinding:            0.05,
	SyncPerStep:           1,
	LaunchKernelsPerStep:  100,
	LaunchShortFrac:       0.5,
	LaunchStepUsPerKernel: 50,
	NonTensorCoreGEMM:     0.20,
	ConvShare:             0.10,
	KernelReach:           10,
	AttentionShare:        0.10,
	OutsideModelShare:     0.4,
	OutsideModelSamples:   20,
	LayoutShare:           0.02,
	DominantKernels:       0.5,
	RoofNear:              70,
	RoofFar:               25,
	OptimizerShare:        0.10,
	DenseEmbeddingShare:   0.05,
	DenseEmbeddingRows:    0.2,
	RunInputGap:           0.15,
	ValidationShare:       0.15,
	TinyOpUs:              15,
	OpFixedUs:             2,
	TinyOpsPerStep:        100,
	TinySelfShare:         0.5,
	MemoryGrowthMiB:       16,
	GrowthItemKiB:         64,
	MemoryPct:             90,
	Imbalance:             10,
	CommSpread:            20,
	StartupNote:           0.05,
	OverheadPct:           2,
	ProfilerInflation:     1.3,
	ProfilerBaseMin:       0.05,
	ProfilerOpCostUs:      10,
	AutogradOpUs:          2,
	ModuleOverhead:        0.5,
	CPUWaitNote:           0.10,
	CPUWaitBusy:           0.15,
	KernelShare:           0.15,
	FaultsPerKernelS:      100000,
	MinListTensorPct:      25,
	MinLayerRepeats:       16,
	MinItemCalls:          8,
	MinFrameworkShare:     0.2,
	MinOwnTinyShare:       0.15,
	MinForwardLinePct:     15,
	TinyKernelsFrac:       0.9,
	TinyKernelsDevice:     0.1,
	TinyOptimizerShare:    1.0 / 3,
	MinIOReadShare:        0.5,
	OptimizerNativeShare:  0.4,
	MinOneSampleBatches:   8,
	MinSliceBackward:      0.15,
	MinMHA:                0.05,
	MinDropout:            0.15,
	MinPaddingCut:         0.2,
	DropoutFirst:          0.3,
	WorkerHandoverS:       1e-3,
	MinRNNCalls:           8,
	MinSyncsPerUpdate:     2,
	MinSlowSamples:        5,
	MaxBaselineErrorPct:   10,
	MinRemovedPct:         1,
	TensorEfficiency:      0.6,
	PinnedLinkShare:       0.8,
	MaxWorkers:            8,
	RNNLaunchShare:        0.5,
	WorkersShareNative:    0.5,
	SmallGradientBytes:    1 << 20,
	LoaderWaitsShare:      0.8,
	MinFloat64:            0.4,
	HighShare:             0.5,
	HighMargin:            0.2,
	MediumShare:           0.3,
	MediumMargin:          0.1,
}

// Rule is one finding rule: when it fires, what it estimates and what it
// proposes.
type Rule struct {
	ID    string
	Class Class
	// When is the firing condition, in words (the code below implements it).
	When string
	// Factor is the share of the time at stake the change is expected to
	// save (0: no estimate, the finding reports the time at stake only).
	Factor float64
	// Change is the concrete change proposed.
	Change string
	// Fires and Silent name a test where the rule must fire and one where
	// it must stay silent: TestX in this package, or
	// driver.TestVerdictCorpus/CASE, a real or generated trace
	// (TestRuleTests checks that each exists and is about the rule).
	Fires, Silent string
	// detect applies the rule: it emits the rule's finding when the
	// evidence meets When. Nil for a rule applied at the run level
	// (ranks.straggler, over several ranks' diagnoses).
	detect func(*state)
}

// Rules lists every finding rule, by id. The order they are applied in
// never shows: rank orders the findings.
var Rules []Rule

// addRule adds r to Rules. Each rule's entry sits beside its detector:
// var _ = addRule(Rule{...}).
func addRule(r Rule) bool {
	Rules = append(Rules, r)
	return true
}

// classRules is each class's main rule: its Factor is what the class's
// usual fix saves of the class's share, and the verdict is the class with
// the largest share × Factor.
var classRules = map[Class]string{
	Input: "input.loader", IO: "io.in-step", Host: "host.python", Launch: "host.launch", Sync: "sync.blocking",
	GPUCompute: "gpu.kernels", Copy: "copy.h2d", Comm: "comm.exposed", CPUCompute: "cpu.native", GC: "gc.pauses", Overhead: "cpu.tiny-ops",
	Recompile: "compile.recompile",
}

// fixFactor is the share of a class's time its main rule's fix saves (0
// for classes without one: memory pressure, unexplained time).
func fixFactor(c Class) float64 {
	if id, ok := classRules[c]; ok {
		return rule(id).Factor
	}
	return 0
}

// rulesByID indexes Rules. It is filled in init: the detectors look rules
// up, so an initializer that read Rules would be a cycle.
var rulesByID map[string]*Rule

func init() {
	slices.SortFunc(Rules, func(a, b Rule) int { return strings.Compare(a.ID, b.ID) })
	rulesByID = make(map[string]*Rule, len(Rules))
	for i := range Rules {
		if rulesByID[Rules[i].ID] != nil {
			panic("diagnose: rule " + Rules[i].ID + " added twice")
		}
		rulesByID[Rules[i].ID] = &Rules[i]
	}
}

// rule returns the rule with this id (it panics on a typo: tests catch it).
func rule(id string) Rule {
	if r, ok := rulesByID[id]; ok {
		return *r
	}
	panic("diagnose: unknown rule " + id)
}

// fusedAttention are op-name fragments (lower case) of fused attention.
var fusedAttention = []string{"scaled_dot_product", "flash_attention", "efficient_attention", "cudnn_attention", "flash_attn", "xformers", "fmha"}

// layoutConversions are kernel-name fragments (lower case) of cuDNN/MIOpen
// tensor layout conversions.
var layoutConversions = []string{"nchwtonhwc", "nhwctonchw", "nchw2nhwc", "nhwc2nchw"}

// convNames are substrings (lower case) of convolution kernels.
var convNames = []string{"conv", "wgrad", "dgrad", "winograd", "implicit_convolve", "implicit_gemm"}
