package diagnose

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/kernels"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

type rowT = optable.OpRow

// kernelNote describes a kernel for a finding's location: family, math
// unit and precision as far as the kernel table knows them.
// kernelsChange fits the GPU-bound change to the kernels that take the
// time: fp32 matmuls on CUDA cores want tensor cores; memory-bound
// families (elementwise, norms, softmax, copies) want fusion; matmuls
// already on tensor cores are the model's real work; fused attention is
// already fused. No family group at DominantKernels of kernel time: the
// rule's general change.
func (s *state) kernelsChange() (string, []Evidence) {
	kt := s.in.Kernels
	if kt == nil || kt.TotalUs <= 0 {
		return "", nil
	}
	var mem, memFP32, math, mathTC, mathFP32, attn float64
	for _, r := range kt.Ranked() {
		if !isDeviceWork(r.Name) {
			continue
		}
		k := kernels.Classify(r.Name)
		switch k.Family {
		case kernels.GEMM, kernels.Conv:
			math += r.TotalUs
			if k.Unit == kernels.TensorCore {
				mathTC += r.TotalUs
			}
			if k.FP32OnVectorCores() {
				mathFP32 += r.TotalUs
			}
		case kernels.Attention:
			attn += r.TotalUs
		case kernels.Elementwise, kernels.Reduction, kernels.Norm, kernels.Softmax, kernels.Copy, kernels.Indexing, kernels.Pooling:
			mem += r.TotalUs
			if k.Precision == "fp32" {
				memFP32 += r.TotalUs
			}
		}
	}
	share := func(us float64) float64 { return us / kt.TotalUs }
	dominant := s.p.DominantKernels
	roof, hasRoof := s.roofPct()
	var roofEv []Evidence
	if hasRoof {
		roofEv = []Evidence{{"matmul/conv/attention ops reach this share of their roofline (time-weighted)", roof, "% of roof", "flops"}}
	}
	heavy := share(math+attn) >= dominant && hasRoof
	switch {
	case share(mathFP32) >= dominant:
		// tensor cores run them several times faster: the first thing to
		// change, before fusing or a larger device
		d := s.hardware()
		vector, matrix := d.units()
		return fmt.Sprintf("fp32 matmuls and convolutions on %s take %.0f%% of kernel time: run them on %s, several times faster: %s", vector, 100*share(mathFP32), matrix, s.halfPrecisionChange(d)),
			slices.Concat([]Evidence{{"fp32 matmul/conv kernels on CUDA cores", 100 * share(mathFP32), "% of kernel time", "kernels"}}, roofEv)
	case share(mem) >= dominant:
		change := thenDo(fmt.Sprintf("memory-bound kernels (elementwise, normalisation, softmax, copies: %.0f%% of kernel time) each read and write their tensors through device memory: torch.compile(model) fuses chains of them into one kernel", 100*share(mem)), "a larger batch if SM efficiency is low")
		if d := s.hardware(); memFP32 >= mem/2 && (d.vendor == "amd" || d.atLeast(8, 0)) && !s.kernelsOffPath() {
			// fp32 tensors: bf16 halves what they move. An fp32 ResNet-50
			// on an H100 (BN and ReLU 70% of kernel time): compiled
			// 1.38x, bf16 autocast 1.13x, with channels_last 1.50x. Not
			// where the host holds the step (kernelsOffPath): autocast
			// adds a cast for each weight and input it converts, more
			// host work and launches; a MobileNetV3-Small training step
			// on an H100 (batch 64, ~21 ms, host-bound) ran 0.80x under
			// it
			change = orTry(change, fmt.Sprintf("bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16), a change to the numerics): %.0f%% of these kernels move fp32 tensors, which bf16 halves, and matmuls and convolutions run at twice TF32's rate; with channels_last for convolutions", 100*memFP32/mem))
		}
		return change, slices.Concat([]Evidence{{"memory-bound kernel families", 100 * share(mem), "% of kernel time", "kernels"}}, roofEv)
	case heavy && roof >= s.p.RoofNear:
		return orTry(orTry(fmt.Sprintf("matmuls, convolutions and attention take %.0f%% of kernel time and run at %.0f%% of their roofline: they are near this device's limit, so fewer FLOPs make them faster (a smaller model or sequence)", 100*share(math+attn), roof), s.fewerBitsAdvice()), "a larger device"),
			slices.Concat([]Evidence{{"matmul/conv/attention kernels", 100 * share(math+attn), "% of kernel time", "kernels"}}, roofEv)
	case heavy && roof <= s.p.RoofFar:
		return orTry(orTry(fmt.Sprintf("matmuls, convolutions and attention take %.0f%% of kernel time but reach only %.0f%% of their roofline at these shapes: the device is not filled: a larger batch or larger matrices (dimensions multiples of 64)", 100*share(math+attn), roof),
				"fuse the small ops between them (torch.compile)"), "CUDA graphs if launches leave gaps"),
			slices.Concat([]Evidence{{"matmul/conv/attention kernels", 100 * share(math+attn), "% of kernel time", "kernels"}}, roofEv)
	case share(math) >= dominant && mathTC >= math/2:
		_, matrix := s.hardware().units()
		return orTry(orTry(orTry(fmt.Sprintf("matmuls and convolutions on %s take %.0f%% of kernel time: this is the model's own work: fewer FLOPs (a smaller model or sequence)", matrix, 100*share(math)), s.fewerBitsAdvice()),
				"a larger batch if SM efficiency is low"), "a larger device"),
			slices.Concat([]Evidence{{"matmul/conv kernels on tensor cores", 100 * share(mathTC), "% of kernel time", "kernels"}}, roofEv)
	case share(attn) >= dominant:
		return orTry(fmt.Sprintf("fused attention kernels take %.0f%% of kernel time and are already fused: shorter sequences or a KV cache (decoding)", 100*share(attn)), "a faster backend: "+s.attentionBackend()),
			slices.Concat([]Evidence{{"fused attention kernels", 100 * share(attn), "% of kernel time", "kernels"}}, roofEv)
	}
	return "", roofEv
}

// roofPct is the device-time-weighted fraction of the roofline that the
// FLOPs analysis's ops (matmuls, convolutions, attention) reach, over the
// rows whose roof is known (shapes recorded, device in the peak table).
func (s *state) roofPct() (float64, bool) {
	f := s.in.Flops
	if f == nil {
		return 0, false
	}
	var us, weighted float64
	for _, o := range f.Ops {
		if o.RoofTFLOPS > 0 && o.DeviceUs > 0 {
			us += o.DeviceUs
			weighted += o.RoofPct * o.DeviceUs
		}
	}
	if us == 0 {
		return 0, false
	}
	return stats.Round1(weighted / us), true
}

func kernelNote(k kernels.Kind) string {
	if k.Family == kernels.Unknown {
		return "unknown kernel"
	}
	n := string(k.Family)
	switch k.Unit {
	case kernels.TensorCore:
		n += " on tensor cores"
	case kernels.VectorCore:
		n += " on CUDA cores"
	}
	if k.Precision != "" {
		n += " (" + k.Precision + ")"
	}
	return n
}

// finding builds a finding from a rule and the time at stake per step.
func (s *state) finding(id, title string, atStakeUs float64, measured []Evidence, where []Location, change string) Finding {
	r := rule(id)
	if change == "" {
		change = r.Change
	}
	f := Finding{Rule: id, Class: r.Class, Title: title, Measured: measured, Where: where, Change: change,
		AtStakeUs: stats.Round1(atStakeUs), SavingMethod: "share", Confidence: "medium"}
	saving, reach, replayed := s.ruleSaving(id, atStakeUs)
	if replayed && r.Factor > 0 {
		f.SavingMethod, f.ReachPct = "replay", stats.Round1(reach)
	}
	f.SavingUs = stats.Round1(saving)
	if step := s.findingsStep(); step > 0 {
		f.AtStakePct = stats.Round1(100 * atStakeUs / step)
		f.SavingPct = stats.Round1(100 * saving / step)
	}
	if s.d.Verdict.Primary == r.Class {
		f.Confidence = s.d.Verdict.Confidence
	}
	if f.Measured == nil {
		f.Measured = []Evidence{}
	}
	return f
}

func (s *state) emit(f Finding) { s.d.Findings = append(s.d.Findings, f) }

func (s *state) pyLines(lines []runevidence.Line, n int) []Location {
	var out []Location
	for i, l := range lines {
		if i == n {
			break
		}
		note := "main-thread samples, whole run"
		if s.py.Window {
			note = "main-thread samples in the recorded window"
		}
		out = append(out, lineLocation(l, note))
	}
	return out
}

// lineLocation is a line of the Python profile as a location.
func lineLocation(l runevidence.Line, note string) Location {
	loc := Location{Kind: "python", Name: l.Func, File: l.File, Line: l.Line, SharePct: l.Pct, Note: note}
	if l.Inside != nil {
		loc.Inside = l.Inside.String()
	}
	return loc
}

// tensorFromLists reports the hottest line of the step when it builds a
// tensor from Python objects (torch.tensor / as_tensor / the legacy
// constructors over lists) and holds at least MinListTensorPct of the
// main thread's samples.
func (s *state) tensorFromLists() (runevidence.Line, bool) {
	if s.py == nil || len(s.py.Hot) == 0 {
		return runevidence.Line{}, false
	}
	l := s.py.Hot[0]
	return l, l.Pct >= s.p.MinListTensorPct && tensorFromList.MatchString(l.Text)
}

// tensorFromList matches a call that makes a tensor from Python data.
var tensorFromList = regexp.MustCompile(`\btorch\.(tensor|as_tensor|Tensor|FloatTensor|LongTensor|IntTensor|DoubleTensor|BoolTensor)\(`)

// hostPythonNoLoader is host.python's general change for a program with
// no DataLoader in its trace or run: the rule's own names the DataLoader,
// which a decode loop or a server has no reason to have.
const hostPythonNoLoader = "take Python work out of the step: vectorise it with tensor ops, precompute what does not change between steps" +
	altMark + "or" + altMark + "on a GPU, a larger batch or torch.compile: each host step then does more device work"

// hasDataLoader: the trace or the run shows a torch DataLoader (its
// __next__ annotations, or the agent's record of one).
func (s *state) hasDataLoader() bool {
	if r := s.in.Run; r != nil && (r.HasDataLoader || len(r.Loaders) > 0) {
		return true
	}
	if in := s.in.Input; in != nil && in.Calls > 0 {
		return true
	}
	if t := s.in.Ops; t != nil {
		return slices.ContainsFunc(t.Ranked(), func(r rowT) bool { return strings.HasPrefix(r.Name, "enumerate(DataLoader)") })
	}
	return false
}

// waitedLoader is the index of the run's DataLoader the step waited for
// most (the most wait over the run, then the most batches): the one the
// input finding judges. A program with a training loader and an
// evaluation loader was told num_workers=0 of its 4-worker training
// loader: the evaluation's, listed last, had written the change. -1
// without loaders.
func (s *state) waitedLoader() int {
	r := s.in.Run
	if r == nil || len(r.Loaders) == 0 {
		return -1
	}
	best := 0
	for i, l := range r.Loaders {
		b := r.Loaders[best]
		if l.WaitS > b.WaitS || l.WaitS == b.WaitS && l.Batches > b.Batches {
			best = i
		}
	}
	return best
}

// loaderWaitS is the run's DataLoader wait, all loaders.
func (s *state) loaderWaitS() float64 {
	var w float64
	for _, l := range s.in.Run.Loaders {
		w += l.WaitS
	}
	return w
}

// minWorkerBusy is the share of their samples the DataLoader workers must
// spend producing batches before the input finding names their lines;
// maxWorkerCPU the share of that busy time on a CPU under which they wait
// rather than compute.
const minWorkerBusy, maxWorkerCPU = 0.3, 0.5

// workersWait: the DataLoader workers are busy producing batches but
// mostly off the CPU while at it (reads, sleeps), neither running nor
// runnable: a busy machine's workers waiting for a CPU do not count.
func (s *state) workersWait() bool {
	w := s.in.Run.Workers
	return w != nil && w.BusyShare >= minWorkerBusy && w.CPUShare >= 0 && w.CPUShare+w.WaitShare < maxWorkerCPU
}

// idleWorkersMake: the loader's workers were busy making batches under
// idleWorkerBusy of their samples, so they keep up: what the step waits
// for is the batches' hand-over between processes (the main process
// waits on their queue and unpickles each batch). makingUs is what
// making a batch would cost the main process a step (the workers' busy
// share of their time, times the workers, times the step); ok only when
// that is under the step's wait for batches, so that making them in the
// main process shortens the step. karpathy/makemore on this project's 2
// CPUs (4 workers busy 0.8% of their time, the step waiting 8% for
// batches) was told "4 workers cannot keep up", or "raise num_workers";
// num_workers=0 measured 0.87-0.94x the step (3 interleaved rounds of 400
// steps, median steps).
func (s *state) idleWorkersMake(workers int) (makingUs float64, ok bool) {
	w := s.in.Run.Workers
	if w == nil || w.Samples == 0 || w.BusyShare >= idleWorkerBusy || workers <= 0 {
		return 0, false
	}
	makingUs = w.BusyShare * float64(workers) * s.step
	return makingUs, makingUs < s.share[Input]*s.step
}

const idleWorkerBusy = 0.1

// workerLines are the user lines of the DataLoader workers' busy samples
// (at most 2) and a sentence on what the first one costs; none without
// worker samples.
func (s *state) workerLines() ([]Location, string) {
	r := s.in.Run
	// workers that mostly wait for indices are not what the step waits
	// for (the batches are slow to hand over, or the main thread is): no
	// line of theirs is named then
	if r == nil || r.Workers == nil || len(r.Workers.Lines) == 0 || r.Workers.BusyShare < minWorkerBusy {
		return nil, ""
	}
	w := r.Workers
	note := fmt.Sprintf("DataLoader worker samples: %d worker processes, busy %.0f%% of their time", w.Processes, 100*w.BusyShare)
	var out []Location
	for i, l := range w.Lines {
		if i == 2 || (i > 0 && l.BusyPct < 10) {
			break
		}
		out = append(out, Location{Kind: "python", Name: l.Func, File: l.File, Line: l.Line, SharePct: stats.Round1(l.BusyPct), Note: note})
	}
	l := w.Lines[0]
	costs := fmt.Sprintf("%s at %s:%d takes %.0f%% of the workers' busy time (the workers produce batches %.0f%% of their time",
		l.Func, filepath.Base(l.File), l.Line, l.BusyPct, 100*w.BusyShare)
	if w.CPUShare >= 0 {
		costs += fmt.Sprintf(", %.0f%% of it on a CPU", 100*w.CPUShare)
	}
	return out, costs + "): make it cheaper"
}

// dataFrameRowsChange is the change for a Dataset that reads a DataFrame
// row by row: each df.iloc[i] builds a Series (an index, a dtype per
// column) and each conversion copies it again, where a tensor indexed by
// the row is a view.
const dataFrameRowsChange = "the Dataset reads a DataFrame row by row (df.iloc[i], df.loc, iterrows), which builds a pandas Series for every row: " +
	"convert the columns to tensors once, in its __init__ (torch.from_numpy(df[features].to_numpy(np.float32))), and index those in __getitem__" + altMark + "or" + altMark +
	"hand __getitem__ a whole batch of indices (DataLoader(sampler=BatchSampler(RandomSampler(ds), batch_size, False), batch_size=None)) and index the tensors once a batch"

// findings applies every rule, in the table's order, and ranks the
// results.
func (s *state) findings() {
	for _, r := range Rules {
		if r.detect != nil {
			r.detect(s)
		}
	}
	s.rank()
	for i := range s.d.Findings {
		splitAlternatives(&s.d.Findings[i])
	}
	s.programOptions()
	s.noCompileInShortRun()
}

// at is the time at stake in class c per step; big: it is enough for a
// finding.
func (s *state) at(c Class) float64 { return s.share[c] * s.step }
func (s *state) big(c Class) bool   { return s.share[c] >= s.p.MinFinding }

