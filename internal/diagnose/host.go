package diagnose

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
)

// hostWhere is where the host's time goes: the program's hottest lines,
// then the frames the host waited in.
func (s *state) hostWhere() []Location {
	var where []Location
	if s.py != nil {
		where = s.pyLines(s.py.Hot, 3)
	}
	return append(where, s.hostWaitFrames()...)
}

var _ = addRule(Rule{
	ID: "host.launch", Class: Launch, Factor: 0.7,
	When:   "host share >= MinFinding with >= LaunchKernelsPerStep kernels per step, >= LaunchShortFrac of them shorter than their launch, one kernel per <= LaunchStepUsPerKernel µs of step; where cuDNN's recurrent-layer ops launch >= RNNLaunchShare of the device time, the change is a larger batch or a CUDA graph, not torch.compile",
	Change: orTry(orTry(launchGraphsChange, launchFuseOnly), "batch small tensors together: fewer, larger kernels"),
	detect: (*state).launchFinding,
	Fires:  "driver.TestVerdictCorpus/synthetic_launch_bound", Silent: "TestShareRulesFireFromMinFinding",
})

// launchFinding: host.launch, when the host's share is launching kernels.
func (s *state) launchFinding() {
	if _, ok := s.share[Launch]; !ok || !s.big(Launch) {
		return
	}
	where := append(s.hostWhere(), s.topOps(3, true)...)
	change := s.servingEngineChange()
	if sh := s.rnnDeviceShare(); change == "" && sh >= s.p.RNNLaunchShare {
		change = fmt.Sprintf(rnnLaunchChange, pct(sh))
	}
	if change == "" && s.compiled() {
		change = orTry("the model runs under torch.compile: mode=\"reduce-overhead\" replays its kernels from a CUDA graph, one launch for all (the input shapes must stay the same)", "batch small tensors together: fewer, larger kernels")
	}
	if lead, ok := s.oneSampleSteps(); ok {
		change = thenDo(lead, cmp.Or(change, rule("host.launch").Change))
	}
	s.emit(s.finding("host.launch", fmt.Sprintf("Tiny kernels: the device idles %.0f%% of the step waiting for launches", s.findingPct(s.share[Launch])), s.at(Launch), s.ev[Launch], where, change))
}

// launchGraphsChange is host.launch's change: the launches themselves go
// only with a CUDA graph. pytorch/examples' siamese_network (ResNet-18 on
// MNIST pairs, batch 64, 656 kernels a step) on an H200, launch-bound
// (85% of the step) and predicted to save 70% with the host's launching
// cut to 30%: torch.compile(model, mode="reduce-overhead") measured 2.7x
// (18.8 -> 7.07 ms a step, 62% saved); torch.compile(model) alone 1.15x
// (two runs, 14.1 and 18.4 ms): it fuses the element-wise kernels but
// launches the convolutions and the rest one by one.
const (
	launchGraphsChange = "replay the step's kernels from a CUDA graph, one launch for all: torch.compile(model, mode=\"reduce-overhead\") (the input shapes must stay the same; each new shape is captured again), or torch.cuda.graph capture of a step with fixed shapes"
	launchFuseOnly     = "torch.compile(model) without CUDA graphs fuses the element-wise kernels but still launches the rest one by one: much less (a launch-bound ResNet-18 on an H200: 1.15x compiled, 2.7x with mode=\"reduce-overhead\")"
)

// rnnLaunchChange is host.launch's change where cuDNN's recurrent layers
// issue the kernels. pytorch/examples' word_language_model (a 2-layer
// LSTM, batch 20, 35 time steps) on an H100 was told torch.compile would
// save 69%: compiled, its steps took 1.29x as long (5.19 -> 6.71 ms): the
// LSTM's launches, 98% of the step's, stay inside cuDNN's op, which
// torch.compile does not trace into (torch._dynamo.config.allow_rnn is
// off) and cannot fuse.
const rnnLaunchChange = "the recurrent layers (nn.LSTM, nn.GRU, nn.RNN) issue these kernels: cuDNN runs each layer as a few small kernels per time step (aten::_cudnn_rnn and its backward: %.0f%% of the device time), which torch.compile leaves as they are, so give each kernel more work: a larger batch (the same kernels for more sequences); or capture the step in a CUDA graph (torch.cuda.graph), one launch for all of them (try it: the step's shapes must stay the same)"

