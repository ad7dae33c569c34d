package diagnose

// This file is the ONE place that holds the diagnosis's thresholds and
// rules. docs/diagnosis.md explains each entry; TestRulesDocumented keeps
// the two in step.

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
	ProfilerOpCostUs:      10,
	AutogradOpUs:          2,
	ModuleOverhead:        0.5,
	CPUWaitNote:           0.10,
	CPUWaitBusy:           0.15,
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
	// detect applies the rule: it emits the rule's finding when the
	// evidence meets When. Nil for a rule applied at the run level
	// (ranks.straggler, over several ranks' diagnoses).
	detect func(*state)
}

// Rules lists every finding rule. They are applied in this order (a tie
// in the ranking, by the time each could save, keeps it).
var Rules = []Rule{
	{
		ID: "input.loader", Class: Input, Factor: 0.9,
		When: "DataLoader wait >= MinFinding of the step (trace annotation or agent measurement)",
		Change: orTry("load batches in background workers: DataLoader(num_workers=N, persistent_workers=True, pin_memory=True on GPU)",
			"make the Dataset's __getitem__ cheaper: a batch that loads faster leaves the workers less to hide"),
		detect: (*state).inputFinding,
	},
	{
		ID: "io.in-step", Class: IO, Factor: 0.9,
		When: "main-thread samples in I/O code (torch.save, logging, json/pickle/numpy file I/O, tensorboard, wandb) outside the DataLoader >= MinFinding of the window",
		Change: orTry("move checkpoint saves and logging off the hot loop: save and log every N steps",
			"save on a background thread (torch.distributed.checkpoint.async_save): the step then waits only for the copy"),
		detect: (*state).ioFinding,
	},
	{
		ID: "host.launch", Class: Launch, Factor: 0.7,
		When: "host share >= MinFinding with >= LaunchKernelsPerStep kernels per step, >= LaunchShortFrac of them shorter than their launch, one kernel per <= LaunchStepUsPerKernel µs of step",
		Change: orTry(orTry("fuse the many tiny kernels: torch.compile(model) (mode=\"reduce-overhead\" adds CUDA graphs)",
			"capture the step with torch.cuda.graphs: one launch replays all its kernels"),
			"batch small tensors together: fewer, larger kernels"),
		detect: (*state).launchFinding,
	},
	{
		ID: "host.python", Class: Host, Factor: 0.7,
		When: "device idle while the host is busy (GPU) or Python time between ops (CPU-only) >= MinFinding, launch rule not met; the change names nn.Module call overhead when ModuleOverhead of that time is inside module calls (Python profile)",
		Change: orTry("take Python work out of the step: vectorise it with tensor ops, or move preprocessing into a DataLoader with workers",
			"on a GPU, a larger batch or torch.compile: each host step then does more device work"),
		detect: (*state).pythonFinding,
	},
	{
		ID: "host.dense-embedding", Class: Host, Factor: 0.8,
		When:   "Optimizer.step region >= OptimizerShare of the step and the dense embedding backward ops (embedding_dense_backward, _embedding_bag_dense_backward) per step >= DenseEmbeddingShare of the optimizer step: the table is a large part of the parameters and every row is updated every step; with run evidence, the rows with a gradient at the first step < DenseEmbeddingRows of the table's; at stake: the optimizer step plus the dense backward",
		Change: "give the embedding sparse gradients: nn.Embedding/nn.EmbeddingBag(..., sparse=True) and torch.optim.SparseAdam (or SGD/Adagrad, which take sparse gradients) for the embedding's parameters, the dense optimizer for the rest; only the rows in the batch are then updated",
		detect: (*state).denseEmbeddingFinding,
	},
	{
		ID: "host.optimizer", Class: Host, Factor: 0.5,
		When:   "Optimizer.step region >= OptimizerShare of the step, no closure inside it, no dense embedding gradient (host.dense-embedding)",
		Change: "use the multi-tensor optimizer: foreach=True, or fused=True (Adam/AdamW/SGD on CUDA)",
		detect: (*state).optimizerFinding,
	},
	{
		ID: "host.inference-grad", Class: Host, Factor: 0.9,
		When:   "run evidence: the steps are a module's forwards, autograd was on inside the first recorded one, and no backward ran in the window; at stake: ops per step x AutogradOpUs, at most the step's host and CPU shares, >= MinFinding",
		Change: "run the loop under torch.inference_mode() (or torch.no_grad()): its ops then record no backward graph, and free their activations at once",
		detect: (*state).inferenceGradFinding,
	},
	{
		ID: "host.blocked", Class: Host, Factor: 0.9,
		When: "Python profile: main-thread samples at the program's lines that were off the CPU in >= 80% of their samples (>= 3 samples, innermost frame outside torch: time.sleep, sockets, locks, queues, subprocesses) >= MinFinding; at stake: that share, at most the step's time between ops (host, launch, unexplained)",
		Change: orTry("a blocking call runs in every step (a sleep, a network request, a lock or queue wait, a subprocess): move it to a background thread or queue, or make it asynchronous",
			"run it every N steps: it then costs a step 1/N of its time"),
		detect: (*state).blockedFinding,
	},
	{
		ID: "host.gil", Class: Host, Factor: 0.9,
		When: "Python profile (CPU clocks), CPU-only: the main thread's samples inside torch, neither on a CPU nor waiting for one, >= 10% of its samples over the whole run (imports and compilation left out), while another Python thread of the program ran on a CPU >= 30% of the run; at stake (and the host share on a CPU): the main thread's samples off the CPU inside torch, its waits for a CPU included, as a share of the step",
		Change: orTry("move the other thread's Python work to another process: it then holds no GIL of the training's",
			"do that work in calls that release the GIL, or let the thread sleep between batches of it"),
		detect: (*state).gilFinding,
	},
	{
		ID: "run.validation", Class: Host, Factor: 0.5,
		When:   "framework phases (run: Lightning, Hugging Face Trainer) of a training run: validation and evaluation phases' self time >= ValidationShare of the run's wall time; at stake: their time per training step",
		Change: "validate less often or on fewer batches",
		detect: (*state).validationFinding,
	},
	{
		ID: "run.checkpoint", Class: IO, Factor: 0.7,
		When: "framework phases (run: Lightning, Hugging Face Trainer) of a training run: save_checkpoint self time >= MinFinding of the run's wall time; at stake: its time per training step",
		Change: orTry(orTry("save less often",
			"save the weights alone when the optimizer's state is not needed to resume: a smaller file"),
			"write in the background: the step waits only for the copy"),
		detect: (*state).checkpointFinding,
	},
	{
		ID: "sync.blocking", Class: Sync, Factor: 1.0,
		When: ">= SyncPerStep blocking syncs per step; at stake: the device idle each sync causes, min(device busy during the call, device idle after it until the next device work), summed over the steps used",
		Change: orTry("remove .item() / .cpu() / .tolist() / print(tensor) from the loop: keep values on the device and read them every N steps",
			"avoid data-dependent shapes (nonzero, boolean masks): each waits for the device to know its size"),
		detect: (*state).syncFinding,
	},
	{
		ID: "gpu.precision", Class: GPUCompute, Factor: 0.5,
		When: "fp32 matmul/conv kernels on CUDA cores (kernel table, docs/kernels.md; not GEMV, not FP8/FP4/bf16/fp16) >= NonTensorCoreGEMM of kernel time, kernel share >= MinFinding",
		Change: orTry("run matmuls and convolutions on tensor cores: torch.autocast(\"cuda\", dtype=torch.bfloat16) (fp16 + GradScaler before Ampere)",
			"TF32: torch.set_float32_matmul_precision(\"high\"), one line that keeps float32 storage"),
		detect: (*state).precisionFinding,
	},
	{
		ID: "gpu.cudnn-benchmark", Class: GPUCompute, Factor: 0.1,
		When:   "convolution kernels >= ConvShare of kernel time and cudnn.benchmark off (run evidence)",
		Change: "torch.backends.cudnn.benchmark = True when input shapes are fixed",
		detect: (*state).cudnnBenchmarkFinding,
	},
	{
		ID: "gpu.kernels", Class: GPUCompute, Factor: 0.5,
		When: "computation kernels >= MinFinding of the step; saving: kernels made 2x faster",
		Change: orTry(orTry("the device is the limit: reduce or fuse the top kernels (torch.compile)",
			"lower precision (bf16 autocast): tensor cores run it several times faster"),
			"with low SM efficiency, a larger batch; else a larger device"),
		detect: (*state).kernelsFinding,
	},
	{
		ID: "gpu.attention", Class: GPUCompute, Factor: 0.5,
		When:   "softmax + bmm/baddbmm ops >= AttentionShare of device time and no fused attention op (scaled_dot_product_attention, flash, efficient attention)",
		Change: "compute attention with " + sdpaChange + ": one fused flash/memory-efficient kernel",
		detect: (*state).attentionFinding,
	},
	{
		ID: "gpu.channels-last", Class: GPUCompute, Factor: 1.0,
		When:   "convolution kernels >= ConvShare of kernel time and NCHW<->NHWC conversion kernels >= LayoutShare",
		Change: "keep convolutions in channels_last: model.to(memory_format=torch.channels_last) and input.to(memory_format=torch.channels_last), so cuDNN runs without layout conversions",
		detect: (*state).layoutFinding,
	},
	{
		ID: "copy.h2d", Class: Copy, Factor: 0.5,
		When: "memcpy/memset not overlapped with kernels >= MinFinding of the step",
		Change: orTry("copy from pinned memory asynchronously: DataLoader(pin_memory=True) or tensor.pin_memory(), then .to(device, non_blocking=True)",
			"keep reused data on the device: it is then copied once"),
		detect: (*state).copyFinding,
	},
	{
		ID: "comm.no-sync", Class: Comm, Factor: 0.9,
		When:   "communication >= MinFinding of the step and DistributedDataParallel synced gradients after >= 2 forwards per optimizer update on average (regions: gradient accumulation without no_sync()); at stake: the syncs beyond one per update's share of the exposed communication",
		Change: "run every micro-batch but the last under model.no_sync(): the gradients are all-reduced once per update",
		detect: (*state).noSyncFinding,
	},
	{
		ID: "comm.exposed", Class: Comm, Factor: 0.5,
		When: "communication not overlapped with computation >= MinFinding of the step",
		Change: orTry(orTry("overlap communication with backward: DDP bucket_cap_mb, gradient_as_bucket_view=True",
			"no_sync() during gradient accumulation: one all-reduce per update"),
			"fewer, larger collectives: each pays its latency once"),
		detect: (*state).commFinding,
	},
	{
		ID: "memory.capacity", Class: Memory, Factor: 0,
		When: "peak reserved device memory >= MemoryPct of the device",
		Change: orTry(orTry("make room before it fails: activation checkpointing (torch.utils.checkpoint)",
			"a smaller micro-batch with gradient accumulation: the same update in less memory"),
			"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: less memory lost to fragmentation"),
		detect: (*state).memoryCapacityFinding,
	},
	{
		ID: "cpu.native", Class: CPUCompute, Factor: 0.5,
		When: "CPU-only: time inside native ops >= MinFinding of the step; saving: native ops made 2x faster",
		Change: orTry(orTry(orTry("native ops are the limit: use all cores (torch.set_num_threads)",
			"bf16 autocast or channels_last where the CPU supports them"),
			"torch.compile, which fuses small ops"),
			"an accelerator"),
		detect: (*state).cpuNativeFinding,
	},
	{
		ID: "cpu.oversubscribed", Class: CPUCompute, Factor: 0.5,
		When:   "run evidence: local ranks × (intra-op threads + DataLoader workers) > usable CPUs, and the CPU side of the step (native ops, DataLoader wait, host work) >= MinFinding; with the step thread's measured wait for a CPU, at stake is that wait, and under CPUWaitNote nothing",
		Change: "give each process its share of the CPUs: OMP_NUM_THREADS / torch.set_num_threads so that ranks × (threads + workers) <= CPUs",
		detect: (*state).oversubscriptionFinding,
	},
	{
		ID: "autograd.recompute", Class: CPUCompute, Factor: 1.0,
		When:   "layers' forward ops (aten::linear, conv, norms, embedding, attention, dropout, RNNs: their outermost calls) inside a backward op, in the table's steps (operators.recompute), >= MinFinding of the step: host time on a CPU-only trace, device time with a device (then class gpu-compute-bound); silent when memory.capacity fires",
		Change: "activation checkpointing (torch.utils.checkpoint, Hugging Face's gradient_checkpointing) trades this time for memory: where the memory is there, checkpoint fewer layers (every other block, only the largest) or none (Hugging Face: model.gradient_checkpointing_disable(), TrainingArguments(gradient_checkpointing=False)); or keep the matmuls' outputs and recompute only the cheap ops (selective activation checkpointing: torch.utils.checkpoint.create_selective_checkpoint_contexts with a policy that saves aten.mm)",
		detect: (*state).recomputeFinding,
	},
	{
		ID: "cpu.tiny-ops", Class: Overhead, Factor: 0.7,
		When:   "CPU-only: >= TinyOpsPerStep ops per step, <= TinyOpUs µs of step per op (steps outside the profiler window when the run evidence has them) and >= TinySelfShare of the ops' self time in calls of <= TinyOpUs each; the whole native-op share is then framework overhead, >= MinFinding",
		Change: "issue fewer, larger ops: batch the per-layer or per-parameter loop into one op over stacked tensors (torch.stack/cat, bmm, one Linear over the concatenated features), torch._foreach_* ops for a per-parameter update, or torch.compile to fuse the small ops (an experiment: seconds to minutes of compiling first, and a model of tiny ops may gain nothing); an unfused optimizer holding >= a third of the time at stake comes first: fused=True (Adam, AdamW, SGD, Adagrad) or torch._foreach_* ops for another",
		detect: (*state).tinyOpsFinding,
	},
	{
		ID: "gc.pauses", Class: GC, Factor: 0.8,
		When: "run evidence: garbage-collection pauses (gc.callbacks) per step after start-up >= MinFinding of the step, taken from the host share",
		Change: orTry(orTry("collect less often: gc.collect() every N steps or per epoch, not every step",
			"gc.freeze() after start-up (model and data built): full collections then skip long-lived objects"),
			"fewer small Python objects per step: less for each collection to walk"),
		detect: (*state).gcFinding,
	},
	{
		ID: "autograd.anomaly", Class: Debug, Factor: 1.0,
		When:   "run evidence: anomaly detection on in the recorded window (torch.is_anomaly_enabled()); at stake: the main thread's busy samples in its stack capture (traceback.format_stack) plus the NaN checks' ops (aten::isnan, aten::_is_any_true, aten::item rows of the operator table) per step; it goes first",
		Change: "turn anomaly detection off outside debugging: remove torch.autograd.set_detect_anomaly(True) / the detect_anomaly() block (Lightning: Trainer(detect_anomaly=False)); it records a Python stack for every op and checks every backward output for NaN, a device sync per backward node on a GPU",
		detect: (*state).anomalyFinding,
	},
	{
		ID: "run.slowing", Class: Slowing, Factor: 0.9,
		When: "run evidence: the steps after start-up (>= 24, the window's included) get slower: each quarter's median >= 1.05x the one before, the last quarter's >= 1.5x the first's, and a line through the medians of eight blocks of them explains >= 70% of their variance, and the steps less their time waiting for a CPU grow so too (else the machine got busier: a note on the window); at stake: their mean less the first quarter's median; it goes first after memory.growth",
		Change: orTry(orTry("a step does work that grows with what the run keeps (torch.cat onto a kept tensor, a list, dict or DataFrame appended to and processed whole, a search over everything kept): preallocate a buffer, or keep a list of chunks and concatenate once",
			"bound what is kept (collections.deque(maxlen=N)): the work per step then stops growing"),
			"process only the new items"),
		detect: (*state).slowingFinding,
	},
	{
		ID: "run.periodic", Class: Periodic, Factor: 0.9,
		When: "run evidence: >= 3 steps after start-up and outside the window (each less its collections' pauses and its waits for a CPU and for a DataLoader), holding half the time of all those over twice their median above it, take over twice it every N steps (N >= 3) and are >= 2/3 of the steps at those places, and their time above the median >= MinFinding of the run's step time; what they do: the whole run's file I/O (>= half that share) or off-step work (host.off-step's kinds), else how to record one; silent when an epoch's DataLoader restart has that period or run.validation fired",
		Change: orTry("run the periodic work less often or in the background: an asynchronous checkpoint (torch.distributed.checkpoint.async_save)",
			"a smaller or rarer evaluation"),
		detect: (*state).periodicFinding,
	},
	{
		ID: "steps.periodic", Class: Periodic, Factor: 0.9,
		When:   "window check: >= 2 of the recorded steps left out as outliers, >= 3 steps apart, their time above the median (less their recompilations and, with run evidence, their garbage collections and waits for a CPU) >= MinFinding of the recorded steps' time (used and outliers), and no run.periodic; what they do: the outermost ops and ranges they spend more in than an ordinary step (forward ops with under a tenth of it in the backward: an evaluation), or, when those hold under half the excess, work nothing recorded",
		Change: "make the work cheaper, run it less often or on fewer batches, or move it off the loop (another process, async_save)",
		detect: (*state).windowPeriodicFinding,
	},
	{
		ID: "compile.recompile", Class: Recompile, Factor: 0.9,
		When: "torch.compile compiles again in the window (window check: compilation in a step after one that ran without it, or in every step) and the recompilations' time over the window's steps >= MinFinding of the step",
		Change: orTry("the compiled function recompiles for each new input shape (or failed guard), and past torch._dynamo.config.cache_size_limit (8) new shapes run uncompiled: mark the varying dimension dynamic (torch._dynamo.mark_dynamic(x, dim), or torch.compile(..., dynamic=True)); TORCH_LOGS=recompiles prints each recompilation's reason",
			"pad inputs to a few fixed sizes: one compilation each"),
		detect: (*state).recompileFinding,
	},
	{
		ID: "host.off-step", Class: Host, Factor: 0.9,
		When:   "Python profile: main-thread samples over the whole run in a forward pass under torch.no_grad/inference_mode (decorator frame or a with block around the user's line), metric libraries (torchmetrics, sklearn.metrics, torcheval) or tensor printing (torch/_tensor_str.py) >= MinFinding, both over the whole run and within the recorded window beyond what its outlier steps hold above the median, which must be under half the window's share (work every N steps fills at most one); file I/O is io.in-step's",
		Change: "run evaluation, metrics and tensor logging every N steps or once per epoch (asynchronously where possible), not in every step",
		detect: (*state).offStepFinding,
	},
	{
		ID: "memory.growth", Class: MemoryGrowth, Factor: 0,
		When:   "run evidence: the process's memory grows by >= MemoryGrowthMiB over the steps after start-up, and at least half as fast over the later half of them, and a variable of the training loop grew every step holding tensors with their graph (or >= GrowthItemKiB of tensors per step)",
		Change: "store detached values: loss.item() / tensor.detach() (.cpu() for outputs) before keeping them across steps; compute kept predictions under torch.no_grad(); drop retain_graph=True",
		detect: (*state).memoryGrowthFinding,
	},
	{
		ID: "run.startup", Class: Host, Factor: 0,
		When:   "Python profile (run): the main thread's samples before the first step ended, imports left out, x the sampling interval >= 1 s and >= all the run's steps' time; once per run: no per-step saving, never the verdict",
		Change: "what builds data one item at a time in Python before training: vectorise it, build it once and save it, or build it lazily in a Dataset loaded by DataLoader workers",
		detect: (*state).startupFinding,
	},
	{
		ID: "ranks.straggler", Class: Straggler, Factor: 1.0,
		When:   "several ranks: imbalance >= Imbalance %, or communication shares spread >= CommSpread points",
		Change: "find out why the slow rank is slow (its own verdict below) and balance the work across ranks",
	},
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
	rulesByID = make(map[string]*Rule, len(Rules))
	for i := range Rules {
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