// tinyOpsSource says which code issues the tiny ops, from the Python
// profile: the model's forward (ModuleShare) against the program's own
// tensor code outside it (OutsideModelShare). The backward and the
// optimizer follow from both, so they decide nothing: a per-sample loss
// written as a loop held 3% of the busy samples in the model's forward,
// 36% in the loop and 61% in loss.backward(), mostly the loop's backward
// (vectorised, its step went from 74 to 6.2 ms).
// The generic advice (batch a per-parameter loop into stacked ops)
// pointed at a loop a program may not have.
//
// When the model's forward holds twice the program's own code or more,
// its ops are small because each carries little data: a larger batch
// amortizes their fixed cost (a small transformer trained here at 4
// sequences a step: 8.1 ms a sequence; at 16, 3.2 ms; at 64, 1.8 ms).
// When the program's own code holds as much as the forward, the change
// names its lines. Empty otherwise or without enough samples; the lines
// to lead the finding's where with come second.
func (s *state) tinyOpsSource() (string, []Location) {
	if c, ok := s.repeatedForward(); ok {
		return c, nil
	}
	py := s.py
	if py == nil || py.HotSamples < s.p.OutsideModelSamples {
		return "", nil
	}
	if off, ok := s.offStepWork(); ok && off >= py.ModuleShare && off >= py.OutsideModelShare {
		// a metric or an evaluation in every step issues many of the ops
		// (an AUROC per step: 31% of the samples against 8% in the
		// forward, and the change was "a larger batch")
		top := py.OffStep[0]
		return fmt.Sprintf("work that does not belong in the step issues many of them (%s at %s:%d: %.0f%% of the main thread, against %.0f%% in the model's forward): take it out of the step first (the finding on it)",
			top.Kind, filepath.Base(top.File), top.Line.Line, pct(off), pct(py.ModuleShare)), []Location{{Kind: "python", Name: top.Func, File: top.File, Line: top.Line.Line, SharePct: top.Pct, Note: top.Kind}}
	}
	switch {
	case py.OutsideModelShare >= s.p.MinOwnTinyShare && py.OutsideModelShare >= py.ModuleShare:
		where := s.pyLines(py.OutsideModel, 3)
		var names []string
		for _, l := range where {
			names = append(names, fmt.Sprintf("%s:%d %.0f%%", filepath.Base(l.File), l.Line, l.SharePct))
		}
		in := ""
		if f := py.OutsideFunc; f != nil {
			// the lines are spread over one function and its helpers
			in = fmt.Sprintf("; %.0f%% in %s (%s:%d) and the functions it calls", f.Pct, f.Func, filepath.Base(f.File), f.Line)
			if c := py.OutsideFuncCaller; c != nil && c.Func != "<module>" {
				// a helper: the loop calling it is where to vectorise
				in += fmt.Sprintf(", called at %s:%d in %s", filepath.Base(c.File), c.Line, c.Func)
			}
			where = slices.Insert(where, 0, Location{Kind: "python", Name: f.Func, File: f.File, Line: f.Line, SharePct: f.Pct, Note: "the function, with its callees"})
		}
		return fmt.Sprintf("the program's own tensor code outside the model issues them (%s: %.0f%% of the busy main-thread samples, against %.0f%% in the model's forward%s), and the backward repeats its ops: write it over whole tensors (one op over the batch instead of a loop over its rows or items, torch.where/gather/masks instead of per-element branches) or torch.compile the function",
			strings.Join(names, ", "), pct(py.OutsideModelShare), pct(py.ModuleShare), in), where
	case py.ModuleShare > 0 && py.ModuleShare >= 2*py.OutsideModelShare:
		change := fmt.Sprintf("the model's own ops are the small ones (its forward holds %.0f%% of the busy main-thread samples, the program's own tensor code %.0f%%), each on little data: a larger batch (more samples or tokens per step, requests batched together when serving) gives every op more work for the same count of ops",
			pct(py.ModuleShare), pct(py.OutsideModelShare))
		// The program's own forward among the hot lines: a loop there may
		// run independent layers one at a time, which one batched op
		// replaces.
		for _, l := range py.Hot[:min(3, len(py.Hot))] {
			if l.Pct >= s.p.MinForwardLinePct && (l.Func == "forward" || strings.HasSuffix(l.Func, ".forward")) {
				change = orTry(change, fmt.Sprintf("where a loop in %s (%s:%d) runs independent layers one at a time (heads, ensemble members, experts), stack them into one batched op (torch.bmm, or torch.func.stack_module_state with torch.vmap)", l.Func, filepath.Base(l.File), l.Line))
				break
			}
		}
		return orTry(change, s.compileChange("its small elementwise ops")), nil
	}
	return "", nil
}

// repeatedForward: in training steps (a backward ran; one optimizer), the
// layers' forward ops (aten::linear, conv) run many times per step for
// the parameters there are: a loop calls the model one sample, or one
// time step, at a time. 64 one-sample calls of a 2-layer MLP and their
// losses took 6.2 ms a step here, one call on the batch 0.32 ms; before,
// the change was "batch the per-layer or per-parameter loop". A model
// called once has at most a few layer calls per parameter tensor (a
// transformer block: 4 linears for 12 tensors); gradient accumulation
// multiplies that by its micro-steps, under MinLayerRepeats.
func (s *state) repeatedForward() (string, bool) {
	t, r := s.in.Ops, s.in.Run
	if t == nil || t.BackwardCalls == 0 || r == nil || len(r.Optimizers) != 1 || r.Optimizers[0].Params == 0 {
		return "", false
	}
	perStep, perBatch, names := s.layerCalls()
	if perStep == 0 {
		return "", false
	}
	params := r.Optimizers[0].Params
	if m, n, ok := s.itemModel(perBatch); ok {
		return fmt.Sprintf("the model (%s) runs about %.0f times a step, each call on one sample (its input %s): each of its ops does one sample's work for the op's fixed cost: give each call many samples: "+
			"an RL loop that calls the policy once per environment step steps several environments together (gymnasium.vector.SyncVectorEnv, stable_baselines3's make_vec_env(..., n_envs=8)) and calls it once on all their observations; "+
			"a loop over a batch's samples calls it once on the stacked batch and takes the loss over the batch (64 one-sample calls of a 2-layer MLP took 6.2 ms a step on the project's test CPU, one batched call 0.32 ms)",
			modelCallRef(*m), n, shapeText(m.Input)), true
	}
	layers := fmt.Sprintf("%s run %.0f times a step for the model's %d parameter tensors (a model called once runs about one per tensor or fewer)", strings.Join(names, ", "), perStep, params)
	if solver, ok := solverLibrary(r.StepCalls); ok && (r.StepCallsMedian >= float64(s.p.MinLayerRepeats) || perBatch >= float64(s.p.MinLayerRepeats*params)) {
		// each evaluation takes the last one's result: no batching them.
		// Its calls counted over the run, not the window's: an adaptive
		// solver's grow as it trains (ode_demo.py: 26 to 56 a step)
		calls := "many times"
		if r.StepCallsMedian > 0 {
			calls = fmt.Sprintf("a median %.0f times", r.StepCallsMedian)
		}
		return fmt.Sprintf("%s: %s calls the model %s a step, each call on the whole batch and each taking the one before's result (its function evaluations: they cannot be batched): "+
			"give each evaluation more work (more trajectories a batch: in torchdiffeq's ode_demo.py 4x the batch took 1.2x the step) or make fewer of them where the accuracy allows: %s",
			layers, solver, calls, fewerEvaluations), true
	}
	if perBatch < float64(s.p.MinLayerRepeats*params) {
		return "", false
	}
	if cells, cell := s.cellCalls(); cells >= float64(s.p.MinLayerRepeats) {
		// a sequence's time steps, not samples: the model may well be
		// called on a batch (time_sequence_prediction: [97, 999]). The
		// planted lbfgs_float64.py's 16 steps: nn.LSTM took 144 -> 62 ms
		// in float32, 198-212 -> 204-224 ms in float64
		in := ""
		if m := s.modelRef(); m != "" {
			in = " in the model (" + m + ")"
		}
		measured := "3 steps of its run 44.6 -> 27.0 s"
		if n, _, _ := s.float64Params(); n > 0 {
			measured += " in float32, but 58.4 -> 65.8 s in float64" // only float32 has the fused kernel
		}
		return fmt.Sprintf("%s: a loop over a sequence's time steps%s calls a recurrent cell (%s %.0f times a step), each call one time step of the batch: "+
			"nn.LSTM/nn.GRU/nn.RNN over the whole sequence instead (one call: the steps' input projections at once, the recurrence in C++; where each step's input is the last output, call it a step at a time with the state (h, c) it returns), in float32, where its fused CPU kernel runs "+
			"(pytorch/examples' time_sequence_prediction, two LSTMCells over 999 steps: %s)",
			layers, in, cell, cells, measured), true
	}
	loop := "a loop calls the model on one sample, or one time step, at a time"
	if m := s.modelRef(); m != "" {
		loop = "a loop calls the model (" + m + ") on one sample, or one time step, at a time"
	}
	return orTry(fmt.Sprintf("%s: %s: call it once on the whole batch (torch.stack the samples; pad those of different lengths, with a mask) and take the loss over the batch (64 one-sample calls of a 2-layer MLP took 6.2 ms a step on the project's test CPU, one batched call 0.32 ms)",
		layers, loop), "for time steps, nn.LSTM/GRU over the sequence instead of a cell in a loop: one call runs every step's input projection at once"), true
}

// solverLibraries: the libraries whose solvers call the program's model
// many times a step, each evaluation taking the last one's result, by
// the root of the module of the class they call it through (torchdiffeq's
// odeint wraps the model in its own _PerturbFunc at every call).
var solverLibraries = map[string]string{"torchdiffeq": "torchdiffeq's ODE solver", "torchsde": "torchsde's SDE solver",
	"torchode": "torchode's ODE solver", "torchdyn": "torchdyn's solver"}

// fewerEvaluations: how a solver's evaluations are bounded (torchdiffeq's
// ode_demo.py: 12.3 ms a step with dopri5, 5.4 ms with rk4 at
// step_size=0.025).
const fewerEvaluations = "a fixed-step method (torchdiffeq: method=\"rk4\", options=dict(step_size=...); in ode_demo.py 12.3 -> 5.4 ms a step) or looser rtol/atol"

// solverLibrary names the solver library whose module class the steps
// called most outermost (false: none, or not a solver's).
func solverLibrary(c *rundir.StepCalls) (string, bool) {
	if c == nil {
		return "", false
	}
	root, _, _ := strings.Cut(c.Module, ".")
	name, ok := solverLibraries[root]
	return name, ok
}

// opTableSteps is the steps the op table's calls are over (the diagnosis's
// when it does not say).
func (s *state) opTableSteps() int {
	if t := s.in.Ops; t != nil && t.Steps > 0 {
		return t.Steps
	}
	return s.steps
}

// rnnCellOps are the recurrent cells' ops (nn.LSTMCell, GRUCell, RNNCell
// on a CPU), one call a time step.
var rnnCellOps = []string{"aten::lstm_cell", "aten::gru_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell"}

// cellCalls is the recurrent cells' calls a step of the op table's steps,
// and the most called cell op.
func (s *state) cellCalls() (perStep float64, name string) {
	t, steps := s.in.Ops, s.opTableSteps()
	if t == nil || steps == 0 {
		return 0, ""
	}
	var calls, most int
	for _, row := range t.Ranked() {
		if slices.Contains(rnnCellOps, row.Name) {
			calls += row.Calls
			if row.Calls > most {
				most, name = row.Calls, row.Name
			}
		}
	}
	return float64(calls) / float64(steps), name
}

// layerCalls is the layer ops' calls a step of the op table's steps
// (tinyOpStats counts them so) and per DataLoader batch of a step
// (gradient accumulation fetches one a micro-step), and the layer ops
// that ran, sorted: an LSTM cell's are linear, not convolutions.
func (s *state) layerCalls() (perStep, perBatch float64, names []string) {
	t := s.in.Ops
	if t == nil {
		return 0, 0, nil
	}
	steps := s.opTableSteps()
	if steps == 0 {
		return 0, 0, nil
	}
	var calls, batches int
	for _, row := range t.Ranked() {
		switch {
		case slices.Contains(layerOps, row.Name):
			calls += row.Calls
			if !slices.Contains(names, row.Name) {
				names = append(names, row.Name)
			}
		case strings.HasPrefix(row.Name, "enumerate(DataLoader)"):
			batches += row.Calls
		}
	}
	slices.Sort(names)
	perStep = float64(calls) / float64(steps)
	return perStep, perStep / max(1, float64(batches)/float64(steps)), names
}

// itemModel is the model the step calls per item: one whose first call's
// input was one sample (no batch dimension, or one of 1) and whose
// layers the layer ops ran at least MinItemCalls times over
// (layerCalls per step or batch), with that count; the most called such.
func (s *state) itemModel(layerCalls float64) (*rundir.ModelCall, float64, bool) {
	var best *rundir.ModelCall
	var most float64
	for i, m := range s.in.Run.Models {
		if !s.oneSampleLayers(m) {
			continue
		}
		if n := layerCalls / float64(m.Layers); n >= float64(s.p.MinItemCalls) && n > most {
			best, most = &s.in.Run.Models[i], n
		}
	}
	return best, most, best != nil
}

// oneSampleLayers: the model's layers were counted and its first call's
// input was one sample (no batch dimension, or one of 1). A 1-D input as
// long as a DataLoader's batches is a batch of scalars or token ids (a
// skip-gram's center words, DataLoader(batch_size=512)), not one
// sample's features.
func (s *state) oneSampleLayers(m rundir.ModelCall) bool {
	if m.Layers == 0 || len(m.Input) == 0 {
		return false
	}
	if len(m.Input) > 1 || m.Input[0] == 1 {
		return m.Input[0] == 1
	}
	return s.in.Run == nil || !slices.ContainsFunc(s.in.Run.Loaders, func(l runevidence.Loader) bool {
		return l.BatchSize != nil && *l.BatchSize > 1 && int64(*l.BatchSize) == m.Input[0]
	})
}