// rnnDeviceShare is the share of the device's time that cuDNN's (or
// MIOpen's) recurrent-layer ops launched, forward and backward.
func (s *state) rnnDeviceShare() float64 {
	t := s.in.Ops
	if t == nil || t.DevSelfUs <= 0 {
		return 0
	}
	var us float64
	for _, r := range t.Ranked() {
		if n := strings.ToLower(r.Name); strings.Contains(n, "_cudnn_rnn") || strings.Contains(n, "miopen_rnn") {
			us += r.DeviceSelfUs
		}
	}
	return us / t.DevSelfUs
}

var _ = addRule(Rule{
	ID: "host.python", Class: Host, Factor: 0.7,
	When: "device idle while the host is busy (GPU) or Python time between ops (CPU-only) >= MinFinding, launch rule not met; the change names nn.Module call overhead when ModuleOverhead of that time is inside module calls (Python profile), and on a CPU the model's forward, the backward and the optimizer as where the Python runs when under OutsideModelShare of the window's busy samples (>= OutsideModelSamples) are outside them",
	Change: orTry("take Python work out of the step: vectorise it with tensor ops, or move preprocessing into a DataLoader with workers",
		"on a GPU, a larger batch or torch.compile: each host step then does more device work"),
	detect: (*state).pythonFinding,
	Fires:  "driver.TestVerdictCorpus/nccl_data", Silent: "driver.TestVerdictCorpus/synthetic_cold_first_step",
})

// pythonFinding: host.python, the host's busy time. Its waits off the CPU
// are host.blocked's, and its waits for the GIL host.gil's.
func (s *state) pythonFinding() {
	if _, launch := s.share[Launch]; launch || !s.big(Host) || s.gil() != nil {
		return
	}
	blockedShare, _, _ := s.blocked()
	busy := s.share[Host] - blockedShare
	if busy < s.p.MinFinding {
		return
	}
	where := s.hostWhere()
	// the blocked waits are host.blocked's: this is the rest
	title := fmt.Sprintf("The device idles %.0f%% of the step while the host runs Python and framework code", s.findingPct(busy))
	if s.hostOnPath > 0 {
		title = fmt.Sprintf("The host's work holds %.0f%% of the step: the device runs beside it, then waits for it", s.findingPct(busy))
	}
	change := ""
	if !s.device {
		title = fmt.Sprintf("Python between ops takes %.0f%% of the step", pct(busy))
		change = orTry("take the Python work out of the step: vectorise it with tensor ops, or precompute it", "move it into a Dataset loaded by DataLoader workers, which run it beside the step")
		if c := s.insideModelChange(); c != "" {
			change = c
		}
	}
	if l, ok := s.tensorFromLists(); ok {
		if change == "" {
			change = rule("host.python").Change
		}
		change = fmt.Sprintf("the hottest line, %s:%d (%.0f%% of the main thread's samples), builds a tensor from Python lists, which torch.tensor converts one element at a time (a 64 x 256 batch of floats: 1.8 ms on the project's test CPU, 0.24 ms through NumPy): build a NumPy array (np.asarray(rows, dtype=np.float32)) and torch.from_numpy it, or build the batches in DataLoader workers; ",
			filepath.Base(l.File), l.Line, l.Pct) + strings.TrimPrefix(strings.TrimPrefix(change, "take the Python work out of the step: "), "take Python work out of the step ")
	}
	switch in, fw := s.pythonInModules(), s.frameworkChange(); {
	case fw != "":
		change = fw
	case s.decoding() != nil:
		change = decodeChange(s.decoding(), s.findingPct(s.share[GPUCompute])/100)
	case in < s.p.ModuleOverhead*busy:
	case busy >= s.share[CPUCompute]:
		// the Python is torch's own, calling modules whose ops
		// take less time than it
		change = fmt.Sprintf("most of this Python time (~%.0f%% of the step) is inside nn.Module calls (__call__, hooks, Sequential's loop, each layer's forward), the modules' ops too small to pay for it: %s", s.findingPct(in), s.compileChange("them into one graph"))
		change = orTry(change, "give each call more work (a larger batch, fewer and wider layers): the same Python then pays for more")
	default:
		// the modules' own Python beside larger ops: no DataLoader
		// or vectorising of the program's code touches it (batch-1
		// inference of a small transformer: 36% Python, 64% ops,
		// got "move it into a Dataset loaded by DataLoader workers")
		change = fmt.Sprintf("most of this Python time (~%.0f%% of the step) runs inside nn.Module calls (__call__, hooks, each layer's forward code), beside the ops it calls: %s", s.findingPct(in), s.compileChange("them into one graph"))
		change = orTry(change, "a larger batch: the same Python is then a smaller share of the step")
	}
	if change == "" {
		change = s.stepOverheadChange()
	}
	if change == "" {
		change = s.denseKernelsChange(busy)
	}
	if change == "" && !s.hasDataLoader() {
		change = hostPythonNoLoader
	}
	if _, ok := s.oneSampleSteps(); ok {
		batch := "inference on one sample per step: batch the samples, which pays this Python once per batch"
		switch {
		case s.in.Ops.BackwardCalls != 0 && len(s.in.Run.Optimizers) == 0:
			batch = "a backward on one sample per step: batch the samples, which pays this Python once per batch"
		case s.in.Ops.BackwardCalls != 0: // oneSampleTraining's
			batch = "training on one sample per step: train on mini-batches where the training allows, which pays this Python once per batch"
		}
		change = thenDo(batch, cmp.Or(change, rule("host.python").Change))
	}
	if off, ok := s.offStepWork(); ok && off >= busy/2 {
		// scikit-learn's metrics on every batch were most of a tabular
		// MLP's Python between ops (43% of the main thread of 62%), and
		// "vectorise it with tensor ops" led; once per epoch measured
		// 3.0-3.5x
		top := s.py.OffStep[0]
		change = thenDo(fmt.Sprintf("work that does not belong in the step is most of it (%s at %s:%d: %.0f%% of the main thread): take it out of the step first (the finding on it)",
			top.Kind, filepath.Base(top.File), top.Line.Line, pct(off)), cmp.Or(change, rule("host.python").Change))
	}
	s.emit(s.finding("host.python", title, busy*s.step, s.ev[Host], where, change))
}