// layerOps are the ops a layer's forward enters by, called once per layer
// per forward (Params.MinLayerRepeats bounds their calls).
var layerOps = []string{"aten::linear", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d"}

// frameworkChange: when a training framework's own code (Lightning's
// loop moving the batch, its closure, its logging) is the innermost frame
// of MinFrameworkShare of the busy samples, its per-step cost is fixed,
// and the program's code is not where the Python time goes. A Lightning
// module of three Linear layers trained on the CPU: 38% of the window's
// samples in Lightning, most in move_data_to_device's batch_to and
// the logger's result cache; it got "vectorise it, or move it into a
// Dataset". Empty otherwise or without enough samples.
func (s *state) frameworkChange() string {
	py := s.py
	if py == nil || py.HotSamples < s.p.OutsideModelSamples || py.FrameworkShare < s.p.MinFrameworkShare {
		return ""
	}
	change := fmt.Sprintf("%s's own code is the innermost frame of %.0f%% of the busy main-thread samples (%s): its per-step work (moving the batch, running the closure, logging, hooks) costs the same whatever the step does, so a larger batch makes it a smaller share of the step",
		py.Framework, pct(py.FrameworkShare), strings.Join(py.FrameworkFuncs, ", "))
	if py.Framework == "Lightning" {
		change = thenDo(change, "log less per step (self.log(..., on_step=False), Trainer(log_every_n_steps=...)) and do not move a batch that is already on its device")
	}
	return change
}

// compileChange proposes torch.compile(model) to fuse what (the ops the
// model runs), or, when the trace shows the model already runs compiled
// (its Torch-Compiled Region and CompiledFunction rows), where the rest
// is: telling a compiled program to compile was no help.
func (s *state) compileChange(what string) string {
	if s.compiled() {
		return "the model already runs under torch.compile: look for graph breaks (TORCH_LOGS=graph_breaks) and compile what runs outside it (the loss, the optimizer step: torch.compile(optimizer.step))"
	}
	// an experiment, not a promise: a tiny-op model gained nothing
	// measurable after a 50 s compile
	compile := "torch.compile(model)"
	switch ms := s.programModels(); {
	// a framework calls the model: the switch is its own (the model's
	// call site is the program's trainer.train() or trainer.fit() line)
	case s.framework() == "transformers":
		compile = "TrainingArguments(torch_compile=True), the Trainer's torch.compile of its model,"
	case s.framework() == "lightning":
		compile = "torch.compile on the LightningModule before fit (trainer.fit(torch.compile(model)))"
	case len(ms) > 1:
		// a GAN's step calls two (pytorch/examples' dcgan: the
		// Discriminator first, most of its Python in the Generator)
		compile = "torch.compile on each model (" + strings.Join(ms, "; ") + ")"
	case s.modelRef() != "":
		compile = "torch.compile on the model (" + s.modelRef() + ")"
	}
	if node := s.doubleBackward(); node != "" {
		// torch 2.15 on a PINN (autograd.grad(u, x, create_graph=True)
		// of a compiled MLP): "torch.compile with aot_autograd does not
		// currently support double backward"
		return compile + " would fuse " + what + ", but not here: the step differentiates its gradients (torch.autograd.grad(..., create_graph=True); the trace runs " +
			node + "), and torch.compile's AOTAutograd does not support a double backward (it raises \"torch.compile with aot_autograd does not currently support double backward\")"
	}
	if why := s.compileTooLong(); why != "" {
		return compile + " would fuse " + what + ", but " + why + "; only in a run whose steps take minutes"
	}
	return compile + " fuses " + what + " (try it: compiling costs seconds to minutes before the first step, and the gain depends on the model; bottleneck diff compares the two runs)"
}

// modelRef names the model the program calls, by the run's evidence:
// its class and the program's line that calls it ("Net, called at
// train.py:46"); "" without that evidence.
func (s *state) modelRef() string {
	r := s.in.Run
	if r == nil {
		return ""
	}
	// The evidence lists the calls most first: a loss module called four
	// times a step (pytorch/examples' fast_neural_style) came before the
	// two models, so the program's own classes come first, then torch.nn's
	// other than its losses (a bare nn.Sequential). Those with Linear or
	// convolution layers come before those without: a module without
	// (a loss, a Resize the program called twice) is the model only where
	// nothing called has layers (an LSTM alone, or evidence that does not
	// count them).
	for _, layered := range []bool{true, false} {
		for _, own := range []bool{true, false} {
			for _, m := range r.Models {
				if isTransform(m) || layered && m.Layers == 0 {
					continue
				}
				if !strings.HasPrefix(m.Module, "torch.") || !own && m.Module != "torch.nn.modules.loss" {
					return modelCallRef(m)
				}
			}
		}
	}
	return ""
}

// isTransform: a library's data transforms are nn.Modules, and their
// calls in the program (its own image loader's Resize: pytorch/tutorials'
// neural style transfer) outermost module calls, but never the model.
func isTransform(m rundir.ModelCall) bool {
	return runevidence.IsDataTransform(m.Module)
}

// convModels names the distinct model classes with convolutions the run
// called, the first call of each, at most three.
func (s *state) convModels() []string {
	return s.distinctModels(func(m rundir.ModelCall) bool { return m.Convs > 0 })
}

// depthwise is the program's model's convolutions, how many of them are
// depthwise, and how many of those have a stride: the model with the most
// depthwise ones (a model called from two lines is two of them; zeros
// without run evidence). Runs recorded before the agent counted stride-1
// ones count the strided ones only.
func (s *state) depthwise() (convs, dw, strided int) {
	if r := s.in.Run; r != nil {
		for _, m := range r.Models {
			if d := max(m.Depthwise, m.StridedDepthwise); d > dw || d == dw && m.StridedDepthwise > strided {
				convs, dw, strided = m.Convs, d, m.StridedDepthwise
			}
		}
	}
	return convs, dw, strided
}

// frozenConvModel is a model with convolutions whose first call ran
// with gradients off (a distillation's teacher, a frozen encoder) and
// whose own methods are the innermost program lines of over half the
// busy samples, with that share: the step's convolutions are mostly its.
func (s *state) frozenConvModel() (rundir.ModelCall, float64, bool) {
	if s.in.Run == nil || s.py == nil {
		return rundir.ModelCall{}, 0, false
	}
	for _, m := range s.in.Run.Models {
		if !m.NoGrad || m.Convs == 0 {
			continue
		}
		var share float64
		for _, l := range s.py.Hot {
			if strings.HasPrefix(l.Func, m.Class+".") {
				share += l.Pct / 100
			}
		}
		if share > 0.5 {
			return m, share, true
		}
	}
	return rundir.ModelCall{}, 0, false
}

// layeredModelCalled: the run saw a call of a model with Linear or
// convolution layers (not a data transform), one the agent's model
// changes can make.
func (s *state) layeredModelCalled() bool {
	return s.in.Run != nil && slices.ContainsFunc(s.in.Run.Models, func(m rundir.ModelCall) bool { return m.Layers > 0 && !isTransform(m) })
}

func modelCallRef(m rundir.ModelCall) string {
	return fmt.Sprintf("%s, called at %s:%d", m.Class, filepath.Base(m.File), m.Line)
}

// programModels names the distinct model classes the step calls, the
// first call of each (losses and other torch.nn modules left out), at
// most three.
func (s *state) programModels() []string {
	return s.distinctModels(func(m rundir.ModelCall) bool { return !strings.HasPrefix(m.Module, "torch.") && !isTransform(m) })
}

// distinctModels names the distinct classes of the models the run
// called that keep takes, the first call of each, at most three.
func (s *state) distinctModels(keep func(rundir.ModelCall) bool) []string {
	r := s.in.Run
	if r == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, m := range r.Models {
		if seen[m.Class] || !keep(m) || len(out) == 3 {
			continue
		}
		seen[m.Class] = true
		out = append(out, modelCallRef(m))
	}
	return out
}

// stepSiteRef is ", stepped at FILE:LINE": the program's line that calls
// the named optimizer region's step(), when the run recorded it.
func (s *state) stepSiteRef(region string) string {
	if o := s.runOptimizer(region); o != nil && o.StepSite != nil {
		return fmt.Sprintf(", stepped at %s:%d", filepath.Base(o.StepSite.File), o.StepSite.Line)
	}
	return ""
}

// decoding returns the window's hottest line when it generates text
// (a generate( call with at least half of the main thread's samples) on a
// device, where each new token is one forward of the whole model.
func (s *state) decoding() *runevidence.Line {
	if !s.device || s.py == nil || len(s.py.Hot) == 0 {
		return nil
	}
	if l := &s.py.Hot[0]; l.Pct >= 50 && strings.Contains(l.Text, "generate(") {
		return l
	}
	return nil
}

// decodeChange: token-by-token decoding issues every layer's kernels per
// token, each too small for the host's cost of issuing it (a 6-layer
// GPT-2 on an H100, batch 1: the device busy 3% of each token's step).
// A static KV cache lets CUDA graphs replay the step in one launch.
func decodeChange(l *runevidence.Line, kernels float64) string {
	change := fmt.Sprintf("%s:%d generates token by token: each token is one forward of the whole model, whose kernels fill %.0f%% of its step, the rest the host issuing them: "+
		"a static KV cache with CUDA graphs replays each token's step in one launch (Hugging Face: model.generation_config.cache_implementation = \"static\" and model.forward = torch.compile(model.forward, mode=\"reduce-overhead\"); "+
		"a decoding loop of your own: preallocate the cache and torch.compile the step with mode=\"reduce-overhead\")",
		filepath.Base(l.File), l.Line, pct(kernels))
	return orTry(orTry(change, "more sequences per call: they cost the host nothing more per token"), "a serving engine (vLLM, SGLang), which does both")
}

// stepOverheadChange: on a device, when most of the host's samples are
// the model's forward, the backward and the optimizer step (not the
// program's own Python), the host's time is the framework issuing the
// step's kernels, which the device finishes at once: no vectorising or
// DataLoader of the program's code helps (a CNN with batch 16 on an H100,
// 95% of its samples there, the device busy 4%, got "vectorise it, move
// preprocessing into a DataLoader"); CUDA graphs and more work per
// kernel do. CUDA graphs lead: they change neither the batch nor the
// numerics, and measured most (karpathy/nanoGPT's shakespeare_char in
// bf16 on an H100, 18.2 ms a step: mode="reduce-overhead" 5.9 ms, 3.1x;
// plain torch.compile 12.0 ms, 1.5x; a batch of 128 for 64, 1.8x the
// samples a second). "": not so, or no Python profile to tell.
func (s *state) stepOverheadChange() string {
	py := s.py
	if !s.device || py == nil || py.HotSamples < s.p.OutsideModelSamples || py.OutsideModelShare >= s.p.OutsideModelShare {
		return ""
	}
	graphs := "torch.compile(model, mode=\"reduce-overhead\") captures the step's kernels in a CUDA graph, launched in one call (the input shapes must stay the same)"
	if s.compiled() {
		graphs = "the model runs under torch.compile: mode=\"reduce-overhead\" adds CUDA graphs, launched in one call, and torch.compile(optimizer.step) brings the update in"
	}
	change := fmt.Sprintf("the host's time is the step's own forward, backward and optimizer calls (%.0f%% of the window's main-thread samples), each issuing kernels the device finishes at once (kernels fill %.0f%% of the step): %s",
		pct(1-py.OutsideModelShare), s.findingPct(s.share[GPUCompute]), graphs)
	change = orTry(change, "give each kernel more work (a larger batch)")
	if s.sparseGrads("") {
		return change // fused=True raises on sparse gradients
	}
	return orTry(change, "a fused optimizer (fused=True): it issues fewer kernels")
}

// denseKernelsChange: a device step that issues LaunchKernelsPerStep
// kernels or more while the device idles, the kernels either dense (one
// per LaunchStepUsPerKernel µs of step or less) or mostly tiny
// (LaunchShortFrac of them shorter than their launch call), yet not
// launch-bound by the launch rule: the host's time is what it spends
// issuing the step's kernels (Python, the ops, the launch calls), which
// a CUDA graph replays in one launch. Seen: token-by-token decode at
// batch 1, GEMVs of 10-20 µs, each after 30 µs of host time (the kernels
// outlast their launch calls); greedy generation with a 6-layer GPT-2 on
// an H100, 153 kernels a token, 99% shorter than their launch, one per
// 90 µs of step (generate's Python between them). Both got "move
// preprocessing into a DataLoader with workers" when the trace came
// alone. "" when the kernels are neither dense nor tiny.
func (s *state) denseKernelsChange(idle float64) string {
	kps, short := s.kernelStats()
	// the device must wait more than it works: kernels back to back for
	// most of the step are not held up by their launches (an MI210 trace,
	// 562 kernels a step, 89% busy, its host 9% of the step)
	if !s.device || kps < s.p.LaunchKernelsPerStep || idle < s.share[GPUCompute] {
		return ""
	}
	// not dense: nearly every kernel tiny and the device nearly idle, or
	// the host's time may be large ops of its own (HTA's nccl_data: 55%
	// of 900 kernels a step tiny, kernels 17% of the step, 60 ms a step
	// in unflatten_dense_tensors and narrow on the host)
	dense := s.step/kps <= s.p.LaunchStepUsPerKernel
	if !dense && (short < s.p.TinyKernelsFrac || s.share[GPUCompute] > s.p.TinyKernelsDevice) {
		return ""
	}
	if c := s.servingEngineChange(); c != "" {
		return c
	}
	graphs := "replay the step's kernels from a CUDA graph, one launch for all (torch.compile(model, mode=\"reduce-overhead\"), or torch.cuda.CUDAGraph capture of a step with fixed shapes; decoding: a static KV cache, e.g. Hugging Face's cache_implementation=\"static\"; a serving engine, vLLM or SGLang, runs its decode steps as CUDA graphs unless told not to)"
	if s.compiled() {
		graphs = "the model runs under torch.compile: mode=\"reduce-overhead\" replays its kernels from a CUDA graph, one launch for all"
	}
	if dense {
		return orTry(fmt.Sprintf("the host issues %.0f kernels a step, one per %s of step, and the device waits for each: the time is eager dispatch (Python, the op, the launch call) per kernel, not Python work to move out of the step: %s",
			kps, units.Duration(s.step/kps), graphs), "fewer kernels (torch.compile's fusion) and more work per kernel (a larger batch): less to dispatch for the same work")
	}
	change := fmt.Sprintf("the step's %.0f kernels are tiny (%.0f%% of them shorter than their launch call, kernels %.0f%% of the step) and the device waits for the host between them: %s, which also leaves out the model's Python between them",
		kps, pct(short), pct(s.share[GPUCompute]), graphs)
	return orTry(orTry(change, "more work per kernel (a larger batch, more sequences per call): it costs the host nothing more"),
		"where the Python between the ops is the program's own data work, not the model's (a Python profile, bottleneck run, tells), vectorise it or move it into DataLoader workers")
}

// servingEngineChange: the kernels run under a serving engine whose graph
// mode is off (its ops or kernels in the trace: vLLM's, SGLang's): the
// change is its own switch; "" for other programs.
func (s *state) servingEngineChange() string {
	switch s.servingEngine() {
	case "vLLM":
		return "vLLM launches each decode step's kernels one by one in eager mode: drop enforce_eager=True (LLM(..., enforce_eager=False), no --enforce-eager) so that it captures CUDA graphs for its decode batch sizes (compilation_config's cudagraph_capture_sizes covers the batch sizes served)"
	case "SGLang":
		return "SGLang launches each decode step's kernels one by one: drop --disable-cuda-graph so that it replays CUDA graphs, and raise --cuda-graph-max-bs to the batch sizes served"
	}
	return ""
}

// servingEngine names the serving engine whose ops or kernels the trace
// holds ("" for none): vLLM's custom ops (vllm::, _C:: names) and kernels
// (vllm:: in the kernel name), SGLang's (sglang, sgl_kernel); "" too
// when the trace launches CUDA graphs (the engine's graph mode is on).
func (s *state) servingEngine() string {
	var names []string
	if t := s.in.Ops; t != nil {
		for _, r := range t.Ranked() {
			names = append(names, r.Name)
		}
	}
	if kt := s.in.Kernels; kt != nil {
		for _, r := range kt.Ranked() {
			names = append(names, r.Name)
		}
	}
	engine := ""
	for _, n := range names {
		l := strings.ToLower(n)
		switch {
		case n == "cudaGraphLaunch" || n == "hipGraphLaunch":
			return "" // its graphs already run: eager is not the cause
		case engine != "":
		case strings.Contains(l, "vllm"):
			engine = "vLLM"
		case strings.Contains(l, "sglang") || strings.Contains(l, "sgl_kernel"):
			engine = "SGLang"
		}
	}
	return engine
}

// doubleBackward is the name of an autograd node that differentiates a
// backward (TanhBackwardBackward0), when the trace ran one: the step
// differentiates gradients it made with create_graph=True (a PINN's
// residual from autograd.grad, a gradient penalty); "" otherwise.
func (s *state) doubleBackward() string {
	if s.in.Ops == nil {
		return ""
	}
	for _, r := range s.in.Ops.Ranked() {
		if name := strings.TrimPrefix(r.Name, "autograd::engine::evaluate_function: "); strings.Contains(name, "BackwardBackward") {
			return name
		}
	}
	return ""
}

// compiled reports whether the operator table holds torch.compile's
// regions: the program runs compiled code.
func (s *state) compiled() bool {
	if s.in.Ops == nil {
		return false
	}
	return slices.ContainsFunc(s.in.Ops.Ranked(), func(r rowT) bool {
		return strings.HasPrefix(r.Name, "Torch-Compiled Region") || r.Name == "CompiledFunction"
	})
}

// foreachUpdate is the change for a per-parameter update that has no
// fused implementation (a hand-written optimizer).
const foreachUpdate = "update every parameter at once with torch._foreach_* ops (torch._foreach_mul_, torch._foreach_add_) or over stacked tensors"

// optimizerClass is the class in an optimizer step region's name
// ("Optimizer.step#AdamW.step": AdamW).
func optimizerClass(region string) string {
	class, _, _ := strings.Cut(strings.TrimPrefix(region, "Optimizer.step#"), ".")
	return class
}

// fusedOnCPU are the optimizers with a fused CPU implementation (torch
// 2.4 and later).
var fusedOnCPU = map[string]bool{"Adam": true, "AdamW": true, "SGD": true, "Adagrad": true}

// memoryGrowth returns the run's memory trend when it shows a leak: the
// fitted memory grows by MemoryGrowthMiB or more over the steps after
// start-up and a loop variable grew every step holding tensors (their
// autograd graph, or enough bytes). A large but stable footprint, or a
// growing list of Python floats, is not a leak.
func (s *state) memoryGrowth() *runevidence.MemoryTrend {
	r := s.in.Run
	if r == nil || r.Memory == nil {
		return nil
	}
	m := r.Memory
	// a leak grows in the later half of the run too (the agent's own
	// profiler window raises RSS once, and it stays there)
	if m.SlopeBytes <= 0 || m.LastBytes-m.FirstBytes < s.p.MemoryGrowthMiB*(1<<20) || m.LateSlopeBytes < m.SlopeBytes/2 || len(s.leakingVars()) == 0 {
		return nil
	}
	return m
}

// leakingVars are the loop variables that grew every step holding
// tensors that keep memory alive.
func (s *state) leakingVars() []rundir.Growth {
	var out []rundir.Growth
	for _, g := range s.in.Run.Memory.Growing {
		graph := strings.Contains(g.Holds, "graph")
		if g.PerStep >= 1 && (graph || float64(g.ItemBytes)*g.PerStep >= s.p.GrowthItemKiB*1024) {
			out = append(out, g)
		}
	}
	return out
}

// cpuDemand is how many threads of the job want a CPU at once on this
// machine: each local rank's intra-op threads plus its DataLoader workers
// (torch runs each worker with one thread).
type cpuDemand struct {
	ranks, threads, workers, cpus, want int
	opThreads                           int     // the intra-op threads that want a CPU
	busyWorkers                         int     // the DataLoader workers that want one
	load                                float64 // at the program's start, -1 unknown
}

func (s *state) cpuDemand() (cpuDemand, bool) {
	r := s.in.Run
	if r == nil || r.Env == nil || r.Env.NumThreads <= 0 || r.Env.CPUs <= 0 {
		return cpuDemand{}, false
	}
	d := cpuDemand{ranks: max(r.Env.LocalRanks, 1), threads: r.Env.NumThreads, cpus: r.Env.CPUs, load: r.Env.LoadAverage}
	for _, l := range r.Loaders {
		if l.NumWorkers != nil {
			d.workers = max(d.workers, *l.NumWorkers)
		}
	}
	// the intra-op threads want CPUs only where the step's ops run on
	// the CPU: a step whose ops run on a device leaves them idle, one
	// thread issuing its work (pytorch/examples' vae and mnist_rnn on an
	// H100, 16 CPUs, 16 intra-op threads and one DataLoader worker, were
	// told more workers would not help: four measured 1.96x and 3.53x)
	d.opThreads = d.threads
	if s.usesGPU {
		d.opThreads = 1
	}
	// the workers want CPUs as much as they are busy producing batches,
	// where their samples say so: makemore's four workers on 2 CPUs,
	// busy 0.8% of their time, were counted as four threads wanting a
	// CPU, and one intra-op thread and one worker (advised) ran no
	// faster (0.97x, pairs 0.91x to 1.02x)
	d.busyWorkers = d.workers
	if w := r.Workers; w != nil && w.Samples > 0 {
		d.busyWorkers = int(math.Round(float64(d.workers) * w.BusyShare))
	}
	d.want = d.ranks * (d.opThreads + d.busyWorkers)
	return d, true
}

func (d cpuDemand) oversubscribed() bool { return d.want > d.cpus }

// busy: the machine's load average when the program started leaves no CPU
// free beyond the program's own threads and workers (other processes run
// there). More threads then take CPUs others use: a machine at load 7-13
// on 2 cores ran a CPU step 3.5-28x slower with OMP_NUM_THREADS=2. A count
// of cores is not a free CPU.
func (d cpuDemand) busy() bool { return d.load >= 0 && d.load > float64(d.cpus-d.want)-0.5 }

// fitThreads is the intra-op thread count that keeps each rank within its
// share of the CPUs next to its workers.
func (d cpuDemand) fitThreads() int { return max(1, d.cpus/d.ranks-d.busyWorkers) }

// waitsForCPU: the main thread waited for a CPU enough of the recorded
// window for the opening to say so.
func (s *state) waitsForCPU() bool {
	cw := s.cpuWait()
	return cw != nil && cw.Window.WaitShare() >= s.p.CPUWaitNote
}

func (s *state) oversubscribed() bool {
	d, ok := s.cpuDemand()
	return ok && d.oversubscribed()
}

func (s *state) rank() {
	slices.SortStableFunc(s.d.Findings, func(a, b Finding) int {
		// memory growth leads: it ends the run, whatever the step costs;
		// then a debugging setting left on (a free fix of certain effect);
		// then the verdict's own finding leads among equal savings, and
		// the rule's id breaks a tie: the order rules are applied in
		// never shows
		primary := func(f Finding) bool { return f.Class == s.d.Verdict.Primary }
		return cmp.Or(cmp.Compare(leads(b), leads(a)),
			cmp.Compare(b.SavingUs, a.SavingUs), cmp.Compare(b.AtStakeUs, a.AtStakeUs),
			compareBool(primary(b), primary(a)), strings.Compare(a.Rule, b.Rule))
	})
	// a finding of the primary class with an estimate of 0 still goes
	// before findings that save less than a tenth of what it has at stake
	for i, f := range s.d.Findings {
		if f.Class == s.d.Verdict.Primary && f.SavingUs == 0 && i > 0 {
			j := i
			for j > 0 && leads(s.d.Findings[j-1]) == 0 && s.d.Findings[j-1].SavingUs < f.AtStakeUs/10 {
				j--
			}
			if j < i {
				s.d.Findings = slices.Insert(slices.Delete(s.d.Findings, i, i+1), j, f)
			}
			break
		}
	}
	// periodic work that leads the verdict leads the findings: its stake
	// is a share of the run's steps, the others' of the window's, which
	// hold none of its slow steps (a PPO loop's rollout, 50% of the run,
	// came second to its updates' per-op overhead, 77% of the rest)
	if s.d.Verdict.Primary == Periodic {
		if i := slices.IndexFunc(s.d.Findings, func(f Finding) bool { return f.Rule == "run.periodic" }); i > 0 && leads(s.d.Findings[0]) == 0 {
			f := s.d.Findings[i]
			s.d.Findings = slices.Insert(slices.Delete(s.d.Findings, i, i+1), 0, f)
		}
	}
	// start-up and one-off work have no per-step saving to rank by: they
	// follow the first finding, where the brief shows them, the longer
	// first
	isOnce := func(f Finding) bool { return f.OnceS > 0 }
	once := slices.DeleteFunc(slices.Clone(s.d.Findings), func(f Finding) bool { return !isOnce(f) })
	rest := slices.DeleteFunc(slices.Clone(s.d.Findings), isOnce)
	if len(once) > 0 && len(rest) > 0 {
		slices.SortStableFunc(once, func(a, b Finding) int { return cmp.Compare(b.OnceS, a.OnceS) })
		s.d.Findings = slices.Concat(rest[:1], once, rest[1:])
	}
}

// recordedSteps is the number of steps in the trace (used or not): what
// whole-trace totals such as the regions' are spread over.
func (s *state) recordedSteps() int {
	if w := s.in.Window; w != nil && len(w.Steps) > 0 {
		return len(w.Steps)
	}
	return s.steps
}

// leads ranks the findings that go first whatever they save.
// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

func leads(f Finding) int {
	switch f.Rule {
	case "memory.growth":
		return 3
	case "run.slowing":
		return 2
	case "autograd.anomaly":
		return 1
	}
	return 0
}

// syncFixes maps what synchronises (the op that issued the sync, or the
// call itself) to the change that removes it, most specific first.
var syncFixes = []struct {
	ops    []string // op or call name fragments, lower case
	change string
}{
	{[]string{"_local_scalar_dense", "aten::item", "aten::is_nonzero"}, "`.item()` / float(t) / `if t:` / print(t) reads a device value on the host each step: accumulate on the device (e.g. a running loss tensor) and read it every N steps"},
	{[]string{"nonzero", "masked_select", "unique", "aten::index", "boolean"}, "data-dependent shapes (nonzero, boolean-mask indexing, unique) wait for the device to size their output: use torch.where or fixed-size masks"},
	{[]string{"cudafree", "hipfree", "empty_cache"}, orTry("the caching allocator returns memory every step (torch.cuda.empty_cache() in the loop, or allocation retries near capacity): remove empty_cache() from the loop", "make room (smaller batch, expandable_segments): no retries near capacity")},
	{[]string{"cudadevicesynchronize", "hipdevicesynchronize"}, orTry("torch.cuda.synchronize() in the loop (often timing code): remove it", "time with torch.cuda.Event(enable_timing=True), read after the loop: no wait in the step")},
}

// syncChange names what actually synchronises, from the sync causes and
// the copies' host memory kind; "" keeps the rule's generic change.
func (s *state) syncChange() string {
	sy := s.in.Syncs
	if sy == nil || len(sy.Causes) == 0 {
		return ""
	}
	top := sy.Causes[0]
	what := strings.ToLower(top.Op + " " + top.TopOp + " " + top.Call)
	for _, f := range syncFixes {
		if classify.ContainsAny(what, f.ops) {
			return f.change
		}
	}
	switch {
	case top.Copy == classify.HtoD.String():
		return "host-to-device copies from pageable memory block the host: DataLoader(pin_memory=True) or tensor.pin_memory(), then .to(device, non_blocking=True)"
	case top.Copy != "" || classify.ContainsAny(what, []string{"copy_", "_to_copy", "aten::to"}):
		return orTry("tensor.cpu() / .to(\"cpu\") / .numpy() / .tolist() in the loop copies to the host and waits: keep the values on the device", "copy into a pinned buffer with non_blocking=True and read it a step later: the copy then overlaps the next step")
	}
	return ""
}

func cpusFree(n int) string {
	if n == 1 {
		return "1 CPU is"
	}
	return units.Count(n) + " CPUs are"
}

func ptrStr[T any](p *T) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func pinText(device bool) string {
	if device {
		return ", pin_memory=True"
	}
	return ""
}

// hostWaitFrames names the Python frames and ops running during the
// largest host-wait gaps (idle analysis).
func (s *state) hostWaitFrames() []Location {
	id := s.in.Idle
	if id == nil {
		return nil
	}
	// ops the sync finding already names were blocked, not busy
	syncing := map[string]bool{}
	if sy := s.in.Syncs; sy != nil && s.share[Sync] >= s.p.MinFinding {
		for _, c := range sy.Causes {
			if c.StallUs > 0 {
				syncing[c.Op], syncing[c.TopOp] = true, true
			}
		}
	}
	// Each frame's time is capped at its gap, and a gap mostly spent in
	// a syncing op (its ancestors fill the same time) is a sync stall,
	// not host work: the note then stays within what the gaps hold.
	agg := map[string]float64{}
	kind := map[string]string{}
	var gapsUs float64
	gaps := 0
	for _, g := range id.TopHostWaits {
		var synced float64
		for _, f := range g.Ops {
			if syncing[f.Name] {
				synced = max(synced, f.Us)
			}
		}
		if synced >= g.Us/2 {
			continue
		}
		gaps++
		gapsUs += g.Us
		for _, f := range g.Ops {
			if (f.Kind == "python_function" || f.Kind == "cpu_op") && !syncing[f.Name] {
				agg[f.Name] += min(f.Us, g.Us)
				kind[f.Name] = f.Kind
			}
		}
	}
	var names []string
	for n := range agg {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(agg[b], agg[a]), cmp.Compare(a, b)) })
	var out []Location
	for _, n := range names {
		if len(out) == 2 {
			break
		}
		k := "op"
		if kind[n] == "python_function" {
			k = "python"
		}
		in := fmt.Sprintf("the %d largest host-wait gaps (%s)", gaps, units.Duration(gapsUs))
		if gaps == 1 {
			in = "the " + units.Duration(gapsUs) + " of the largest host-wait gap"
		}
		out = append(out, Location{Kind: k, Name: n, Note: fmt.Sprintf("ran %s of %s", units.Duration(agg[n]), in)})
	}
	return out
}