var _ = addRule(Rule{
	ID: "host.blocked", Class: Host, Factor: 0.9,
	When: "Python profile: main-thread samples at the program's lines that were off the CPU in >= 80% of their samples (>= 3 samples, innermost frame outside torch: time.sleep, sockets, locks, queues, subprocesses) >= MinFinding; at stake: that share, at most the step's time between ops (host, launch, unexplained)",
	Change: orTry("a blocking call runs in every step (a sleep, a network request, a lock or queue wait, a subprocess): move it to a background thread or queue, or make it asynchronous",
		"run it every N steps: it then costs a step 1/N of its time"),
	detect: (*state).blockedFinding,
	Fires:  "TestBlocked", Silent: "TestBlocked",
})

// blockedFinding: the main thread sits off the CPU at the program's own
// lines, outside torch (a sleep, a network call, a lock or queue wait):
// time the trace shows as a gap between ops (share, blocked and all as
// state.blocked returns them).
func (s *state) blockedFinding() {
	share, blocked, all := s.blocked()
	if share < s.p.MinFinding {
		return
	}
	gaps := s.share[Host] + s.share[Launch] + s.share[Unexplained]
	var where []Location
	for _, l := range blocked[:min(3, len(blocked))] {
		note := "off the CPU at this line (a builtin such as time.sleep, or a C call)"
		if l.In != "" {
			note = "off the CPU in " + l.In
		}
		where = append(where, lineLocation(l, note))
	}
	top := blocked[0]
	ms := []Evidence{{"main-thread samples off the CPU at the program's lines, outside torch", pct(all), "%", "pyprofile"},
		{"step time between ops (host, launch, unexplained)", pct(gaps), "% of step", "step_breakdown"}}
	s.emit(s.finding("host.blocked", fmt.Sprintf("The main thread is blocked off the CPU %.0f%% of the step at %s:%d", pct(share), filepath.Base(top.File), top.Line),
		share*s.step, ms, where, blockedChange(top)))
}