// topOps returns the ops with the most host self time (byCalls: most
// calls), optionally only those whose name contains one of filter.
func (s *state) topOps(n int, selfTime bool, filter ...string) []Location {
	t := s.in.Ops
	if t == nil {
		return nil
	}
	rows := slices.Clone(t.Ranked())
	if selfTime {
		slices.SortFunc(rows, func(a, b rowT) int { return cmp.Compare(b.HostSelfUs, a.HostSelfUs) })
	}
	var out []Location
	for _, r := range rows {
		if len(out) == n {
			break
		}
		if isAnnotation(r) && len(filter) == 0 {
			continue
		}
		if len(filter) > 0 && !classify.ContainsAny(strings.ToLower(r.Name), filter) {
			continue
		}
		out = append(out, Location{Kind: "op", Name: r.Name, Note: fmt.Sprintf("%d calls, host self %s, total %s", r.Calls, units.Duration(r.HostSelfUs), units.Duration(r.HostTotalUs))})
	}
	return out
}

// stepsAreUpdates: the agent counted optimizer.step() calls as the steps:
// each step trains, so a trace without a backward did not hold a whole
// step (pytorch/examples' GAT: a window closed before its first step left
// a piece of a forward, and the program, which trains, was told to call
// model.eval()).
func (s *state) stepsAreUpdates() bool {
	return s.in.Run != nil && (s.in.Run.StepSource == "optimizer" || s.in.Run.StepSource == "closure") // each evaluation a forward and a backward
}

// cpuOpsChange fits the native-ops change to the ops that take the time:
// convolutions and matmuls have their own fast paths on a CPU; time spread
// over many small ops is fusion's. lead is a change that goes before every
// other, the threads' included: a model left in training mode for
// inference, which also changes its outputs. attention is the line that
// calls nn.MultiheadAttention when the change names it.
func (s *state) cpuOpsChange() (change string, ev []Evidence, lead string, attention []Location) {
	change, ev, dropout, total := s.cpuFamilyChange()
	family := change
	defer func() {
		if !strings.HasPrefix(change, family) {
			s.nativeTry = nil // another change leads
		}
	}()
	if att, _ := s.unfusedAttention(true); total > 0 && att/total >= s.p.AttentionShare {
		var fix string
		fix, attention = s.attentionFix(true)
		fused := fmt.Sprintf("attention runs unfused (softmax and batched matmuls: %.0f%% of the native time): %s", pct(att/total), fix)
		// convolutions that take more of the time lead (a diffusion
		// Unet's: 52% against its attention's 13%, whose fused kernel
		// took a run 40.6, 40.4 s -> 38.1, 40.6 s), and so do large
		// matmuls under bf16 autocast (lucidrains' ViT over 65 tokens:
		// matmuls 70%, attention 10%; its step 2.18x under bf16
		// autocast, no faster through the fused kernel)
		largeBF16 := s.cpuHasBF16() && slices.ContainsFunc(ev, func(e Evidence) bool { return e.What == largeGEMMLabel })
		if len(ev) > 0 && ev[0].Value/100 > att/total && (ev[0].What == convShareLabel || ev[0].What == matmulShareLabel && largeBF16) {
			change = thenDo(change, fused)
		} else {
			change = thenDo(fused, change)
		}
		ev = append(ev, Evidence{"softmax + bmm ops' share of native op time", pct(att / total), "%", "ops"})
	}
	if c, e, ok := s.sliceBackwardChange(total); ok {
		change, ev = thenDo(c, change), append(ev, e)
	}
	// dropout's masks are a cost of their own on a CPU, whatever leads;
	// with no backward in the steps, dropout that draws masks is a model
	// left in training mode for inference, and model.eval() comes first
	// (a small CNN evaluated here: 212 ms a batch, 133 ms after eval())
	switch heavy := total > 0 && dropout/total >= s.p.MinDropout; {
	case s.trainModeInference(dropout, total):
		lead = fmt.Sprintf("dropout draws random masks (aten::bernoulli_, native_dropout: %.0f%% of the native time) though no backward runs in these steps: the model is in training mode: call model.eval() before inference (dropout then passes its input through, and BatchNorm uses its running statistics, which the outputs need too) and run it under torch.inference_mode()", pct(dropout/total))
		ev = append(ev, Evidence{dropoutShareLabel, pct(dropout / total), "%", "ops"}, Evidence{"backward op calls", 0, "", "ops"})
	case heavy:
		masks := fmt.Sprintf("dropout's random masks (aten::dropout: its bernoulli_ draws, scaling and multiply) take %.0f%% of the native time, and drawing random numbers is slow on a CPU (~13 ns an element here; torch.compile's code draws them about twice as fast): "+
			"mask fewer elements: an input that is mostly zeros (sparse features) keeps its meaning with dropout on its nonzero values only (x.to_sparse(), dropout on its values()), else a lower p, or dropout only where the model overfits", pct(dropout/total))
		if s.dropoutLeads(dropout, total) {
			change = thenDo(masks, change)
		} else {
			change = thenDo(change, masks)
		}
		ev = append(ev, Evidence{dropoutShareLabel, pct(dropout / total), "%", "ops"})
	}
	if one, ok := s.oneSampleSteps(); ok {
		lead = thenDo(lead, one)
	}
	return change, ev, lead, attention
}

// oneSampleSteps: steps that each do one sample's work, and pay the
// per-op and per-module cost per sample: an inference loop (no backward
// op in the steps) or a backward without an optimizer (input gradients:
// an adversarial attack, a saliency map) over a DataLoader with
// batch_size=1, its main loader (the most batches); inference on a model
// call of one sample; training on one sample a step (oneSampleTraining).
// The change leads with batching the samples. pytorch/tutorials' FGSM
// attack (one MNIST image a step, a backward for its input gradient, no
// optimizer) led with bf16 autocast for its convolutions, 1.2-1.3x slower
// on one image; batched it ran 8x faster a sample.
func (s *state) oneSampleSteps() (string, bool) {
	r := s.in.Run
	if r == nil || s.in.Ops == nil {
		return "", false
	}
	if s.in.Ops.BackwardCalls != 0 && len(r.Optimizers) > 0 {
		return s.oneSampleTraining()
	}
	l, loaderOfOne := s.loaderOfOne()
	if s.in.Ops.BackwardCalls != 0 {
		if !loaderOfOne {
			return "", false // one image optimised by hand (DeepDream) has nothing to batch with
		}
		return fmt.Sprintf("a backward on one sample per step (DataLoader(%s, batch_size=1)%s, no torch.optim optimizer: gradients with respect to each input, as an adversarial attack or a saliency map takes them, or an update by hand): "+
			"batch the samples (batch_size=32 or more): with the loss summed over the batch (reduction=\"sum\") each sample's input gradient stays its own, where the model mixes no samples (eval mode: BatchNorm on its running statistics); "+
			"each op then does many samples' work in little more time (pytorch/tutorials' FGSM attack on its MNIST LeNet, on a CPU: 0.86 ms a sample one at a time, 0.10 ms in batches of 64, the same accuracies)", l.Dataset, l.SiteRef()), true
	}
	seen := " (a 4-layer transformer encoder on a CPU: 0.51 s for 320 sequences one at a time, 0.24 s in batches of 32)"
	if s.device {
		seen = ", and each kernel fills more of the device"
	}
	if loaderOfOne {
		return fmt.Sprintf("inference on one sample per step (DataLoader(%s, batch_size=1)%s, no backward): batch the samples (batch_size=32 or more, one model call per batch; sequences padded to the batch's longest, with their mask): each op then does many samples' work in little more time%s", l.Dataset, l.SiteRef(), seen), true
	}
	// no DataLoader of one: the model's own call says it (a generation
	// loop feeds one token of one sequence per call). A matmul on one row
	// reads the whole weight for one sample's work: GPT-2 (6 layers, 512
	// wide) generating 48 tokens for 12 prompts one at a time took
	// 4.5-5.4x as long as for the 12 in one batch, on this CPU
	if one := r.OneSample; one != nil && r.StepSource == "forward" && len(one.Shapes) > 0 {
		if !s.device {
			seen = " (a matmul on one row reads the whole weight matrix for one sample's work: GPT-2 generating for 12 prompts one at a time took 4.5-5.4x as long as for the 12 in one batch, on a CPU)"
		}
		return fmt.Sprintf("inference on one sample per model call (every tensor argument of the step's call has a first dimension of 1: %s at step %d, no backward): "+
			"batch the samples: several prompts, images or sequences per call (generate() on a batch of prompts, padded on the left, with its attention_mask); each op then does many samples' work in little more time%s",
			shapeText(one.Shapes[0]), one.Step, seen), true
	}
	return "", false
}