var _ = addRule(Rule{
	ID: "host.gil", Class: Host, Factor: 0.9,
	When: "Python profile (CPU clocks), CPU-only: the main thread's samples inside torch, neither on a CPU nor waiting for one, >= 10% of its samples over the whole run (imports and compilation left out), while another Python thread of the program ran on a CPU >= 30% of the run; at stake (and the host share on a CPU): the main thread's samples off the CPU inside torch, its waits for a CPU included, as a share of the step",
	Change: orTry("move the other thread's Python work to another process: it then holds no GIL of the training's",
		"do that work in calls that release the GIL, or let the thread sleep between batches of it"),
	detect: (*state).gilFinding,
	Fires:  "TestGILFinding", Silent: "TestGILFinding",
})

// gilFinding: on a CPU, the main thread blocked inside torch (neither on
// a CPU nor waiting for one) while another Python thread runs on a CPU is
// waiting for the GIL: a thread that parses, formats or loops in Python
// holds it, and the main thread gets it back between its ops. At stake:
// the main thread's time off the CPU inside torch, its waits for a CPU
// included (the thread takes a CPU too). A training loop beside a thread
// parsing JSON took 75 s instead of 0.24 s. Silent on
// a device (a main thread blocked inside torch there may wait for the
// device), when the other thread mostly waits, or when the main thread
// stays on a CPU.
func (s *state) gilFinding() {
	g := s.gil()
	if g == nil {
		return
	}
	var where []Location
	for _, l := range g.Lines {
		where = append(where, lineLocation(l, "samples of thread "+g.Thread+", whole run"))
	}
	at := ""
	if len(g.Lines) > 0 {
		at = fmt.Sprintf(" (%s:%d)", filepath.Base(g.Lines[0].File), g.Lines[0].Line)
	}
	ms := []Evidence{{"main-thread samples blocked inside torch, neither on a CPU nor waiting for one", pct(g.MainBlocked), "%", "pyprofile"},
		{"main-thread samples off the CPU inside torch, waits for a CPU included", pct(g.MainOffCPU), "%", "pyprofile"},
		{"thread " + g.Thread + " on a CPU, share of the run", pct(g.CPUShare), "%", "pyprofile"}}
	s.emit(s.finding("host.gil", fmt.Sprintf("The main thread waits for the GIL and a CPU %.0f%% of the run: thread %s runs Python on a CPU %.0f%% of it", pct(g.MainOffCPU), g.Thread, pct(min(g.CPUShare, 1))),
		g.MainOffCPU*s.step, ms, where,
		fmt.Sprintf("Python runs one thread at a time, and thread %s%s holds the GIL while the main thread waits between its ops: move that work to another process (multiprocessing, a DataLoader worker)", g.Thread, at)+altMark+"or"+altMark+"do it in calls that release the GIL (torch or NumPy ops over whole arrays, I/O), or let the thread sleep between batches of it"))
}

var _ = addRule(Rule{
	ID: "host.inference-grad", Class: Host, Factor: 0.9,
	When:   "run evidence: the steps are a module's forwards, autograd was on inside the first recorded one, and no backward ran in the window; at stake: ops per step x AutogradOpUs, at most the step's host and CPU shares, >= MinFinding",
	Change: "run the loop under torch.inference_mode() (or torch.no_grad()): its ops then record no backward graph, and free their activations at once",
	detect: (*state).inferenceGradFinding,
	Fires:  "TestInferenceGradFinding", Silent: "TestInferenceGradFinding",
})

// inferenceGradFinding: an inference loop whose forwards run with
// autograd on (the grad mode the agent read at the first recorded step,
// inside the step module's forward hook; a DataLoader's step boundary is
// outside the program's no_grad block, so only forward steps tell): every
// op records a backward graph that never runs. The host pays it per op,
// so small ops pay most (a loop of small layers: 19% of its time).
func (s *state) inferenceGradFinding() {
	r, t := s.in.Run, s.in.Ops
	if r == nil || r.StepSource != "forward" || r.Env == nil || t == nil || t.BackwardCalls != 0 || s.steps == 0 {
		return
	}
	if on, ok := r.Env.Flags["grad_enabled"].(bool); !ok || !on {
		return
	}
	steps := float64(s.steps)
	if t.Steps > 0 {
		steps = float64(t.Steps)
	}
	ops := float64(t.Calls) / steps
	host := s.share[Host] + s.share[Launch] + s.share[CPUCompute] + s.share[Overhead]
	us := min(ops*s.p.AutogradOpUs, host*s.step)
	if us < s.p.MinFinding*s.step {
		return
	}
	var where []Location
	if s.py != nil {
		where = s.pyLines(s.py.Hot, 1)
	}
	s.emit(s.finding("host.inference-grad", fmt.Sprintf("Inference runs with autograd on: each of its %.0f ops a step records a backward graph that never runs", ops), us,
		[]Evidence{{"grad mode in the recorded forwards (agent)", 1, "on", "env"}, {"backward ops in the window", 0, "", "operators"}, {"ops per step", ops, "", "operators"}}, where, ""))
}