// loaderOfOne is the run's main DataLoader (the most batches) when it
// loads one sample a batch, for MinOneSampleBatches batches or more.
func (s *state) loaderOfOne() (runevidence.Loader, bool) {
	r := s.in.Run
	if r == nil || len(r.Loaders) == 0 {
		return runevidence.Loader{}, false
	}
	l := slices.MaxFunc(r.Loaders, func(a, b runevidence.Loader) int { return cmp.Compare(a.Batches, b.Batches) })
	return l, l.BatchSize != nil && *l.BatchSize == 1 && l.Batches >= s.p.MinOneSampleBatches
}

// oneSampleTraining: training steps (one optimizer) whose model got one
// sample at its first call (no batch dimension, or one of 1) and runs
// about once a step (its layers' ops run 0.75-1.5 times its layers a
// step; more is itemModel's loop), with no EmbeddingBag (whose one row is
// a batch): each step learns from one sample, and every op pays its fixed
// cost for one sample's work. pytorch/tutorials'
// word_embeddings_tutorial.py (an n-gram model, one trigram a step) led
// with fused=True for its SGD; 10 epochs of its 113 trigrams took 147 ms
// one at a time, 16 ms in batches of 16, 3.8 ms in one batch.
func (s *state) oneSampleTraining() (string, bool) {
	r, t := s.in.Run, s.in.Ops
	if r == nil || t == nil || t.BackwardCalls == 0 || len(r.Optimizers) != 1 {
		return "", false
	}
	// an EmbeddingBag's input is the whole batch's tokens in one row,
	// with their offsets beside it
	if slices.ContainsFunc(t.Rows, func(row optable.OpRow) bool { return strings.Contains(row.Name, "embedding_bag") }) {
		return "", false
	}
	perStep, _, _ := s.layerCalls()
	if perStep == 0 {
		return "", false
	}
	for _, m := range r.Models {
		// a first call with gradients off is not a training call, and its
		// input not the training's batch: stable-baselines3's PPO picks
		// each action under torch.no_grad on one observation ([1, 4]) and
		// trains on minibatches of 64; it was told to train on mini-batches
		if !s.oneSampleLayers(m) || m.NoGrad {
			continue
		}
		if n := perStep / float64(m.Layers); n < 0.75 || n > 1.5 {
			continue
		}
		return fmt.Sprintf("training on one sample per step: the model (%s) gets one sample a call (its input %s), once a step: where the training allows, train on mini-batches, B samples a step "+
			"(stack their inputs into one tensor of B rows, sequences padded to the batch's longest with a mask or packed with pack_padded_sequence; a forward that flattens to one row, view(1, -1), flattens to view(B, -1); the loss averages over the batch): "+
			"each op then does B samples' work in little more time, and an epoch takes B times fewer steps (the batch size is a hyperparameter: retune the learning rate with it) "+
			"(pytorch/tutorials' word_embeddings_tutorial.py: 10 epochs of 113 trigrams took 147 ms one at a time, 16 ms in batches of 16, on a CPU)",
			modelCallRef(m), shapeText(m.Input)), true
	}
	return "", false
}

// outsideModelChange: on a CPU, tensor work the program does itself in
// its loop (per-item preprocessing, synthetic inputs drawn every step,
// metrics by hand) is out of reach of torch.compile(model) and of faster
// model ops. When it holds OutsideModelShare of the busy main-thread
// samples, the change names it and its lines first; not when drawing
// random numbers leads the native time (that change is already about
// inputs made in the loop), nor sorting (a sort in the program's own
// code, whose change, topk, is the one to make: its generic advice came
// first).
func (s *state) outsideModelChange(fam []Evidence) (string, Evidence, []Location, bool) {
	py := s.py
	if py == nil || py.HotSamples < s.p.OutsideModelSamples || py.OutsideModelShare < s.p.OutsideModelShare ||
		slices.ContainsFunc(fam, func(e Evidence) bool { return e.What == randomShareLabel || e.What == sortShareLabel }) {
		return "", Evidence{}, nil, false
	}
	where := s.pyLines(py.OutsideModel, 3)
	var names []string
	for _, l := range where {
		names = append(names, fmt.Sprintf("%s:%d %.0f%%", filepath.Base(l.File), l.Line, l.SharePct))
	}
	ev := Evidence{"share of busy main-thread samples outside the model, backward and optimizer", pct(py.OutsideModelShare), "%", "pyprofile"}
	// workers overlap what moves into the loading only with CPUs to spare
	workers := "move data preparation into a Dataset loaded by DataLoader workers (num_workers > 0), which overlaps it with the step"
	if s.workersShareCPUs() {
		workers = "move data preparation into the Dataset or its collate_fn (DataLoader workers would run it on the CPUs the step's ops already use: keep the loading in the main process on this machine)"
	}
	if tf := py.OutsideTransform; tf != "" {
		// pytorch/tutorials' speech command classifier resampled each
		// batch in the step (torchaudio's Resample, 36% of the samples):
		// its training step took 46-52 ms with the resampling moved out
		// of it, 88-109 ms as it was
		return fmt.Sprintf("%.0f%% of the busy step runs tensor ops outside the model's forward, the backward and the optimizer (%s), most of them in the data transform %s applied to each batch in the step, where torch.compile(model) and faster model ops do not reach: "+
			"a deterministic transform (a resampling, a fixed normalisation) gives the same output every epoch, so apply it once to the dataset before training; a random one (augmentation): %s",
			pct(py.OutsideModelShare), strings.Join(names, ", "), tf, workers), ev, where, true
	}
	return fmt.Sprintf("%.0f%% of the busy step runs tensor ops the program calls itself, outside the model's forward, the backward and the optimizer (%s), where torch.compile(model) and faster model ops do not reach: make what does not change once before the loop (synthetic inputs, constant tensors), do per-item work once over the whole batch, and %s",
		pct(py.OutsideModelShare), strings.Join(names, ", "), workers), ev, where, true
}

// sliceBackwardChange: the backward of a slice or an index of a larger
// tensor (aten::slice_backward, select_backward) allocates and zero-fills
// a gradient as large as the whole tensor, then adds the slice's into it;
// taken once per time step (x[:, t] in a loop, or nn.LSTM/GRU over a
// packed sequence on the CPU, which narrows its input step by step) that
// is work of the square of the sequence's length. An LSTM classifier over
// packed sequences of 5-120 tokens here: 20% of its native time in
// slice_backward's zero fill; the padded batch through the fused LSTM,
// read at each length - 1, took its step from 1.39 to 0.57 s.
func (s *state) sliceBackwardChange(total float64) (string, Evidence, bool) {
	t := s.in.Ops
	if t == nil || total <= 0 {
		return "", Evidence{}, false
	}
	// the autograd nodes hold the backwards and, after each, the add of
	// its whole-tensor gradient into the others' (a Mamba's selective
	// scan: select_backward 31% of the host time, its node 67%)
	var us, nodeUs float64
	rnn := false
	for _, r := range t.Ranked() {
		switch n := strings.ToLower(r.Name); {
		case n == "aten::slice_backward" || n == "aten::select_backward":
			us += r.HostTotalUs
		case n == "autograd::engine::evaluate_function: slicebackward0" || n == "autograd::engine::evaluate_function: selectbackward0":
			nodeUs += r.HostTotalUs
		case classify.ContainsAny(n, cpuRNNOps):
			rnn = true
		}
	}
	us = min(max(us, nodeUs), total)
	if us/total < s.p.MinSliceBackward {
		return "", Evidence{}, false
	}
	fix := "take a sequence's steps once with x.unbind(dim) (one backward for all of them) instead of x[:, t] in the loop"
	if rnn {
		fix = "nn.LSTM/GRU over a pack_padded_sequence on the CPU slices its input time step by time step: run it on the padded batch (one fused oneDNN call) and read each sequence's output at its length - 1, with sequences bucketed by length to keep padding small; a loop over x[:, t] likewise: x.unbind(dim) once"
	}
	change := fmt.Sprintf("the backward of slicing a larger tensor (aten::slice_backward / select_backward, with autograd's sums of their gradients: %.0f%% of the native time) zero-fills a gradient of the whole tensor for every slice and adds the slice's into it, then adds those whole-tensor gradients up: %s", pct(us/total), fix)
	return change, Evidence{"slice and select backward's share of native op time", pct(us / total), "%", "ops"}, true
}

// sliceCut is the part of the slice and select backwards' time that
// x.unbind(dim) takes out: every zero fill of the whole tensor, the copy
// into it and the adds of those gradients, where unbind's backward stacks
// the slices' gradients once (over l slices, 1/l of the work).
// johnma2006/mamba-minimal's selective scan (deltaA[:, i] in a loop over
// 128 positions), trained on this CPU: in a steady window of 3 steps the
// SelectBackward0 nodes took 69% of the native time, 96% native; with
// unbind its median step went 0.80-0.90 s -> 0.21 s, 74-76% saved,
// against 64% predicted (25% at the rule's Factor, from select_backward
// alone). testdata/rundir/cpu_mamba holds a window the profiler's memory
// growth slowed (its figures inflated: 90% predicted).
const sliceCut = 0.95

// sdpaChange is the fused attention call that replaces softmax(q @ k.T) @ v.
// The trace cannot tell a causal mask from another, or from none (a
// Unet's attention over its pixels has none), so it names each argument
// with where it applies.
const sdpaChange = "torch.nn.functional.scaled_dot_product_attention(q, k, v) instead of softmax(q @ k.transpose(-2, -1)) @ v (is_causal=True in place of a causal mask, attn_mask= for another, neither without one)"

// attentionFix is the change for unfused attention by who computes it.
// nn.MultiheadAttention returns the attention weights by default
// (need_weights=True), which it computes with softmax and bmm; with
// need_weights=False it calls scaled_dot_product_attention (one layer, 8 x
// 256 tokens, trained on this CPU: 155 -> 110 ms a forward and backward).
// Its inference fast path (aten::_native_multi_head_attention) is unfused
// on a CPU whatever need_weights is; with the fast path off and
// need_weights=False the forward took 41 -> 28 ms. Attention written by
// hand gets scaled_dot_product_attention. where is the line that calls
// nn.MultiheadAttention.
func (s *state) attentionFix(cpu bool) (fix string, where []Location) {
	if s.py == nil || s.py.MHAShare < s.p.MinMHA {
		fix := sdpaChange
		if cpu {
			fix += ", which has a fused kernel on the CPU too (a 512-token causal attention on the project's test CPU: 3-10x faster forward and backward)"
		}
		return fix, nil
	}
	at := ""
	if where = s.pyLines(s.py.MHALines, 1); len(where) > 0 {
		at = fmt.Sprintf(" (%s:%d)", filepath.Base(where[0].File), where[0].Line)
	}
	if cpu && s.in.Ops != nil && slices.ContainsFunc(s.in.Ops.Rows, func(r optable.OpRow) bool { return r.Name == "aten::_native_multi_head_attention" }) {
		return fmt.Sprintf("nn.MultiheadAttention's inference fast path (aten::_native_multi_head_attention) computes attention unfused on a CPU: torch.backends.mha.set_fastpath_enabled(False) and need_weights=False in its calls%s run scaled_dot_product_attention's fused kernel instead (8 x 256 tokens on the project's test CPU: 41 -> 28 ms a forward)", at), where
	}
	return fmt.Sprintf("nn.MultiheadAttention computes the attention weights it returns (need_weights=True, its default) with softmax and bmm: call it with need_weights=False where they are not used%s, and it runs scaled_dot_product_attention's fused kernel", at), where
}

// dropoutShareLabel is the evidence of dropout's share of the native time.
const dropoutShareLabel = "dropout ops' share of native op time"

// trainModeInference: dropout draws masks (>= MinDropout of the native
// time) in steps with no backward that are not updates: a model left in
// training mode for inference, whose model.eval() takes the masks out.
func (s *state) trainModeInference(dropout, total float64) bool {
	return total > 0 && dropout/total >= s.p.MinDropout && s.in.Ops != nil && s.in.Ops.BackwardCalls == 0 && !s.stepsAreUpdates()
}

// dropoutLeads: in training, dropout's masks take DropoutFirst of the
// native time or more, and masking fewer elements is the first change.
func (s *state) dropoutLeads(dropout, total float64) bool {
	return total > 0 && dropout/total >= s.p.DropoutFirst && s.in.Ops != nil && (s.in.Ops.BackwardCalls > 0 || s.stepsAreUpdates())
}

// cpuDropoutOps are the op names (lower case) that draw dropout's masks.
var cpuDropoutOps = []string{"bernoulli", "native_dropout", "aten::dropout", "feature_dropout"}

const (
	randomShareLabel = "random number ops' share of native op time"
	sortShareLabel   = "sort ops' share of native op time"
)