var _ = addRule(Rule{
	ID: "io.in-step", Class: IO, Factor: 0.9,
	When: "main-thread samples in I/O code (torch.save, logging, json/pickle/numpy file I/O, tensorboard, wandb) outside the DataLoader >= MinFinding of the window",
	Change: orTry("move checkpoint saves and logging off the hot loop: save and log every N steps",
		"save on a background thread (torch.distributed.checkpoint.async_save): the step then waits only for the copy"),
	detect: (*state).ioFinding,
	Fires:  "TestLoaderFileReads", Silent: "TestShareRulesFireFromMinFinding",
})

// ioFinding: io.in-step.
func (s *state) ioFinding() {
	if !s.big(IO) || s.py == nil {
		return
	}
	change := ""
	if s.py.IOReadShare >= s.p.MinIOReadShare {
		// reads in the loop are input, not checkpoints or logs (a
		// loop that np.load-ed a shard per step got "move checkpoint
		// saves and logging off the hot loop")
		change = fmt.Sprintf("the step reads files (%.0f%% of its I/O samples load or read: torch.load, np.load, pickle): read them once before the loop where they fit in memory", pct(s.py.IOReadShare))
		change = orTry(orTry(change, "memory-map them (np.load(path, mmap_mode=\"r\"), torch.load(path, mmap=True)): only the pages used are read"),
			"read them in a Dataset loaded by DataLoader workers, which overlap the reads with the steps")
	}
	s.emit(s.finding("io.in-step", fmt.Sprintf("File I/O in the step takes %.0f%% of the main thread", pct(s.py.IOShare)), s.at(IO), s.ev[IO], s.pyLines(s.py.IOLines, 3), change))
}

// insideModelChange: on a CPU, when most of the window's busy main-thread
// samples (of at least OutsideModelSamples; under OutsideModelShare of
// them elsewhere) are inside the model's forward, the backward and the
// optimizer, the Python between ops runs there: module calls, the
// forward's own code, autograd, the optimizer's loop over its parameters,
// which vectorising the code around them and a DataLoader do not reach,
// and torch.compile may
// (transformers' Trainer on a 2-layer BERT, a diffusion U-Net under
// accelerate and 14 other programs of testdata/rundir got "vectorise it
// with tensor ops"). "" otherwise.
func (s *state) insideModelChange() string {
	py := s.py
	if py == nil || py.HotSamples < s.p.OutsideModelSamples || py.OutsideModelShare >= s.p.OutsideModelShare {
		return ""
	}
	// whether compiling pays is the model's: transformers' Trainer on a
	// 2-layer BERT with dynamic padding (this Python 11% of the step)
	// measured 0.88x and 0.95x a step compiled, and a batch of 64 for 32
	// 0.89-0.90x the samples a second, so neither is promised
	change := fmt.Sprintf("%.0f%% of the window's busy main-thread samples are inside the model's forward, the backward and the optimizer step, so this Python runs there (module calls, the forward's own code, autograd, the optimizer's loop over its parameters), which vectorising the code around them does not reach: %s; whether that saves more than it costs is the model's (transformers' Trainer on a 2-layer BERT with dynamically padded batches ran 0.88x and 0.95x a step compiled on this project's 2-CPU machine)",
		pct(1-py.OutsideModelShare), s.compileChange("the model's ops into one graph, without the Python between them"))
	if py.OutsideModelShare >= s.p.MinFinding {
		change = orTry(change, fmt.Sprintf("vectorise the program's own tensor code around the model (%.0f%% of the samples) with whole-tensor ops", pct(py.OutsideModelShare)))
	}
	return change
}