// cpuFamilyChange is the change for the op family that holds the native
// time, its evidence, and the dropout ops' and all ops' self time.
func (s *state) cpuFamilyChange() (string, []Evidence, float64, float64) {
	s.nativeTry = nil // set by the change that the agent can make
	var total, conv, gemm, rnn, random, dropout, dropoutCall, index, aggregate, indexBackward, sorts, embeddingBackward float64
	var gemmCallWeighted float64  // Σ self × self per call over the matmul rows
	var convCallWeighted float64  // the same over the convolution rows
	rnnCalls := 0                 // calls of a recurrent layer or cell (isRNNCall)
	var rest, all []optable.OpRow // the other ops, and all, for naming the largest
	if t := s.in.Ops; t != nil {
		for _, r := range t.Ranked() {
			if isAnnotation(r) {
				continue
			}
			n := strings.ToLower(r.Name)
			total += r.HostSelfUs
			all = append(all, r)
			switch {
			case strings.Contains(n, "conv"):
				conv += r.HostSelfUs
				if r.Calls > 0 {
					convCallWeighted += r.HostSelfUs * r.HostSelfUs / float64(r.Calls)
				}
			case classify.ContainsAny(n, cpuGEMMOps):
				gemm += r.HostSelfUs
				if r.Calls > 0 {
					gemmCallWeighted += r.HostSelfUs * r.HostSelfUs / float64(r.Calls)
				}
			case classify.ContainsAny(n, cpuRNNOps):
				rnn += r.HostSelfUs
				if isRNNCall(n) {
					rnnCalls += r.Calls
				}
			case classify.ContainsAny(n, cpuRandomOps):
				random += r.HostSelfUs
			case classify.ContainsAny(n, cpuSortOps):
				sorts += r.HostSelfUs
			case classify.ContainsAny(n, cpuIndexOps):
				index += r.HostSelfUs
				if classify.ContainsAny(n, cpuAggregateOps) {
					aggregate += r.HostSelfUs
				}
			default:
				rest = append(rest, r)
			}
			if classify.ContainsAny(n, cpuDropoutOps) {
				dropout += r.HostSelfUs
				// the op around the mask holds its draws, scaling and
				// multiply (PyG's GCN: bernoulli_ 31%, aten::dropout 40%)
				dropoutCall = max(dropoutCall, r.HostTotalUs)
			}
			if n == "indexbackward0" {
				indexBackward += r.HostTotalUs
			}
			if classify.ContainsAny(n, denseEmbeddingOps) {
				embeddingBackward += r.HostTotalUs - r.HostSelfUs
			}
		}
	}
	if total <= 0 {
		return rule("cpu.native").Change, nil, 0, 0
	}
	dropout = min(max(dropout, dropoutCall), total)
	// An embedding's dense backward sorts the batch's indices (on a CPU,
	// aten::sort under _embedding_bag_dense_backward: 25% of the native
	// time of a bag-of-words classifier here): not a sort of the
	// program's that topk could replace. The table is by name only, so
	// the ops inside the dense backward are taken from the sorts first.
	sorts -= min(sorts, embeddingBackward)
	// a family at 40% leads the change; below 70% matmuls, the rest is
	// named too: what torch.compile can fuse is then as large as what
	// faster matmuls can save
	const dominant, alone = 0.4, 0.7
	largest := func(rows []optable.OpRow, n int) string {
		slices.SortFunc(rows, func(a, b optable.OpRow) int { return cmp.Compare(b.HostSelfUs, a.HostSelfUs) })
		var top []string
		for _, r := range rows[:min(n, len(rows))] {
			top = append(top, fmt.Sprintf("%s %.0f%%", r.Name, pct(r.HostSelfUs/total)))
		}
		return strings.Join(top, ", ")
	}
	others := func(family float64) string {
		if family/total >= alone || len(rest) == 0 {
			return ""
		}
		return fmt.Sprintf("the other %.0f%% (largest: %s): %s", pct(1-family/total), largest(rest, 2), s.compileChange("elementwise, normalization and softmax ops"))
	}
	// torch.compile leaves matmuls, convolutions and recurrent layers to
	// the same oneDNN/MKL calls, and still draws a random number for each
	// element of a dropout mask: what it can make faster is the rest
	// (pytorch/examples' GAT, dropout masks 26% of its native time over a
	// dense 2,708 x 2,708 attention, was promised 38% and measured 1.16x
	// compiled, median epoch 3.57 -> 3.09 s)
	fusable := max(0, total-gemm-conv-rnn-dropout) / total
	rnnPerStep := float64(rnnCalls) / float64(max(1, s.recordedSteps()))
	sparse := s.sparseProductsShare(gemm)
	denseCall := (convCallWeighted + gemmCallWeighted) / max(conv+gemm, 1) * s.windowRunning() // µs, weighted by time
	switch {
	case conv/total >= dominant:
		model := "the model and its input"
		switch ms := s.convModels(); {
		case len(ms) > 1: // a style-transfer step runs its network and a frozen VGG
			model = "the models (" + strings.Join(ms, "; ") + ") and their inputs"
		case len(ms) == 1:
			model = "the model (" + ms[0] + ") and its input"
		case s.modelRef() != "":
			model = "the model (" + s.modelRef() + ") and its input"
		}
		convs := fmt.Sprintf("convolutions take %.0f%% of the native time", pct(conv/total))
		// a .view() of a convolution's output fails in channels_last
		// (pytorch/examples' older mnist Net: x.view(-1, 320))
		layout := fmt.Sprintf("%s in channels_last (model.to(memory_format=torch.channels_last), input.to(memory_format=torch.channels_last); a .view() of their outputs becomes .reshape()), oneDNN's fast path for convolutions", model)
		bf16 := "bf16 autocast (" + s.autocastCall() + ", a change to the numerics)"
		// channels_last speeds up the convolutions only, and reorders
		// the tensors wherever the model leaves that layout (a flatten
		// before a Linear head): on this AVX512-BF16 CPU pytorch/examples'
		// ResNet-18 (convolutions 81% of the native time) ran 1.19x in
		// it, 1.91x under bf16 autocast, 2.15x with both; its mnist CNN
		// (two convolutions, 53%) 0.95x in it, 1.36x under bf16 autocast,
		// 1.23-1.33x with both
		nconv, dw, strided := s.depthwise()
		// stride-1 depthwise convolutions: channels_last alone is only
		// tried (0.95-1.17x, below)
		layoutPays := conv/total >= convLayoutShare && (dw == 0 || strided > 0)
		ev := []Evidence{{convShareLabel, pct(conv / total), "%", "ops"}}
		var lead string
		_, oneSample := s.oneSampleSteps()
		switch {
		case oneSample:
			// a convolution on one image pays its fixed cost for one
			// image's work, and bf16 autocast adds casts to it:
			// pytorch/tutorials' FGSM attack on a LeNet, one MNIST image a
			// step, ran 1.2-1.3x slower under it (batched, 1.04x faster)
			lead = convs + ", each on one sample: batched first (above); bf16 autocast only adds casts to a convolution on one image (a LeNet on one MNIST image a step: 1.2-1.3x slower under it)"
		case strided > 0:
			// depthwise convolutions run far faster in channels_last
			// (oneDNN), and bf16 autocast slows the backward of strided
			// ones: on this AVX512-BF16 CPU (a training step at batch 16
			// of 128 x 128, medians of three rounds), torchvision's
			// MobileNetV3-Small, EfficientNet-B0 and ShuffleNetV2 ran
			// 1.25x, 1.37x and 1.21x in channels_last, 0.80x, 0.85x and
			// 0.84x under bf16 autocast (their strided depthwise
			// convolutions' backward 2.5-8x slower), where ResNet-18 (no
			// grouped convolutions) and RegNetX-400MF (grouped, none
			// depthwise) ran 1.75x and 1.45x under it
			lead = fmt.Sprintf("%s, %d of the model's convolutions depthwise with a stride: put %s; %s", convs, strided, layout, depthwiseNoBF16)
			s.nativeTry = map[string]string{"channels_last": "true"}
			ev = append(ev, Evidence{"the model's strided depthwise convolutions", float64(strided), "", "evidence"}, Evidence{layoutReachLabel, pct(conv / total), "%", "ops"})
		case dw > 0 && nconv > dw && s.cpuHasBF16():
			// depthwise convolutions without a stride gain nothing under
			// bf16 autocast (a 7 x 7 one's backward 1.26x slower), and
			// channels_last alone can lose: on this AVX512-BF16 CPU (as
			// above) timm's ConvNeXt-atto, ConvNeXt-V2-atto,
			// InceptionNeXt-atto and EdgeNeXt-XXS ran 0.95x, 0.97x, 1.09x
			// and 1.17x in channels_last, 1.08x, 1.07x, 1.34x and 1.19x
			// with both (ConvNeXt-atto was promised 48% from all its
			// convolutions' time), so both together, from the other
			// convolutions' time: the depthwise ones' share of it taken as
			// their share of the count (ConvNeXt-atto: 30% of the
			// convolutions, 28% of their time)
			dense := conv * float64(nconv-dw) / float64(nconv)
			lead = fmt.Sprintf("%s, and this CPU has bfloat16 instructions: %s with %s; it shortens the model's %d other convolutions, not its %d depthwise ones (their backward is no faster under bf16 on a CPU, and channels_last alone can be slower)",
				convs, bf16, layout, nconv-dw, dw)
			s.nativeTry = map[string]string{"bf16_autocast": "true", "channels_last": "true"}
			ev = append(ev, Evidence{"the model's depthwise convolutions", float64(dw), "", "evidence"}, Evidence{denseReachLabel, pct((dense + gemm) / total), "%", "ops"})
		case s.cpuHasBF16() && layoutPays:
			lead = orTry(fmt.Sprintf("%s, and this CPU has bfloat16 instructions: %s with %s", convs, bf16, layout), "channels_last alone, which keeps float32")
			s.nativeTry = map[string]string{"bf16_autocast": "true", "channels_last": "true"}
			if m, share, ok := s.frozenConvModel(); ok {
				// a distillation's teacher, called under torch.no_grad,
				// took 91% of the step's samples (pytorch/tutorials'
				// knowledge distillation on this CPU): the change on it
				// alone measured 1.81x, on both models 2.05x, and keeps
				// the student's training in float32
				lead = orTry(fmt.Sprintf("%s, most of them in the forward of %s (called at %s:%d with gradients off: %.0f%% of the busy step's samples), and this CPU has bfloat16 instructions: bf16 autocast (%s) around that call alone, its output .float(), with %s and its input in channels_last (.to(memory_format=torch.channels_last) on both): a change to its outputs' numerics only, as they train nothing; the model trained keeps float32",
					convs, m.Class, filepath.Base(m.File), m.Line, pct(share), s.autocastCall(), m.Class), fmt.Sprintf("%s with %s, which changes the trained model's numerics too", bf16, layout))
				s.nativeTry = map[string]string{"bf16_autocast": "frozen", "channels_last": "frozen"}
				ev = append(ev, Evidence{"the frozen model's share of the busy samples", pct(share), "%", "python"})
			}
		case s.cpuHasBF16():
			// the change names the program's model, as every first change
			// does where the run knows it
			if m := s.modelRef(); m != "" && s.framework() == "" {
				bf16 = "bf16 autocast (" + s.autocastCall() + " around the call of the model, " + m + ", and its loss; a change to the numerics)"
			}
			lead = fmt.Sprintf("%s, and this CPU has bfloat16 instructions: %s", convs, bf16)
			ev = append(ev, Evidence{bf16ReachLabel, pct((conv + gemm) / total), "%", "ops"})
			s.nativeTry = map[string]string{"bf16_autocast": "true"}
		default: // channels_last alone, no convolution depthwise with a stride
			if layoutPays {
				lead = orTry(fmt.Sprintf("%s: put %s (%s)", convs, layout, denseLayoutGain), s.bf16Advice())
			} else {
				lead = orTry(fmt.Sprintf("%s: try %s (it speeds up the convolutions and reorders the tensors wherever the model leaves that layout, a flatten before a Linear head: with convolutions half the native time, a small CNN ran 0.95x in it)", convs, layout), s.bf16Advice())
			}
			s.nativeTry = map[string]string{"channels_last": "true"}
			ev = append(ev, Evidence{denseLayoutReachLabel, pct(conv / total), "%", "ops"})
		}
		return orTry(orTry(lead, "torch.compile(model), which fuses the convolutions' neighbours into them"), "an accelerator"), ev, dropout, total
	case gemm/total >= dominant && sparse >= 0.5:
		return thenDo(orTry(fmt.Sprintf(sparseProductsChange, pct(gemm/total)), "an accelerator"), others(gemm)),
			[]Evidence{{matmulShareLabel, pct(gemm / total), "%", "ops"}, {sparseProductsLabel, pct(sparse), "%", "ops"}}, dropout, total
	case gemm/total >= dominant:
		ev := []Evidence{{matmulShareLabel, pct(gemm / total), "%", "ops"}}
		// no model with layers got a batch (SAC's Q-networks get 256
		// rows while its actor steps the environment on one)
		if r := s.in.Run; r != nil && !slices.ContainsFunc(r.Models, func(m rundir.ModelCall) bool { return m.Layers > 0 && !s.oneSampleLayers(m) }) {
			perStep, _, _ := s.layerCalls()
			if m, n, ok := s.itemModel(perStep); ok {
				// a model called many times a step on one sample each
				// (a seq2seq decoder once a token, one sentence pair a
				// step): its matmuls are one row each, bound by reading
				// the weight and the op's fixed cost, and bf16 autocast
				// only adds casts (pytorch/tutorials' seq2seq: 1.45x
				// slower under it)
				return thenDo(fmt.Sprintf("matmuls take %.0f%% of the native time, each on one sample's data: the model (%s) runs about %.0f times a step on one sample (its input %s), and a matmul on one row reads its whole weight for one row's work: "+
					"give each call many rows: B samples a step (mini-batches, sequences padded to the batch's longest with a mask), the model called once a time step on all B (pytorch/tutorials' seq2seq with attention, 7 tokens a side: 9.7 ms a pair one pair a step, 0.86 ms in steps of 16 pairs, on a CPU)",
					pct(gemm/total), modelCallRef(*m), n, shapeText(m.Input)), others(gemm)), ev, dropout, total
			}
		}
		_, oneSample := s.oneSampleSteps()
		if call := gemmCallWeighted / gemm * s.windowRunning(); call >= largeGEMMUs && !oneSample {
			// large matmuls already run near the CPU's speed: a batch
			// twice as large gains them nothing per sample (a 2-layer
			// BERT under the Hugging Face Trainer, matmul calls of ~0.7
			// ms: 139-145 ms for 32 sequences against 67.5-77.3 ms for
			// 16)
			ev = append(ev, Evidence{largeGEMMLabel, call / 1000, "ms", "ops"})
			bf16 := s.bf16Advice()
			if s.cpuHasBF16() && s.layeredModelCalled() {
				// the agent's bf16_autocast makes it (lucidrains' ViT,
				// calls of 7.5 ms: 2.18x, against 1.52x predicted; the
				// planted mha_weights.py, calls of 2 ms: 2.40x, where
				// need_weights=False gained 1.11x), around the program's
				// call of its model, as the convolutions' change names
				// it; not where no model with layers was called (a
				// forward-forward network calls Layer.forward directly,
				// and only a ReLU's call was seen)
				if m := s.modelRef(); m != "" && s.framework() == "" {
					bf16 = "bf16 autocast (" + s.autocastCall() + " around the call of the model, " + m + ", and its loss): this CPU has bfloat16 instructions (try it: small layers can get slower)"
				}
				s.nativeTry = map[string]string{"bf16_autocast": "true"}
			}
			rest := others(gemm)
			if bf16 == "" && rest != "" {
				ev = append(ev, Evidence{fusableShareLabel, pct(fusable), "%", "ops"})
			}
			return thenDo(orTry(joinColon(fmt.Sprintf("matmuls take %.0f%% of the native time in calls of %s on average, already near this CPU's speed in oneDNN/MKL (a larger batch gains them nothing per sample)", pct(gemm/total), units.Duration(call)),
				bf16), "an accelerator"), rest), ev, dropout, total
		}
		// The promise is from all of the native time, and too high where
		// the calls are near largeGEMMUs: karpathy/nanoGPT's CPU
		// configuration from its README (4 layers of 128, batch 12 x 64;
		// matmuls 62% of the native time, calls of 0.48 ms) was promised
		// 45% and measured 1.14-1.22x per sample at batch 24, 1.14-1.24x
		// compiled, 0.9-1.1x under bf16 autocast. A reach of the matmuls'
		// time short of largeGEMMUs a call plus the ops compile fuses
		// promised 20%, but the verdict ranks the classes by the same
		// saving: a DDP rank slowed by extra 256 x 256 matmuls (58% native,
		// 30% waiting in all_reduce on 2 CPUs) became communication-bound
		// (docs/diagnosis.md, cpu.native)
		bf16 := s.bf16Advice()
		if oneSample {
			bf16 = "" // one-row matmuls only gain casts (the seq2seq above)
		}
		return thenDo(orTry(orTry(fmt.Sprintf("matmuls take %.0f%% of the native time and already run in oneDNN/MKL: fewer or larger matmuls (batching)", pct(gemm/total)),
			bf16), "an accelerator"), others(gemm)), ev, dropout, total
	case rnn/total >= dominant && rnnPerStep >= float64(s.p.MinRNNCalls):
		// a loop feeding the layer one time step per call: each call
		// projects one step's input and cannot batch the steps' input
		// matmuls (50 steps of a 128-unit LSTM, batch 32, forward and
		// backward: 19.0 ms looped, 3.96 ms in one call, on this CPU)
		return thenDo(fmt.Sprintf("recurrent layers (LSTM/GRU/RNN) take %.0f%% of the native time, called %.0f times a step: a loop that feeds a layer one time step per call (out, h = lstm(x[:, t:t+1], h)) runs each step's input projection and recurrence apart: "+
				"when the inputs are known up front (the batch's sequence, teacher forcing), call it once on the whole sequence (out, h = lstm(x)), measured 4.8x faster for 50 steps; "+
				"a loop whose next input is its last output (decoding) must stay, under torch.inference_mode() when nothing is trained", pct(rnn/total), rnnPerStep), others(rnn)),
			[]Evidence{{rnnShareLabel, pct(rnn / total), "%", "ops"}, {rnnCallsLabel, rnnPerStep, "", "ops"}}, dropout, total
	case rnn/total >= dominant:
		// the time steps run one after another inside oneDNN's RNN
		// primitive; torch.compile leaves nn.LSTM as it is (a 2-layer
		// LSTM, 256 hidden, 32 x 100 steps, on an AMX CPU: 105 ms a
		// step, 46 ms under bf16 autocast, 80 ms compiled; a batch twice
		// as wide took twice as long, so no per-sample gain there). Nor
		// do shorter sequences gain: they do less work a step at a
		// higher cost per token (pytorch/examples' word language model,
		// 2-layer LSTM of 200, batch 20, on an AVX512-BF16 CPU: 112 us a
		// token at 35 steps, 161 at 10; batch 80: 124; bf16 autocast
		// 0.93x-1.45x the speed, by shape)
		wider := "a wider batch or shorter sequences do not"
		if _, one := s.oneSampleTraining(); one {
			// from one sample a step, a batch does (the lead)
			wider = "shorter sequences do not"
		}
		ev := []Evidence{{rnnShareLabel, pct(rnn / total), "%", "ops"}}
		bf16, rest := s.bf16Advice(), others(rnn)
		if bf16 == "" && rest != "" {
			ev = append(ev, Evidence{fusableShareLabel, pct(fusable), "%", "ops"})
		}
		return thenDo(orTry(fmt.Sprintf("recurrent layers (LSTM/GRU/RNN) take %.0f%% of the native time and already run as oneDNN's fused RNN, one time step after another, "+
			"where %s lower the time per sample: an accelerator runs them as cuDNN's RNN", pct(rnn/total), wider),
			bf16), rest), ev, dropout, total
	case random/total >= dominant:
		// synthetic inputs or noise drawn every step: a CPU draws random
		// numbers slowly (a 4096 x 1024 torch.randn: 11-15 ms here, more
		// than the two-layer MLP it fed), and torch.compile does not
		// touch the draws made outside the model
		return orTry(fmt.Sprintf("drawing random numbers (torch.randn/rand/randint/randn_like: aten::normal_, uniform_, random_) takes %.0f%% of the native time: make synthetic inputs once before the loop and reuse them", pct(random/total)),
				"draw fresh noise in DataLoader workers (overlapped with the step) or on the accelerator"),
			[]Evidence{{randomShareLabel, pct(random / total), "%", "ops"}}, dropout, total
	case index/total >= dominant:
		change, ev := indexChange(index/total, aggregate/total, indexBackward/total)
		return thenDo(change, others(index)), ev, dropout, total
	case (conv+gemm)/total >= dominant && s.largeDenseBF16(denseCall):
		// Neither family leads alone, both in large calls: the time is
		// dense products all the same, and torch.compile leaves them to
		// the same oneDNN/MKL calls. thuml's Autoformer (ETTh1, d_model
		// 512; its feed-forward is Conv1d with kernel 1: matmuls 30%,
		// convolutions 23%, calls of 10-33 ms) was told torch.compile
		// (17%): compiled it ran 0.90x, under bf16 autocast 1.54x.
		bf16 := "bf16 autocast (" + s.autocastCall() + ", a change to the numerics)"
		if m := s.modelRef(); m != "" && s.framework() == "" {
			bf16 = "bf16 autocast (" + s.autocastCall() + " around the call of the model, " + m + ", and its loss; a change to the numerics)"
		}
		s.nativeTry = map[string]string{"bf16_autocast": "true"}
		return thenDo(orTry(fmt.Sprintf("matmuls (%.0f%%) and convolutions (%.0f%%) take %.0f%% of the native time together, in calls of %s on average, already near this CPU's float32 speed in oneDNN/MKL, and this CPU has bfloat16 instructions: %s",
				pct(gemm/total), pct(conv/total), pct((conv+gemm)/total), units.Duration(denseCall), bf16), "an accelerator"), others(conv+gemm)),
			[]Evidence{{bf16ReachLabel, pct((conv + gemm) / total), "%", "ops"}}, dropout, total
	case sorts/total >= dominant:
		// a full sort to take the first k of each row (retrieval, top-k
		// sampling, hard-negative mining): the top 10 of 32 rows of 200k
		// scores took 690 ms through argsort here, 20 ms through topk
		return thenDo(fmt.Sprintf("sorting (aten::sort: torch.sort, argsort, msort) takes %.0f%% of the native time: where only the first k of each sorted row are used (argsort(...)[:, :k]), torch.topk(x, k) selects them without sorting the rest (the top 10 of 32 rows of 200k scores on the project's test CPU: 690 ms through argsort, 20 ms through topk); for one rank or quantile, torch.kthvalue or torch.quantile", pct(sorts/total)), others(sorts)),
			[]Evidence{{sortShareLabel, pct(sorts / total), "%", "ops"}}, dropout, total
	}
	// the largest ops say what the time is in: a 32k-token output layer's
	// matmuls and log_softmax, or many small ops
	return orTry(fmt.Sprintf("no op family dominates the native time (largest: %s): %s", largest(all, 3), s.compileChange("its elementwise, normalization and softmax ops and the many small ones")), "an accelerator"),
		[]Evidence{{fusableShareLabel, pct(fusable), "%", "ops"}}, dropout, total
}

// largeDenseBF16: the matmuls and convolutions, calls of callUs on
// average, are large (largeGEMMUs), on a CPU with bfloat16 instructions,
// in a model with layers fed more than one sample, none of its
// convolutions strided depthwise (slower under bf16: cpuFamilyChange):
// bf16 autocast shortens them.
func (s *state) largeDenseBF16(callUs float64) bool {
	if callUs < largeGEMMUs || !s.cpuHasBF16() || !s.layeredModelCalled() {
		return false
	}
	_, oneSample := s.oneSampleSteps()
	_, _, strided := s.depthwise()
	return !oneSample && strided == 0
}

// bf16ReachLabel is the evidence of the native time bf16 autocast alone
// shortens where convolutions lead: theirs and the matmuls'. The rest
// stays in float32 or gains little: pytorch/examples' mnist CNN
// (convolutions 52% of the native time) was promised 42% from all of it
// and measured 1.36x (27%); a diffusers UNet2DModel (DDPM on 32 x 32
// images, convolutions 46%) was promised 48% and measured 1.27x (21%).
// With channels_last too the layout speeds up the rest: ResNet-18
// (convolutions 81%), promised 49% from all of it, measured 2.15x.
const bf16ReachLabel = "convolution and matmul ops' share of native op time (what bf16 autocast alone shortens)"

// denseReachLabel is bf16ReachLabel where the model has depthwise
// convolutions, which bf16 autocast does not shorten on a CPU.
const denseReachLabel = "non-depthwise convolution and matmul ops' share of native op time (what bf16 autocast shortens; the depthwise ones' time taken as their share of the model's convolutions)"

// depthwiseNoBF16 closes the change for strided depthwise convolutions,
// worded so that no knob reads it as asking for bf16 autocast (a
// program's --amp --amp-dtype bfloat16 was named for it).
const depthwiseNoBF16 = "leave autocast to bfloat16 off: it makes such convolutions' backward several times slower on a CPU"

// layoutReachLabel is the evidence of the native time channels_last
// shortens where it leads alone: the convolutions' (the
// MobileNetV3-Small above, convolutions 70% of the native time: 1.25x).
const layoutReachLabel = "convolution ops' share of native op time (what channels_last shortens)"

// layoutCut is the part of the convolutions' time channels_last takes
// out where it leads alone (strided depthwise convolutions): it about
// halves the depthwise ones' and shortens the others little. Per op, a
// training step on this AVX512-BF16 CPU (batch 16 of 128 x 128): the
// depthwise convolutions' time 0.47-0.56x, the others' 0.77-0.94x, all
// of them 0.65x, 0.74x and 0.65x in torchvision's MobileNetV3-Small and
// EfficientNet-B0 and timm's GhostNet; at the rule's Factor (half) they
// were promised 33%, 30% (two programs on the first) and 29% and measured
// 10-28%, 17-19% and 13% (GhostNet's other ops got slower).
const layoutCut = 0.3

// denseLayoutReachLabel is layoutReachLabel where channels_last leads
// alone and no convolution is depthwise with a stride.
const denseLayoutReachLabel = "convolution ops' share of native op time (what channels_last shortens: little, none of them depthwise with a stride)"

// denseLayoutCut is the part of dense convolutions' time channels_last
// takes out: oneDNN already runs them in the default layout
// (aten::mkldnn_convolution), and the layout saves its reorders only.
// Training steps, the whole model in channels_last, medians of
// interleaved rounds: torchvision's ResNet-18 (convolutions ~80% of the
// native time) 1.19x on an AVX512-BF16 CPU and 1.02x, 1.13x on an AVX2
// AMD EPYC; pytorch/examples' DCGAN (90%) 1.0x there (`run --verify`,
// promised 1.98x from all its native time at the rule's Factor, and
// 0.97-1.04x by hand); its mnist CNN (52%) 0.95x.
const denseLayoutCut = 0.1

// denseLayoutGain is what the change says channels_last measured on dense
// convolutions (denseLayoutCut).
const denseLayoutGain = "dense convolutions gain little from it: ResNet-18 and a DCGAN measured 1.0-1.19x"

// fusableShareLabel is the evidence of the native time torch.compile can
// shorten where no op family dominates it (nativeReach).
const fusableShareLabel = "ops other than matmuls, convolutions, recurrent layers and dropout's masks: share of native op time"

// nativeReach is the part of the CPU's native time the cpu.native change
// can shorten: where no op family dominates and torch.compile leads, the
// ops other than matmuls, convolutions and recurrent layers (karpathy's
// makemore, 80% native, was promised 40% from the native time at half
// its cost and measured 21% compiled; a 2-layer BERT under the Hugging
// Face Trainer, 92% native, was promised 49% and measured no change);
// where large matmuls lead with bf16 autocast, the matmuls; else all of
// it, and all of it where a change to every op leads (more threads,
// float32, autocast left off).
func (s *state) nativeReach() float64 {
	if _, ok := s.moreThreads(); ok {
		return 1
	}
	if c, _, _ := s.float64Change(false); c != "" {
		return s.dtypeReach()
	}
	if c, _ := s.emulatedAutocast(); c != "" {
		return 1
	}
	_, ev, dropout, total := s.cpuFamilyChange()
	if s.dropoutLeads(dropout, total) || s.trainModeInference(dropout, total) {
		// the masks go (model.eval() leads, planted eval_train_mode.py:
		// dropout 59% of the native time, saving read 8% from the fusable
		// share and ranked under the page faults' 20% on a loaded machine)
		return dropout / total
	}
	if _, e, ok := s.sliceBackwardChange(total); ok {
		// its change leads the op families': the zero fills and adds go
		return e.Value / 100 * sliceCut / rule("cpu.native").Factor
	}
	for _, e := range ev {
		switch e.What {
		case fusableShareLabel, bf16ReachLabel, denseReachLabel:
			return e.Value / 100
		case layoutReachLabel:
			// the reach at the rule's Factor that takes out layoutCut
			return e.Value / 100 * layoutCut / rule("cpu.native").Factor
		case denseLayoutReachLabel:
			return e.Value / 100 * denseLayoutCut / rule("cpu.native").Factor
		case largeGEMMLabel:
			if s.bf16Advice() == "" {
				continue // torch.compile on the rest (fusableShareLabel), if anything
			}
			// bf16 autocast leads: it reaches the matmuls (the BERT
			// above, matmuls 51%: 1.1x, against 46% saved promised)
			for _, m := range ev {
				if m.What == matmulShareLabel {
					return m.Value / 100
				}
			}
		}
	}
	return 1
}

// dtypeReach is the part of the native time float32 shortens: the op
// rows' host self time beyond OpFixedUs a call, which an op costs
// whatever its dtype (view ops, which do no work, took 0.6-1.4 µs of
// self time each in the trace below). pytorch/examples'
// time_sequence_prediction (float64 LSTM cells of 97 x 51 in a loop over
// 999 time steps, LBFGS: 98% native, 2.1M ops in 12 s) was promised
// 1.96x from the whole native time and measured 1.52x in float32 (3
// steps: 109.8 -> 72.4 s); 73% of it is beyond 2 µs a call: 1.56x.
func (s *state) dtypeReach() float64 {
	t := s.in.Ops
	if t == nil {
		return 1
	}
	var self, fixed float64
	for _, r := range t.Ranked() {
		if isAnnotation(r) || r.Calls <= 0 {
			continue
		}
		self += r.HostSelfUs
		fixed += min(r.HostSelfUs, float64(r.Calls)*s.p.OpFixedUs)
	}
	if self <= 0 {
		return 1
	}
	return 1 - fixed/self
}

// sparseProductsChange: the matmuls multiply a sparse tensor (a graph's
// adjacency, bag-of-words features). pytorch/examples' GCN (2,708 nodes,
// sparse COO features and adjacency) on this project's CPU was told
// "fewer or larger matmuls (batching)" or bf16 autocast, 46% saved: it
// trains on the whole graph each step, nothing to batch, and bf16 does
// not reach torch's sparse kernels. Its products forward and backward
// took 2.5 ms in COO, 3.4 ms in CSR, 5.8 ms with the features dense:
// no layout is advised, and no saving is promised (sparseProducts).
const sparseProductsChange = "matmuls take %.0f%% of the native time, most of it products of a sparse tensor (torch.mm / torch.spmm on a sparse COO or CSR tensor: aten::_sparse_addmm): the model's own work over its sparse inputs (a graph's edges, sparse features), which batching, bf16 autocast and torch.compile leave as it is, and which took longer in CSR or dense here than in COO: fewer features or a smaller hidden size shrink it"

// sparseProductsLabel is cpu.native's evidence when its change is
// sparseProductsChange, which promises no saving.
const sparseProductsLabel = "sparse products' share of matmul time"

// sparseProductsShare is the share of the matmul time (gemmUs, self time)
// in products with a sparse operand, by the host total of torch's sparse
// matmul ops (their dense addmm runs inside them).
func (s *state) sparseProductsShare(gemmUs float64) float64 {
	t := s.in.Ops
	if t == nil || gemmUs <= 0 {
		return 0
	}
	var us float64
	for _, r := range t.Ranked() {
		if r.Name == "aten::_sparse_addmm" || r.Name == "aten::_sparse_csr_mm" {
			us += r.HostTotalUs
		}
	}
	return min(1, us/gemmUs)
}

// indexChange: gathers and scatters by a tensor of indices (graph message
// passing, lookups, x[idx]) move memory more than they compute, and
// torch.compile(model) does little for them. Two rewrites pay on a CPU
// (a 20k-node, 200k-edge graph, 64 features, forward and backward here):
// x[idx] has a slow backward (IndexBackward0: index_put_ with accumulate)
// where x.index_select(0, idx) has index_add_ (gather alone 127 -> 87 ms;
// with the scatter after it 163 -> 75 ms); and a gather followed by a
// scatter-add is a sparse matmul (CSR adjacency @ x: 29 ms).
func indexChange(share, aggregate, backward float64) (string, []Evidence) {
	change := fmt.Sprintf("gathers and scatters by a tensor of indices (aten::index, index_select, index_add_, scatter_add_, index_put_) take %.0f%% of the native time: they move memory more than they compute, and torch.compile does little for them", pct(share))
	ev := []Evidence{{"gather and scatter ops' share of native op time", pct(share), "%", "ops"}}
	if backward >= minIndexBackward {
		change = thenDo(change, fmt.Sprintf("the backward of x[idx] (IndexBackward0: index_put_ with accumulate, %.0f%% of the native time) is the slowest of them: x.index_select(0, idx) gives the same values with an index_add_ backward (a 200k-row gather on the project's test CPU: 1.5x faster forward and backward, 2.2x with the scatter after it)", pct(backward)))
		ev = append(ev, Evidence{"x[idx] backward's share of native op time", pct(backward), "%", "ops"})
	}
	if aggregate >= minAggregate {
		change = thenDo(change, "a gather followed by a sum into rows (out.index_add_(0, dst, x[src]), scatter_add_: message passing over a graph) is one sparse matmul: build A = torch.sparse_coo_tensor(torch.stack([dst, src]), weights, (n, n)).to_sparse_csr() once and compute A @ x (a 200k-edge graph on the project's test CPU: 5.7x faster forward and backward)")
		change = orTry(change, "PyTorch Geometric's fused SparseTensor/CSR message passing")
	}
	return change, ev
}

// minIndexBackward and minAggregate: the shares of the native time from
// which indexChange names x[idx]'s backward and the sparse matmul (the
// sum into rows is the smaller part of message passing: 9% of the native
// time beside 82% in all gathers and scatters, in the graph above).
const minIndexBackward, minAggregate = 0.15, 0.05

// cpuHasBF16: the run's CPU runs bfloat16 in hardware, as far as known.
func (s *state) cpuHasBF16() bool {
	native, known := s.runEnv().ReducedPrecision("bfloat16")
	return native && known
}

func (s *state) runEnv() *runevidence.Env {
	if s.in.Run != nil {
		return s.in.Run.Env
	}
	return nil
}

// largeGEMMUs is the mean time of a matmul call (µs on a CPU, running)
// from which batching is not advised: the matmuls are large enough. The
// evidence that says so (largeGEMMLabel) follows the matmuls' share.
const (
	largeGEMMUs      = 500
	largeGEMMLabel   = "matmul call, mean self time (weighted by time)"
	rnnShareLabel    = "recurrent ops' share of native op time"
	rnnCallsLabel    = "recurrent layer calls per step"
	matmulShareLabel = "matmul ops' share of native op time"
	convShareLabel   = "convolution ops' share of native op time"
)

// joinColon joins a statement and the change it leads to ("" none).
func joinColon(what, change string) string {
	if change == "" {
		return what
	}
	return what + ": " + change
}

// windowRunning is the share of the recorded window the main thread ran
// rather than waited for a CPU (1 when not measured).
func (s *state) windowRunning() float64 {
	if cw := s.cpuWait(); cw != nil {
		return running(cw.Window)
	}
	return 1
}

// convLayoutShare is the convolutions' share of the native time from which
// channels_last is advised outright (cpuFamilyChange): below it, the
// reorders around the other ops can cost what the convolutions gain.
const convLayoutShare = 0.7

// bf16Advice suggests bf16 autocast where the CPU runs bfloat16 in
// hardware or may (unknown), never where it would be emulated.
func (s *state) bf16Advice() string {
	if _, _, strided := s.depthwise(); strided > 0 {
		return "" // cpuFamilyChange's convolutions: slower under it
	}
	switch native, known := s.runEnv().ReducedPrecision("bfloat16"); {
	// an experiment: a small CPU transformer's step got ~20% slower under
	// it (its backward lost more than its forward gained) where a CNN's
	// halved (this AVX512-BF16 CPU: 0.53x)
	case !known:
		return "bf16 autocast (" + s.autocastCall() + ") on CPUs with AVX512-BF16/AMX: half the bytes per value (try it: small layers can get slower)"
	case native:
		return "bf16 autocast (" + s.autocastCall() + "): this CPU has bfloat16 instructions (try it: small layers can get slower)"
	}
	return ""
}

// autocastCall is how the program turns on bf16 autocast on the CPU: its
// framework's switch where a framework runs the steps.
func (s *state) autocastCall() string {
	switch s.framework() {
	case "transformers":
		return "TrainingArguments(bf16=True)"
	case "lightning":
		return "Trainer(precision=\"bf16-mixed\")"
	}
	return "torch.autocast(\"cpu\", dtype=torch.bfloat16)"
}

// framework is the framework whose phases the run recorded
// (transformers, lightning), "" none.
func (s *state) framework() string {
	if r := s.in.Run; r != nil && r.Phases != nil {
		return r.Phases.Framework
	}
	return ""
}

// emulatedAutocast: the compute ran under autocast to bfloat16 or
// float16 on a CPU without that dtype in hardware, where oneDNN emulates
// it, often many times slower than float32 (measured here: a
// 256x512x1024 matmul 270 ms in bfloat16, 18 ms in float32 on AVX2).
// The backward of an autocast forward runs in its dtype too, outside the
// block: a fifth of the samples under it is enough (a forward is about a
// third of a training step). It returns the change and its evidence (""
// when not so).
func (s *state) emulatedAutocast() (string, []Evidence) {
	const minShare = 0.2
	if s.py == nil || s.py.CPUAutocast == nil || s.py.CPUAutocast.Share < minShare || s.in.Run == nil {
		return "", nil
	}
	a := s.py.CPUAutocast
	native, known := s.in.Run.Env.ReducedPrecision(a.DType)
	if !known || native {
		return "", nil
	}
	ev := []Evidence{{fmt.Sprintf("main-thread samples under autocast to %s on the CPU", a.DType), pct(a.Share), "%", "pyprofile"}}
	features := strings.Join(s.in.Run.Env.CPUFeatures, ", ")
	if features == "" {
		features = "none of those bottleneck reads"
	}
	return fmt.Sprintf("the ops run under torch.autocast to %s on the CPU (%s:%d), and this CPU has no %s instructions (its features: %s): oneDNN emulates them, often far slower than float32: leave autocast off on this machine (keep it for accelerators and CPUs with AVX512-BF16/AMX)",
		a.DType, filepath.Base(a.File), a.Line, a.DType, features), ev
}

// cpuGEMMOps are op-name fragments (lower case) of matrix products.
var cpuGEMMOps = []string{"::mm", "addmm", "bmm", "matmul", "::linear", "_mkldnn_linear"}

// cpuRandomOps are the ops that draw random numbers (lower case), but
// dropout's masks (cpuDropoutOps), which have their own change.
var cpuRandomOps = []string{"::normal", "::uniform", "::random_", "::randperm", "::multinomial", "::exponential", "::randn", "::rand"}

// isRNNCall: an op row (lower case) that is one call of a recurrent layer
// or cell (aten::lstm, gru, rnn_tanh, rnn_relu and their _cell forms): a
// few layers make a few calls a step, a loop over the time steps one per
// time step.
func isRNNCall(n string) bool {
	n = strings.TrimSuffix(n, "_cell")
	return n == "aten::lstm" || n == "aten::gru" || n == "aten::rnn_tanh" || n == "aten::rnn_relu"
}

// cpuRNNOps are the recurrent layers' op names (lower case): aten::lstm,
// aten::gru, aten::rnn_tanh, the oneDNN layer (mkldnn_rnn_layer and its
// backward) and the per-step cells (_thnn_fused_lstm_cell, gru_cell).
var cpuRNNOps = []string{"lstm", "::gru", "gru_cell", "rnn_tanh", "rnn_relu", "mkldnn_rnn"}

// cpuIndexOps are the gathers and scatters by index (lower case);
// cpuAggregateOps those of them that sum into rows.
var (
	cpuIndexOps     = []string{"::index", "_index_put", "scatter", "gather", "::take"}
	cpuSortOps      = []string{"aten::sort", "aten::argsort", "aten::msort"}
	cpuAggregateOps = []string{"index_add", "scatter_add", "scatter_reduce", "index_reduce", "::scatter_"}
)

// isAnnotation: the row is a record_function range (the program's own, a
// step's, the DataLoader's, the optimizer's), not an op: its self time is
// the Python between the ops inside it. Names tell them apart in traces
// that file such ranges as ops.
func isAnnotation(r rowT) bool {
	name := r.Name
	return r.Annotation || strings.HasPrefix(name, "ProfilerStep") || strings.HasPrefix(name, "enumerate(DataLoader)") ||
		strings.HasPrefix(name, "Optimizer.") || strings.HasPrefix(name, "##") || strings.Contains(name, "#") && !strings.HasPrefix(name, "aten::")
}

// cpuUpdateFix is the fix for an update that runs one parameter at a
// time on a CPU.
func (s *state) cpuUpdateFix(r regions.Region) string {
	if !fusedOnCPU[optimizerClass(r.Name)] {
		return foreachUpdate
	}
	if v, old := s.torchBefore(2, 4); old {
		return oldTorchFused(v)
	}
	return "fused=True (Adam, AdamW, SGD, Adagrad; on CPU in torch 2.4 and later), not foreach=True, which is slower on a CPU for SGD and Adagrad"
}

// oldTorchFused is the fused update's change for a run whose torch
// predates fused CPU optimizers: there fused=True raises on CPU
// parameters ("requires all the params to be ... of supported devices").
func oldTorchFused(version string) string {
	return "fused=True runs it as a few ops in all, on a CPU from torch 2.4 (this run has " + version + ", where fused=True raises on CPU parameters): upgrade torch, then fused=True"
}

// torchBefore reports whether the run's torch is known to be older than
// major.minor, and its version.
func (s *state) torchBefore(major, minor int) (string, bool) {
	e := s.runEnv()
	if e == nil {
		return "", false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(e.Torch, "%d.%d", &ma, &mi); err != nil {
		return "", false
	}
	return e.Torch, ma < major || ma == major && mi < minor
}

// optimizerStep is the first optimizer step region that takes at least
// OptimizerShare of the step, and its time per step.
func (s *state) optimizerStep() (regions.Region, float64, bool) {
	if s.in.Regions == nil || s.steps == 0 {
		return regions.Region{}, 0, false
	}
	for _, r := range s.in.Regions.Regions {
		if !strings.HasPrefix(r.Name, "Optimizer.step#") {
			continue
		}
		// with a closure the region holds forward and backward: its time
		// is not the update's, and foreach/fused would not touch it; the
		// update is what follows the closure, where the trace tells it
		// (Lightning's automatic optimization on a CPU)
		// The median call, where the trace tells it: a start-up call or a
		// step a busy machine slowed, which the window check leaves out of
		// the step, raised the mean (two such calls of 150 ms among a
		// dozen of 2 ms made Adam's update "78% of the step").
		call := r.TotalUs / float64(max(r.Calls, 1))
		if r.Closure {
			call = r.UpdateUs / float64(max(r.Calls, 1))
		}
		if r.MedianUs > 0 {
			call = r.MedianUs
		}
		// per step: an optimizer that steps once every N recorded steps
		// (a policy updated once per episode, a step source finer than
		// the update) costs a step 1/N of its call
		per := call * float64(r.Calls) / float64(max(r.Calls, s.recordedSteps(), 1))
		if call > 0 && per/s.step >= s.p.OptimizerShare {
			return r, per, true
		}
	}
	return regions.Region{}, 0, false
}

// embeddingTable is an optimizer's largest parameter, a 2-D one with a
// dense gradient, its share of the optimizer's elements, and the share of
// its rows with a gradient at the first step (-1: not measured).
type embeddingTable struct {
	shape   []int64
	numel   int64
	share   float64
	touched float64
}

// embeddingTable finds, in the run's evidence, the optimizer whose step
// region is region ("Optimizer.step#Adam.step": class Adam) and its
// largest parameter when that is 2-D with a dense gradient; known is
// false when the evidence does not say (a trace alone, an older agent).
func (s *state) embeddingTable(region string) (embeddingTable, bool) {
	o := s.runOptimizer(region)
	if o == nil || o.Numel <= 0 || len(o.Largest) == 0 {
		return embeddingTable{}, false
	}
	p := o.Largest[0]
	if len(p.Shape) != 2 || p.SparseGrad {
		return embeddingTable{}, true
	}
	touched := -1.0
	if p.GradRows != nil && p.Shape[0] > 0 {
		touched = float64(*p.GradRows) / float64(p.Shape[0])
	}
	return embeddingTable{p.Shape, o.Numel, float64(p.Numel) / float64(o.Numel), touched}, true
}

// runOptimizer is the run's record of the optimizer whose step region is
// region ("Optimizer.step#Adam.step": class Adam), nil without one.
func (s *state) runOptimizer(region string) *rundir.Optimizer {
	class := optimizerClass(region)
	if s.in.Run == nil {
		return nil
	}
	for i, o := range s.in.Run.Optimizers {
		if o.Class == class {
			return &s.in.Run.Optimizers[i]
		}
	}
	return nil
}

// pythonInModules estimates the share of the step spent in nn.Module
// calls' Python: the samples inside module calls cover the modules'
// Python and their native ops, so their share of the busy step (Python
// between ops plus native ops) less the native ops' share (all of it,
// though the loss and the optimizer run outside modules: an underestimate).
func (s *state) pythonInModules() float64 {
	if s.py == nil {
		return 0
	}
	return max(0, s.py.ModuleShare*(s.share[Host]+s.share[CPUCompute])-s.share[CPUCompute])
}

// blockedChange fits the change to what the line waited in ("" : the
// rule's own, for a sleep or another C call).
func blockedChange(l runevidence.Line) string {
	at := fmt.Sprintf("%s:%d", filepath.Base(l.File), l.Line)
	switch in := strings.ToLower(l.In); {
	case classify.ContainsAny(in, []string{"condition.wait", "event.wait", "queue.get", "thread.join", "wait_for_tstate_lock", "semaphore.acquire", "barrier.wait"}):
		return orTry(fmt.Sprintf("the step waits at %s for another thread (%s): that thread is the limit (see its line in the threads table): give it more workers or less to do", at, l.In), "let the step go on while it works")
	case classify.ContainsAny(in, []string{"socket", "recv", "readinto", "ssl", "connect", "getaddrinfo", "urlopen", "request"}):
		return orTry(fmt.Sprintf("the step waits at %s for the network (%s): send from a background thread through a queue (most logging clients have an asynchronous mode)", at, l.In), "send every N steps")
	case classify.ContainsAny(in, []string{"popen", "communicate", "subprocess"}):
		return orTry(fmt.Sprintf("the step waits at %s for a subprocess (%s): start it without waiting (Popen, and poll() later)", at, l.In), "run it every N steps")
	}
	return ""
}

// blocked returns the share of the step the main thread spent blocked
// off the CPU at the program's lines (the Python profile's share, at most
// the step's time between ops; 0 below MinFinding or without a profile),
// the blocked lines that are not CUDA sync sites (a .item() waiting for
// the device is sync.blocking's), and the share of the samples they hold.
func (s *state) blocked() (float64, []runevidence.Line, float64) {
	lines, all := s.blockedLines()
	if all < s.p.MinFinding || len(lines) == 0 {
		return 0, lines, all
	}
	return min(all, s.share[Host]+s.share[Launch]+s.share[Unexplained]), lines, all
}

func (s *state) blockedLines() ([]runevidence.Line, float64) {
	if s.py == nil {
		return nil, 0
	}
	lines, share := s.py.Blocked, s.py.BlockedShare
	if r := s.in.Run; r != nil && len(r.SyncSites) > 0 {
		lines = slices.DeleteFunc(slices.Clone(lines), func(l runevidence.Line) bool {
			sync := slices.ContainsFunc(r.SyncSites, func(ss runevidence.SyncSite) bool { return ss.File == l.File && ss.Line == l.Line })
			if sync {
				share -= l.Pct / 100
			}
			return sync
		})
	}
	return lines, max(share, 0)
}

// validationPhase tells the framework phases of validation and
// evaluation (Lightning: validation_step, val_next, on_validation_*,
// the evaluation loop; the Trainer: evaluate) from the training ones.
func validationPhase(name string) bool {
	return classify.ContainsAny(strings.ToLower(name), []string{"validation", "val_next", "_evaluationloop", "evaluat"})
}

// validationTime is the framework phases' validation and evaluation
// self time, the part of it loading batches, and the training steps.
func validationTime(fp *rundir.FrameworkPhases) (valS, loadS float64, steps int) {
	for _, ph := range fp.Phases {
		switch n := strings.ToLower(ph.Name); {
		case validationPhase(n):
			valS += ph.SelfS
			if strings.Contains(n, "val_next") {
				loadS += ph.SelfS
			}
		case strings.HasSuffix(n, "training_step"):
			steps = max(steps, ph.Calls)
		}
	}
	return valS, loadS, steps
}

// checkpointTime is the framework phases' checkpoint saving self time and
// the saves.
func checkpointTime(fp *rundir.FrameworkPhases) (float64, int) {
	var t float64
	n := 0
	for _, ph := range fp.Phases {
		if ph.Name == "save_checkpoint" { // not the on_save_checkpoint hooks inside it
			t += ph.SelfS
			n += ph.Calls
		}
	}
	return t, n
}

// denseEmbeddingOps are the backward ops of nn.Embedding/EmbeddingBag
// with sparse=False: they build a gradient the size of the whole table.
var denseEmbeddingOps = []string{"embedding_dense_backward", "embedding_bag_dense_backward"}

// denseEmbeddingBackward returns the time per step of the dense embedding
// backward ops (device time on a device, host time on a CPU) and their rows.
func (s *state) denseEmbeddingBackward() (float64, []Location) {
	t := s.in.Ops
	if t == nil {
		return 0, nil
	}
	var us float64
	var where []Location
	for _, r := range t.Ranked() {
		if !classify.ContainsAny(r.Name, denseEmbeddingOps) {
			continue
		}
		v := r.HostTotalUs
		if s.device {
			v = r.DeviceTotalUs
		}
		us += v / float64(s.steps)
		where = append(where, Location{Kind: "op", Name: r.Name, Note: fmt.Sprintf("%d calls, %s per step", r.Calls, units.Duration(v/float64(s.steps)))})
	}
	return us, where
}

// unfusedAttention: attention computed as softmax(q @ k.T) @ v: softmax
// and batched-matmul rows in the operator table and no fused attention
// op. It returns their device self time (host self time on a CPU, where
// the softmax's backward rows count too: the forward's row can fall out
// of the table's top rows) and the rows; 0 when a fused op runs, either
// kind is missing, or the softmax's scores came from a nonlinearity more
// often than from a matmul (graph or additive attention, which no fused
// attention call computes: optable.ScoreSources).
func (s *state) unfusedAttention(cpu bool) (float64, []Location) {
	t := s.in.Ops
	if t == nil || t.Scores.Nonlinear > t.Scores.Product {
		return 0, nil
	}
	var softmax, bmm float64
	var where []Location
	for _, r := range t.Ranked() {
		n := strings.ToLower(r.Name)
		v, what := r.DeviceSelfUs, "device"
		if cpu {
			v, what = r.HostSelfUs, "host self"
		}
		switch {
		case classify.ContainsAny(n, fusedAttention):
			return 0, nil
		case strings.Contains(n, "softmax") && !strings.Contains(n, "log_softmax") && (cpu || !strings.Contains(n, "backward")):
			softmax += v
		case n == "aten::bmm" || n == "aten::baddbmm":
			bmm += v
		default:
			continue
		}
		where = append(where, Location{Kind: "op", Name: r.Name, Note: fmt.Sprintf("%d calls, %s %s", r.Calls, what, units.Duration(v))})
	}
	if softmax <= 0 || bmm <= 0 {
		return 0, nil
	}
	return softmax + bmm, where
}

// copies lists memcpy directions and whether pageable host memory is used.
// copies lists the copy kinds by time; pageable: some host memory is
// pageable; dtod: device-to-device copies take most of the copy time.
func (s *state) copies() (where []Location, pageable, dtod bool) {
	g := s.in.GPU
	if g == nil {
		return nil, false, false
	}
	var total, dd float64
	type timed struct {
		l  Location
		us float64
	}
	var kinds []timed
	for _, d := range g.Devices {
		for _, m := range d.Memcpy {
			if m.HostMemory == "pageable" {
				pageable = true
			}
			if m.TimeUs <= 0 {
				continue
			}
			total += m.TimeUs
			if m.Direction == classify.DtoD.String() {
				dd += m.TimeUs
			}
			kinds = append(kinds, timed{Location{Kind: "memcpy", Name: strings.TrimSpace(m.Direction + " " + m.HostMemory),
				Note: fmt.Sprintf("%d copies, %.1f MB, %s, %.1f GB/s", m.Count, float64(m.Bytes)/1e6, units.Duration(m.TimeUs), m.BandwidthGBps)}, m.TimeUs})
		}
	}
	slices.SortStableFunc(kinds, func(a, b timed) int { return cmp.Compare(b.us, a.us) })
	for i, k := range kinds {
		if i == 3 {
			break
		}
		where = append(where, k.l)
	}
	return where, pageable, dd > total/2
}

// gil is the GIL evidence when host.gil's conditions hold (nil: not).
func (s *state) gil() *runevidence.GILEvidence {
	if s.py == nil || s.py.GIL == nil || s.device {
		return nil
	}
	if g := s.py.GIL; g.CPUShare >= minGILThreadCPU && g.MainBlocked >= minGILBlocked {
		return g
	}
	return nil
}

// minGILThreadCPU: another Python thread on a CPU at least this share of
// the run can hold the GIL against the main thread; minGILBlocked: the
// share of the main thread's samples blocked inside torch from which it
// is taken to wait for it (a CPU-bound loop alone blocks a few percent:
// page faults, allocations).
const minGILThreadCPU, minGILBlocked = 0.3, 0.1
