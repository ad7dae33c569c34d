package diagnose

import (
	"cmp"
	"fmt"
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
	var mem, math, mathTC, mathFP32, attn float64
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
		return thenDo(fmt.Sprintf("memory-bound kernels (elementwise, normalisation, softmax, copies: %.0f%% of kernel time) each read and write their tensors through device memory: torch.compile(model) fuses chains of them into one kernel", 100*share(mem)), "a larger batch if SM efficiency is low"),
			slices.Concat([]Evidence{{"memory-bound kernel families", 100 * share(mem), "% of kernel time", "kernels"}}, roofEv)
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
	if s.step > 0 {
		f.AtStakePct = stats.Round1(100 * atStakeUs / s.step)
		f.SavingPct = stats.Round1(100 * saving / s.step)
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
		out = append(out, Location{Kind: "python", Name: l.Func, File: l.File, Line: l.Line, SharePct: l.Pct, Note: note})
	}
	return out
}

// tensorFromLists reports the hottest line of the step when it builds a
// tensor from Python objects (torch.tensor / as_tensor / the legacy
// constructors over lists) and holds at least minListTensorPct of the
// main thread's samples.
func (s *state) tensorFromLists() (runevidence.Line, bool) {
	if s.py == nil || len(s.py.Hot) == 0 {
		return runevidence.Line{}, false
	}
	l := s.py.Hot[0]
	return l, l.Pct >= minListTensorPct && tensorFromList.MatchString(l.Text)
}

// minListTensorPct: the share (percent) of the main thread's samples at
// the line from which host.python names the conversion.
const minListTensorPct = 25

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
}

// at is the time at stake in class c per step; big: it is enough for a
// finding.
func (s *state) at(c Class) float64 { return s.share[c] * s.step }
func (s *state) big(c Class) bool   { return s.share[c] >= s.p.MinFinding }

// tinyOpsFinding names the lines that issue the tiny ops (the Python
// profile's hottest lines) and the ops called most.
func (s *state) tinyOpsFinding() {
	if s.share[Overhead] < s.p.MinFinding {
		return
	}
	t := s.tinyOps()
	var where []Location
	if s.py != nil {
		where = s.pyLines(s.py.Hot, 3)
	}
	if ops := s.in.Ops; ops != nil {
		rows := slices.DeleteFunc(slices.Clone(ops.Ranked()), func(r rowT) bool { return isAnnotation(r) || r.Calls == 0 })
		slices.SortStableFunc(rows, func(a, b rowT) int { return cmp.Compare(b.Calls, a.Calls) })
		for _, r := range rows[:min(3, len(rows))] {
			where = append(where, Location{Kind: "op", Name: r.Name, Note: fmt.Sprintf("%d calls, host self %s per call", r.Calls, units.Duration(r.HostSelfUs/float64(r.Calls)))})
		}
	}
	change := ""
	// An unfused optimizer that holds a good part of the overhead has a
	// one-argument fix; the generic advice would bury it (a 60-layer MLP
	// under AdamW measured here: 11.6 ms a step, 7.5 ms with fused=True,
	// 9.7 ms with foreach=True).
	if r, per, ok := s.optimizerStep(); ok && !r.MultiTensor && per >= tinyOptimizerShare*s.share[Overhead]*s.step {
		fix := foreachUpdate
		if fusedOnCPU[optimizerClass(r.Name)] {
			fix = "fused=True makes it a few ops in all (torch 2.4 and later)"
		}
		change = thenDo(fmt.Sprintf("the optimizer's update (%s%s, %.0f%% of the step) runs several ops per parameter: %s", r.Name, s.stepSiteRef(r.Name), pct(per/s.step), fix),
			fmt.Sprintf("for the model's own small ops: %s, and a larger batch gives each op more work", s.compileChange("them")))
		if o := s.runOptimizer(r.Name); o != nil && o.StepSite != nil {
			site := Location{Kind: "python", Name: o.StepSite.Func, File: o.StepSite.File, Line: o.StepSite.Line, Note: "calls " + o.Class + ".step()"}
			where = slices.DeleteFunc(where, func(l Location) bool {
				same := l.Kind == "python" && l.File == site.File && l.Line == site.Line
				if same {
					site.SharePct = l.SharePct // the hot line it is
				}
				return same
			})
			where = slices.Insert(where, 0, site)
		}
	}
	switch {
	case change != "":
	case s.compiled():
		change = "issue fewer, larger ops: batch the per-layer or per-parameter loop into one op over stacked tensors (torch.stack/cat, bmm, one Linear over the concatenated features), torch._foreach_* ops for a per-parameter update; " + s.compileChange("the small ops")
	default:
		var lead []Location
		if change, lead = s.tinyOpsSource(); len(lead) > 0 {
			where = append(lead, slices.DeleteFunc(where, func(l Location) bool {
				return slices.ContainsFunc(lead, func(m Location) bool { return m.File == l.File && m.Line == l.Line })
			})...)
		}
	}
	if lead, ok := s.oneSampleSteps(); ok {
		change = thenDo(lead, cmp.Or(change, rule("cpu.tiny-ops").Change))
	}
	ms := s.ev[Overhead]
	if c, ev, loc := s.float64Change(false); c != "" {
		// float32 first: the small ops' fixes can lose in float64 (an
		// LSTMCell loop fit with LBFGS: nn.LSTM in its place ran no faster
		// in float64, and 3x faster in float32; docs/diagnosis.md)
		change = thenDo(c, "in float32: "+cmp.Or(change, rule("cpu.tiny-ops").Change))
		ms = append(slices.Clone(ms), ev...)
		where = slices.Insert(where, 0, loc...)
	}
	title := fmt.Sprintf("%.0f ops per step, one per %s of step: the %.0f%% of the step in native ops is per-op framework overhead", t.perStep, units.Duration(t.stepUsPerOp), pct(s.share[Overhead]))
	s.emit(s.finding("cpu.tiny-ops", title, s.share[Overhead]*s.step, ms, where, change))
}

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
	case py.OutsideModelShare >= minOwnTinyShare && py.OutsideModelShare >= py.ModuleShare:
		where := s.pyLines(py.OutsideModel, 3)
		var names []string
		for _, l := range where {
			names = append(names, fmt.Sprintf("%s:%d %.0f%%", filepath.Base(l.File), l.Line, l.SharePct))
		}
		return fmt.Sprintf("the program's own tensor code outside the model issues them (%s: %.0f%% of the busy main-thread samples, against %.0f%% in the model's forward), and the backward repeats its ops: write it over whole tensors (one op over the batch instead of a loop over its rows or items, torch.where/gather/masks instead of per-element branches) or torch.compile the function",
			strings.Join(names, ", "), pct(py.OutsideModelShare), pct(py.ModuleShare)), where
	case py.ModuleShare > 0 && py.ModuleShare >= 2*py.OutsideModelShare:
		change := fmt.Sprintf("the model's own ops are the small ones (its forward holds %.0f%% of the busy main-thread samples, the program's own tensor code %.0f%%), each on little data: a larger batch (more samples or tokens per step, requests batched together when serving) gives every op more work for the same count of ops",
			pct(py.ModuleShare), pct(py.OutsideModelShare))
		// The program's own forward among the hot lines: a loop there may
		// run independent layers one at a time, which one batched op
		// replaces.
		for _, l := range py.Hot[:min(3, len(py.Hot))] {
			if l.Pct >= minForwardLinePct && (l.Func == "forward" || strings.HasSuffix(l.Func, ".forward")) {
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
// multiplies that by its micro-steps, under minLayerRepeats.
func (s *state) repeatedForward() (string, bool) {
	t, r := s.in.Ops, s.in.Run
	if t == nil || t.BackwardCalls == 0 || r == nil || len(r.Optimizers) != 1 || r.Optimizers[0].Params == 0 {
		return "", false
	}
	steps := s.steps // the table's steps, as tinyOpStats counts them
	if t.Steps > 0 {
		steps = t.Steps
	}
	if steps == 0 {
		return "", false
	}
	var calls, batches int
	var names []string // the layer ops that ran: an LSTM cell's are linear, not convolutions
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
	// per DataLoader batch: gradient accumulation fetches one a micro-step
	perStep, params := float64(calls)/float64(steps), r.Optimizers[0].Params
	if perBatch := perStep / max(1, float64(batches)/float64(steps)); perBatch < minLayerRepeats*float64(params) {
		return "", false
	}
	slices.Sort(names)
	loop := "a loop calls the model on one sample, or one time step, at a time"
	if m := s.modelRef(); m != "" {
		loop = "a loop calls the model (" + m + ") on one sample, or one time step, at a time"
	}
	return orTry(fmt.Sprintf("%s run %.0f times a step for the model's %d parameter tensors (a model called once runs about one per tensor or fewer): %s: call it once on the whole batch (torch.stack the samples; pad those of different lengths, with a mask) and take the loss over the batch (64 one-sample calls of a 2-layer MLP took 6.2 ms a step on the project's test CPU, one batched call 0.32 ms)",
		strings.Join(names, ", "), perStep, params, loop), "for time steps, nn.LSTM/GRU over the sequence instead of a cell in a loop: one call runs every step's input projection at once"), true
}

// layerOps are the ops a layer's forward enters by, called once per layer
// per forward; minLayerRepeats: their calls per step (per DataLoader
// batch) per parameter tensor from which the model ran many times in the
// step: a per-sample loop over a batch of 32 through a 2-layer MLP makes
// 16; 16 accumulated micro-batches without a DataLoader make 8.
var layerOps = []string{"aten::linear", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::conv_transpose3d"}

const minLayerRepeats = 16

// minFrameworkShare: the share of the busy main-thread samples whose
// innermost frame is a training framework's own loop from which
// host.python names it.
const minFrameworkShare = 0.2

// frameworkChange: when a training framework's own code (Lightning's
// loop moving the batch, its closure, its logging) is the innermost frame
// of minFrameworkShare of the busy samples, its per-step cost is fixed,
// and the program's code is not where the Python time goes. A Lightning
// module of three Linear layers trained on the CPU: 38% of the window's
// samples in Lightning, most in move_data_to_device's batch_to and
// the logger's result cache; it got "vectorise it, or move it into a
// Dataset". Empty otherwise or without enough samples.
func (s *state) frameworkChange() string {
	py := s.py
	if py == nil || py.HotSamples < s.p.OutsideModelSamples || py.FrameworkShare < minFrameworkShare {
		return ""
	}
	change := fmt.Sprintf("%s's own code is the innermost frame of %.0f%% of the busy main-thread samples (%s): its per-step work (moving the batch, running the closure, logging, hooks) costs the same whatever the step does, so a larger batch makes it a smaller share of the step",
		py.Framework, pct(py.FrameworkShare), strings.Join(py.FrameworkFuncs, ", "))
	if py.Framework == "Lightning" {
		change = thenDo(change, "log less per step (self.log(..., on_step=False), Trainer(log_every_n_steps=...)) and do not move a batch that is already on its device")
	}
	return change
}

// minOwnTinyShare: the share of the busy main-thread samples in the
// program's own tensor code from which the tiny-ops change names it.
const minOwnTinyShare = 0.15

// minForwardLinePct: the share (percent) of the busy samples at a line of
// the program's own forward from which the tiny-ops change names it.
const minForwardLinePct = 15

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
	if m := s.modelRef(); m != "" {
		compile = "torch.compile on the model (" + m + ")"
	}
	return compile + " fuses " + what + " (try it: compiling costs seconds to minutes before the first step, and the gain depends on the model; bottleneck diff compares the two runs)"
}

// modelRef names the model the program calls, by the run's evidence:
// its class and the program's line that calls it ("Net, called at
// train.py:46"); "" without that evidence.
func (s *state) modelRef() string {
	if r := s.in.Run; r != nil && len(r.Models) > 0 {
		m := r.Models[0]
		return fmt.Sprintf("%s, called at %s:%d", m.Class, filepath.Base(m.File), m.Line)
	}
	return ""
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
// preprocessing into a DataLoader"); more work per kernel and CUDA graphs
// do. "": not so, or no Python profile to tell.
func (s *state) stepOverheadChange() string {
	py := s.py
	if !s.device || py == nil || py.HotSamples < s.p.OutsideModelSamples || py.OutsideModelShare >= s.p.OutsideModelShare {
		return ""
	}
	graphs := "torch.compile(model, mode=\"reduce-overhead\") captures the step's kernels in a CUDA graph, launched in one call"
	if s.compiled() {
		graphs = "the model runs under torch.compile: mode=\"reduce-overhead\" adds CUDA graphs, launched in one call, and torch.compile(optimizer.step) brings the update in"
	}
	change := fmt.Sprintf("the host's time is the step's own forward, backward and optimizer calls (%.0f%% of the window's main-thread samples), each issuing kernels the device finishes at once (kernels fill %.0f%% of the step): give each kernel more work (a larger batch)",
		pct(1-py.OutsideModelShare), pct(s.share[GPUCompute]))
	return orTry(orTry(change, graphs), "a fused optimizer (fused=True): it issues fewer kernels")
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
	if !dense && (short < tinyKernelsFrac || s.share[GPUCompute] > tinyKernelsDevice) {
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

// tinyKernelsFrac and tinyKernelsDevice: a step whose kernels are not
// dense gets the CUDA-graph change when this share of them or more ran
// shorter than their launch call and they fill this share of the step or
// less (greedy generation on an H100: 99% and 3%).
const (
	tinyKernelsFrac   = 0.9
	tinyKernelsDevice = 0.1
)

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

// tinyOptimizerShare: the share of the tiny ops' time an unfused
// optimizer step must hold for cpu.tiny-ops to lead with it.
const tinyOptimizerShare = 1.0 / 3

// minIOReadShare: the share of the I/O samples reading files from which
// io.in-step is about input, not checkpoints or logs.
const minIOReadShare = 0.5

// optimizerNativeShare: the share of the native time from which an
// unfused update leads cpu.native's change.
const optimizerNativeShare = 0.4

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

// gcFinding: collections pause the step; it names the lines that were
// running when the long collections began.
func (s *state) gcFinding() {
	r := s.in.Run
	if s.share[GC] < s.p.MinFinding || r == nil || r.GC == nil {
		return
	}
	var where []Location
	var explicit *rundir.GCSite
	for i := range r.GC.Sites {
		site := &r.GC.Sites[i]
		if len(where) == 3 {
			break
		}
		note := fmt.Sprintf("%d collections, %s in all", site.Count, units.Duration(site.PauseS*1e6))
		if site.Explicit {
			note += "; calls gc.collect"
			if explicit == nil {
				explicit = site
			}
		}
		where = append(where, Location{Kind: "python", Name: site.Func, File: site.File, Line: site.Line, Note: note})
	}
	change := ""
	if explicit != nil {
		change = fmt.Sprintf("gc.collect() runs in the loop (%s:%d): call it every N steps or at the end of an epoch, or drop it", explicit.File, explicit.Line)
		change = thenDo(change, "gc.freeze() after start-up: long-lived objects then stay out of later collections")
	} else {
		change = orTry(orTry("full collections over many live Python objects: gc.freeze() after start-up (model and data built), which keeps them out of later collections",
			"fewer small Python objects per step (tensors instead of lists of Python numbers): less for each collection to walk"),
			"gc.set_threshold with a larger first threshold: fewer collections")
	}
	title := fmt.Sprintf("Garbage collection pauses the step %s per step (%.0f%% of the step)", units.Duration(r.GC.PausePerStepS*1e6), pct(r.GC.Share))
	f := s.finding("gc.pauses", title, s.share[GC]*s.step, s.ev[GC], where, change)
	if explicit == nil {
		f.Try = map[string]string{"gc_freeze": "true"}
	}
	s.emit(f)
}

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

func (s *state) memoryGrowthFinding() {
	m := s.memoryGrowth()
	if m == nil {
		return
	}
	var where []Location
	graph := false
	for _, g := range s.leakingVars() {
		note := fmt.Sprintf("%s %s grows by %.0f per step, holds %s", g.Scope, g.Kind, g.PerStep, g.Holds)
		if g.Kind == "autograd graph" {
			note = fmt.Sprintf("its autograd graph grows by %.0f nodes per step", g.PerStep)
		}
		graph = graph || strings.Contains(g.Holds, "graph")
		where = append(where, Location{Kind: "python", Name: g.Name, File: g.File, Line: g.Line, Note: note})
	}
	ms := []Evidence{{"memory growth per step (" + m.Source + ", fitted)", m.SlopeBytes / (1 << 20), "MiB", "evidence"},
		{"memory growth over the run (" + m.Source + ", fitted)", (m.LastBytes - m.FirstBytes) / (1 << 20), "MiB", "evidence"},
		{"steps measured", float64(m.Steps), "", "evidence"}, {"fit R²", m.R2, "", "evidence"}}
	change := ""
	if graph {
		change = "the kept tensors hold their autograd graph (and the activations it saved): keep loss.item() or tensor.detach() instead, compute kept predictions under torch.no_grad(), and drop retain_graph=True unless a second backward needs it"
	}
	title := fmt.Sprintf("Memory grows %s per step: %s kept across steps", units.Bytes(m.SlopeBytes), where[0].Name)
	s.emit(s.finding("memory.growth", title, 0, ms, where, change))
}

// cpuDemand is how many threads of the job want a CPU at once on this
// machine: each local rank's intra-op threads plus its DataLoader workers
// (torch runs each worker with one thread).
type cpuDemand struct {
	ranks, threads, workers, cpus, want int
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
	d.want = d.ranks * (d.threads + d.workers)
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
func (d cpuDemand) fitThreads() int { return max(1, d.cpus/d.ranks-d.workers) }

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

// oversubscriptionFinding: more threads want the CPUs than there are, and
// the CPU side of the step is where the time goes. Threads that share a
// core slow each other down more than they add (OpenMP spin-waits, cache
// thrashing): fewer threads make such steps faster, so "use all cores" or
// "more workers" would be harmful advice there. Counted threads need not
// be busy (DataLoader workers that only index tensors idle): where the
// agent measured the step thread's wait for a CPU in the window, that
// wait is what is at stake, and under CPUWaitNote the finding stays
// silent (halving the intra-op threads of a compute-bound step on the
// strength of idle workers would slow it down).
func (s *state) oversubscriptionFinding() {
	d, ok := s.cpuDemand()
	if !ok || !d.oversubscribed() {
		return
	}
	atStake := s.share[CPUCompute] + s.share[Input] + s.share[Host]
	if cw := s.cpuWait(); cw != nil {
		if !s.waitsForCPU() {
			return
		}
		atStake = min(atStake, cw.Window.WaitShare())
	}
	if atStake < s.p.MinFinding {
		return
	}
	perRank := max(d.cpus/d.ranks, 1)
	workers := d.workers
	if workers >= perRank {
		workers = max(perRank-1, 0)
	}
	threads := max(perRank-workers, 1)
	change := fmt.Sprintf("give each process its share of the %d CPUs: OMP_NUM_THREADS=%d (or torch.set_num_threads(%d) at start)", d.cpus, threads, threads)
	if src := s.threadSource(); src != "" {
		change += "; the " + fmt.Sprint(d.threads) + " threads come from " + src
	}
	if workers != d.workers {
		change += fmt.Sprintf(" and DataLoader(num_workers=%d)", workers)
	}
	ms := []Evidence{{"usable CPUs", float64(d.cpus), "", "env"}, {"intra-op threads per process", float64(d.threads), "", "env"},
		{"DataLoader workers per process", float64(d.workers), "", "evidence"}, {"processes of the job on this machine", float64(d.ranks), "", "env"}}
	if d.load >= 0 {
		ms = append(ms, Evidence{"machine load average when the program started", d.load, "", "env"})
	}
	if cw := s.cpuWait(); cw != nil {
		ms = append(ms, Evidence{"main thread waiting for a CPU (recorded window)", pct(cw.Window.WaitShare()), "%", "evidence"})
	}
	title := fmt.Sprintf("%d threads want the CPU at once on %d CPUs: %d process(es) × (%d intra-op threads + %d DataLoader workers)", d.want, d.cpus, d.ranks, d.threads, d.workers)
	s.emit(s.finding("cpu.oversubscribed", title, atStake*s.step, ms, append(s.threadSetting(), s.interopSetting()...), change))
}

func (s *state) rank() {
	slices.SortStableFunc(s.d.Findings, func(a, b Finding) int {
		// memory growth leads: it ends the run, whatever the step costs;
		// then a debugging setting left on (a free fix of certain effect);
		// then the verdict's own finding leads among equal savings
		return cmp.Or(cmp.Compare(leads(b), leads(a)),
			cmp.Compare(b.SavingUs, a.SavingUs), cmp.Compare(b.AtStakeUs, a.AtStakeUs))
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
	// start-up has no per-step saving to rank by: it follows the first
	// finding, where the brief shows it
	if i := slices.IndexFunc(s.d.Findings, func(f Finding) bool { return f.Rule == "run.startup" }); i > 1 {
		f := s.d.Findings[i]
		s.d.Findings = slices.Insert(slices.Delete(s.d.Findings, i, i+1), 1, f)
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

// cpuOpsChange fits the native-ops change to the ops that take the time:
// convolutions and matmuls have their own fast paths on a CPU; time spread
// over many small ops is fusion's. lead is a change that goes before every
// other, the threads' included: a model left in training mode for
// inference, which also changes its outputs. attention is the line that
// calls nn.MultiheadAttention when the change names it.
func (s *state) cpuOpsChange() (change string, ev []Evidence, lead string, attention []Location) {
	change, ev, dropout, total := s.cpuFamilyChange()
	if att, _ := s.unfusedAttention(true); total > 0 && att/total >= s.p.AttentionShare {
		var fix string
		fix, attention = s.attentionFix(true)
		change = thenDo(fmt.Sprintf("attention runs unfused (softmax and batched matmuls: %.0f%% of the native time): %s",
			pct(att/total), fix), change)
		ev = append(ev, Evidence{"softmax + bmm ops' share of native op time", pct(att / total), "%", "ops"})
	}
	if c, e, ok := s.sliceBackwardChange(total); ok {
		change, ev = thenDo(c, change), append(ev, e)
	}
	// dropout's masks are a cost of their own on a CPU, whatever leads;
	// with no backward in the steps, dropout that draws masks is a model
	// left in training mode for inference, and model.eval() comes first
	// (a small CNN evaluated here: 212 ms a batch, 133 ms after eval())
	switch heavy := total > 0 && dropout/total >= minDropout; {
	case heavy && s.in.Ops != nil && s.in.Ops.BackwardCalls == 0:
		lead = fmt.Sprintf("dropout draws random masks (aten::bernoulli_, native_dropout: %.0f%% of the native time) though no backward runs in these steps: the model is in training mode: call model.eval() before inference (dropout then passes its input through, and BatchNorm uses its running statistics, which the outputs need too) and run it under torch.inference_mode()", pct(dropout/total))
		ev = append(ev, Evidence{"dropout ops' share of native op time", pct(dropout / total), "%", "ops"}, Evidence{"backward op calls", 0, "", "ops"})
	case heavy:
		change = thenDo(change, fmt.Sprintf("dropout's random masks (aten::bernoulli_, native_dropout) take %.0f%% of the native time, and drawing random numbers is slow on a CPU: a lower p, dropout only where the model overfits, or torch.compile, which fuses the mask with its neighbours", pct(dropout/total)))
		ev = append(ev, Evidence{"dropout ops' share of native op time", pct(dropout / total), "%", "ops"})
	}
	if one, ok := s.oneSampleSteps(); ok {
		lead = thenDo(lead, one)
	}
	return change, ev, lead, attention
}

// oneSampleSteps: an inference loop (no backward op in the steps) over a
// DataLoader with batch_size=1, its main loader (the most batches): each
// op does one sample's work, and the per-op and per-module cost is paid
// per sample. The change leads with batching the samples.
func (s *state) oneSampleSteps() (string, bool) {
	r := s.in.Run
	if r == nil || s.in.Ops == nil || s.in.Ops.BackwardCalls != 0 || len(r.Loaders) == 0 {
		return "", false
	}
	l := slices.MaxFunc(r.Loaders, func(a, b runevidence.Loader) int { return cmp.Compare(a.Batches, b.Batches) })
	if l.BatchSize == nil || *l.BatchSize != 1 || l.Batches < minOneSampleBatches {
		return "", false
	}
	seen := " (a 4-layer transformer encoder on a CPU: 0.51 s for 320 sequences one at a time, 0.24 s in batches of 32)"
	if s.device {
		seen = ", and each kernel fills more of the device"
	}
	return fmt.Sprintf("inference on one sample per step (DataLoader(%s, batch_size=1), no backward): batch the samples (batch_size=32 or more, one model call per batch; sequences padded to the batch's longest, with their mask): each op then does many samples' work in little more time%s", l.Dataset, seen), true
}

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

// minOneSampleBatches: batches of one that make an inference loop, not a
// probe (a single sample run before the real loop).
const minOneSampleBatches = 8

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
	return fmt.Sprintf("%.0f%% of the busy step runs tensor ops the program calls itself, outside the model's forward, the backward and the optimizer (%s), where torch.compile(model) and faster model ops do not reach: make what does not change once before the loop (synthetic inputs, constant tensors), do per-item work once over the whole batch, and move data preparation into a Dataset loaded by DataLoader workers (num_workers > 0), which overlaps it with the step",
			pct(py.OutsideModelShare), strings.Join(names, ", ")),
		Evidence{"share of busy main-thread samples outside the model, backward and optimizer", pct(py.OutsideModelShare), "%", "pyprofile"}, where, true
}

// minSliceBackward: the share of the native time in the backward of
// slices from which the CPU change names it first.
const minSliceBackward = 0.15

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
	var us float64
	rnn := false
	for _, r := range t.Ranked() {
		switch n := strings.ToLower(r.Name); {
		case n == "aten::slice_backward" || n == "aten::select_backward":
			us += r.HostTotalUs
		case classify.ContainsAny(n, cpuRNNOps):
			rnn = true
		}
	}
	if us/total < minSliceBackward {
		return "", Evidence{}, false
	}
	fix := "take a sequence's steps once with x.unbind(dim) (one backward for all of them) instead of x[:, t] in the loop"
	if rnn {
		fix = "nn.LSTM/GRU over a pack_padded_sequence on the CPU slices its input time step by time step: run it on the padded batch (one fused oneDNN call) and read each sequence's output at its length - 1, with sequences bucketed by length to keep padding small; a loop over x[:, t] likewise: x.unbind(dim) once"
	}
	change := fmt.Sprintf("the backward of slicing a larger tensor (aten::slice_backward / select_backward: %.0f%% of the native time) zero-fills a gradient of the whole tensor for every slice and adds the slice's into it: %s", pct(us/total), fix)
	return change, Evidence{"slice and select backward's share of native op time", pct(us / total), "%", "ops"}, true
}

// sdpaChange is the fused attention call that replaces softmax(q @ k.T) @ v.
const sdpaChange = "torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=...) instead of softmax(q @ k.transpose(-2, -1)) @ v"

// minMHA: the share of the busy samples inside nn.MultiheadAttention
// from which unfused attention is taken to be its.
const minMHA = 0.05

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
	if s.py == nil || s.py.MHAShare < minMHA {
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

// minDropout: the share of the native time in dropout's ops from which
// the CPU change names them (a small transformer trained here: 29% of the
// native time; dropout 0.1 -> 0 took its step from 1.86 to 1.44 s).
const minDropout = 0.15

// cpuDropoutOps are the op names (lower case) that draw dropout's masks.
var cpuDropoutOps = []string{"bernoulli", "native_dropout", "aten::dropout", "feature_dropout"}

const (
	randomShareLabel = "random number ops' share of native op time"
	sortShareLabel   = "sort ops' share of native op time"
)

// cpuFamilyChange is the change for the op family that holds the native
// time, its evidence, and the dropout ops' and all ops' self time.
func (s *state) cpuFamilyChange() (string, []Evidence, float64, float64) {
	var total, conv, gemm, rnn, random, dropout, index, aggregate, indexBackward, sorts, embeddingBackward float64
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
			case classify.ContainsAny(n, cpuGEMMOps):
				gemm += r.HostSelfUs
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
	rnnPerStep := float64(rnnCalls) / float64(max(1, s.recordedSteps()))
	switch {
	case conv/total >= dominant:
		model := "the model"
		if m := s.modelRef(); m != "" {
			model += " (" + m + ")"
		}
		return orTry(orTry(orTry(fmt.Sprintf("convolutions take %.0f%% of the native time: put %s and its input in channels_last (model.to(memory_format=torch.channels_last), input.to(memory_format=torch.channels_last)), oneDNN's fast path for convolutions", pct(conv/total), model),
				s.bf16Advice()), "torch.compile(model), which fuses the convolutions' neighbours into them"), "an accelerator"),
			[]Evidence{{"convolution ops' share of native op time", pct(conv / total), "%", "ops"}}, dropout, total
	case gemm/total >= dominant:
		return thenDo(orTry(orTry(fmt.Sprintf("matmuls take %.0f%% of the native time and already run in oneDNN/MKL: fewer or larger matmuls (batching)", pct(gemm/total)),
				s.bf16Advice()), "an accelerator"), others(gemm)),
			[]Evidence{{"matmul ops' share of native op time", pct(gemm / total), "%", "ops"}}, dropout, total
	case rnn/total >= dominant && rnnPerStep >= minRNNCalls:
		// a loop feeding the layer one time step per call: each call
		// projects one step's input and cannot batch the steps' input
		// matmuls (50 steps of a 128-unit LSTM, batch 32, forward and
		// backward: 19.0 ms looped, 3.96 ms in one call, on this CPU)
		return thenDo(fmt.Sprintf("recurrent layers (LSTM/GRU/RNN) take %.0f%% of the native time, called %.0f times a step: a loop that feeds a layer one time step per call (out, h = lstm(x[:, t:t+1], h)) runs each step's input projection and recurrence apart: "+
				"when the inputs are known up front (the batch's sequence, teacher forcing), call it once on the whole sequence (out, h = lstm(x)), measured 4.8x faster for 50 steps; "+
				"a loop whose next input is its last output (decoding) must stay, under torch.inference_mode() when nothing is trained", pct(rnn/total), rnnPerStep), others(rnn)),
			[]Evidence{{"recurrent ops' share of native op time", pct(rnn / total), "%", "ops"}, {"recurrent layer calls per step", rnnPerStep, "", "ops"}}, dropout, total
	case rnn/total >= dominant:
		// the time steps run one after another inside oneDNN's RNN
		// primitive; torch.compile leaves nn.LSTM as it is (a 2-layer
		// LSTM, 256 hidden, 32 x 100 steps, on this AMX CPU: 105 ms a
		// step, 46 ms under bf16 autocast, 80 ms compiled; a batch twice
		// as wide took twice as long, so no per-sample gain there)
		return thenDo(orTry(orTry(fmt.Sprintf("recurrent layers (LSTM/GRU/RNN) take %.0f%% of the native time and already run as oneDNN's fused RNN, one time step after another: shorter sequences (truncated backpropagation through time)", pct(rnn/total)),
				s.bf16Advice()), "an accelerator (cuDNN's RNN)"), others(rnn)),
			[]Evidence{{"recurrent ops' share of native op time", pct(rnn / total), "%", "ops"}}, dropout, total
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
	case sorts/total >= dominant:
		// a full sort to take the first k of each row (retrieval, top-k
		// sampling, hard-negative mining): the top 10 of 32 rows of 200k
		// scores took 690 ms through argsort here, 20 ms through topk
		return thenDo(fmt.Sprintf("sorting (aten::sort: torch.sort, argsort, msort) takes %.0f%% of the native time: where only the first k of each sorted row are used (argsort(...)[:, :k]), torch.topk(x, k) selects them without sorting the rest (the top 10 of 32 rows of 200k scores on the project's test CPU: 690 ms through argsort, 20 ms through topk); for one rank or quantile, torch.kthvalue or torch.quantile", pct(sorts/total)), others(sorts)),
			[]Evidence{{sortShareLabel, pct(sorts / total), "%", "ops"}}, dropout, total
	}
	// the largest ops say what the time is in: a 32k-token output layer's
	// matmuls and log_softmax, or many small ops
	return orTry(fmt.Sprintf("no op family dominates the native time (largest: %s): %s", largest(all, 3), s.compileChange("its elementwise, normalization and softmax ops and the many small ones")), "an accelerator"), nil, dropout, total
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

// bf16Advice suggests bf16 autocast where the CPU runs bfloat16 in
// hardware or may (unknown), never where it would be emulated.
func (s *state) bf16Advice() string {
	var env *runevidence.Env
	if s.in.Run != nil {
		env = s.in.Run.Env
	}
	switch native, known := env.ReducedPrecision("bfloat16"); {
	// an experiment: a small CPU transformer's step got ~20% slower under
	// it (its backward lost more than its forward gained) where a CNN's
	// halved (this AVX512-BF16 CPU: 0.53x)
	case !known:
		return "bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)) on CPUs with AVX512-BF16/AMX: half the bytes per value (try it: small layers can get slower)"
	case native:
		return "bf16 autocast (torch.autocast(\"cpu\", dtype=torch.bfloat16)): this CPU has bfloat16 instructions (try it: small layers can get slower)"
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

// minRNNCalls: the recurrent layer calls per step from which the change
// is about a loop over the time steps.
const minRNNCalls = 8

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

// optimizerFinding: the optimizer step's share of the step (regions), on
// a device or a CPU. A dense embedding gradient is told apart: the update
// then runs over every row of the table though a batch touches few of
// them, and sparse gradients remove most of it.
func (s *state) optimizerFinding() {
	r, per, ok := s.optimizerStep()
	if _, dense := s.denseEmbeddingUpdate(); !ok || dense {
		return
	}
	ms := []Evidence{{"optimizer step per call", per, "us", "regions"}, {"calls", float64(r.Calls), "", "regions"}}
	change := ""
	switch {
	case r.MultiTensor:
		change = orTry("the update already runs as foreach/fused ops: compile the step (torch.compile(optimizer.step)) to fuse it further", "update fewer, larger parameter tensors")
	case !s.device:
		change = "the update runs one parameter at a time: " + cpuUpdateFix(r)
	}
	title := fmt.Sprintf("%s takes %.0f%% of the step", r.Name, 100*per/s.step)
	if r.Closure {
		title = fmt.Sprintf("The update in %s, after its closure's forward and backward, takes %.0f%% of the step", r.Name, 100*per/s.step)
	}
	s.emit(s.finding("host.optimizer", title, per, ms, s.optimizerWhere(r), change))
}

// optimizerWhere is the optimizer's region, after the program's line that
// steps it when the run recorded it.
func (s *state) optimizerWhere(r regions.Region) []Location {
	where := []Location{{Kind: "op", Name: r.Name}}
	if o := s.runOptimizer(r.Name); o != nil && o.StepSite != nil {
		where = append([]Location{{Kind: "python", Name: o.StepSite.Func, File: o.StepSite.File, Line: o.StepSite.Line, Note: "calls " + o.Class + ".step()"}}, where...)
	}
	return where
}

// denseUpdate is an optimizer step that updates every row of a dense
// embedding gradient (host.dense-embedding).
type denseUpdate struct {
	r          regions.Region
	per, dense float64    // the optimizer step and the dense backward, per step
	rows       []Location // the dense backward's ops
	table      embeddingTable
	known      bool // the run's evidence says how much of the update is the table
}

// denseEmbeddingUpdate: the run's evidence says how much of the update is
// the table; a trace alone only how long its dense backward takes.
func (s *state) denseEmbeddingUpdate() (denseUpdate, bool) {
	r, per, ok := s.optimizerStep()
	if !ok {
		return denseUpdate{}, false
	}
	dense, rows := s.denseEmbeddingBackward()
	if dense <= 0 {
		return denseUpdate{}, false
	}
	table, known := s.embeddingTable(r.Name)
	if known && table.share >= 0.5 && table.touched < s.p.DenseEmbeddingRows || !known && dense >= s.p.DenseEmbeddingShare*per {
		return denseUpdate{r, per, dense, rows, table, known}, true
	}
	return denseUpdate{}, false
}

// denseEmbeddingFinding: host.dense-embedding.
func (s *state) denseEmbeddingFinding() {
	u, ok := s.denseEmbeddingUpdate()
	if !ok {
		return
	}
	r, per, dense, table := u.r, u.per, u.dense, u.table
	ms := []Evidence{{"optimizer step per call", per, "us", "regions"}, {"calls", float64(r.Calls), "", "regions"},
		{"dense embedding backward per step", dense, "us", "ops"}}
	stake := per + dense
	if u.known {
		ms = append(ms, Evidence{fmt.Sprintf("largest parameter %v, dense gradient: share of the optimizer's %d elements", table.shape, table.numel), 100 * table.share, "%", "run evidence"})
		if table.touched >= 0 {
			ms = append(ms, Evidence{"its rows with a gradient at the first step", 100 * table.touched, "%", "run evidence"})
		}
		stake = table.share*per + dense
	}
	f := s.finding("host.dense-embedding", fmt.Sprintf("%s updates every row of a dense embedding gradient: it and the embedding's dense backward take %.0f%% of the step", r.Name, 100*(per+dense)/s.step),
		stake, ms, append(s.optimizerWhere(r), u.rows...), "")
	if !u.known {
		f.Confidence = "low"
	}
	s.emit(f)
}

// cpuUpdateFix is the fix for an update that runs one parameter at a
// time on a CPU.
func cpuUpdateFix(r regions.Region) string {
	if fusedOnCPU[optimizerClass(r.Name)] {
		return "fused=True (Adam, AdamW, SGD, Adagrad; on CPU in torch 2.4 and later), not foreach=True, which is slower on a CPU for SGD and Adagrad"
	}
	return foreachUpdate
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
		where = append(where, Location{Kind: "python", Name: l.Func, File: l.File, Line: l.Line, SharePct: l.Pct, Note: note})
	}
	top := blocked[0]
	ms := []Evidence{{"main-thread samples off the CPU at the program's lines, outside torch", pct(all), "%", "pyprofile"},
		{"step time between ops (host, launch, unexplained)", pct(gaps), "% of step", "step_breakdown"}}
	s.emit(s.finding("host.blocked", fmt.Sprintf("The main thread is blocked off the CPU %.0f%% of the step at %s:%d", pct(share), filepath.Base(top.File), top.Line),
		share*s.step, ms, where, blockedChange(top)))
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

// validationFinding: validation or evaluation takes a large share of a
// training run's wall time (framework phases, whole run): it runs too
// often or on too much data for what it tells.
func (s *state) validationFinding() {
	r := s.in.Run
	if r == nil || r.Phases == nil || r.Phases.WallS <= 0 || s.step <= 0 {
		return
	}
	fp := r.Phases
	valS, loadS, steps := validationTime(fp)
	share := valS / fp.WallS
	if steps == 0 || share < s.p.ValidationShare {
		return // not a training run, or validation in proportion
	}
	perStepUs := valS / float64(steps) * 1e6
	ms := []Evidence{{"validation and evaluation phases' self time, share of the run's wall time", 100 * share, "%", "framework phases"},
		{fmt.Sprintf("validation time per training step (%d steps)", steps), perStepUs, "us", "framework phases"}}
	var change string
	if fp.Framework == "lightning" {
		change = "validate less often (Trainer(val_check_interval=..., check_val_every_n_epoch=...)) or on fewer batches (limit_val_batches)"
		if loadS >= valS/2 {
			change = thenDo(change, fmt.Sprintf("give the validation DataLoader workers too: loading its batches is %.0f%% of it (val_next)", 100*loadS/valS))
		}
	} else {
		change = "evaluate less often (TrainingArguments(eval_steps=..., or eval_strategy=\"epoch\")) or on a subset (eval_dataset.select(range(n))), with a larger per_device_eval_batch_size"
	}
	s.emit(s.finding("run.validation", fmt.Sprintf("Validation takes %.0f%% of the run's wall time (%s over %d training steps)", 100*share, units.Duration(valS*1e6), steps),
		perStepUs, ms, []Location{{Kind: "phase", Name: "validation", Note: fp.Framework + " phases"}}, change))
}

// checkpointFinding: saving checkpoints takes at least MinFinding of a
// training run's wall time (framework phases, whole run: Lightning's and
// the Trainer's save_checkpoint). A save every N steps is rarely in the
// recorded window: a Lightning run saving every 20 steps spent 39% of
// its wall time there, and its window of 5 steps showed none of it.
func (s *state) checkpointFinding() {
	r := s.in.Run
	if r == nil || r.Phases == nil || r.Phases.WallS <= 0 || s.step <= 0 {
		return
	}
	fp := r.Phases
	saveS, saves := checkpointTime(fp)
	_, _, steps := validationTime(fp)
	share := saveS / fp.WallS
	if steps == 0 || saves == 0 || share < s.p.MinFinding {
		return
	}
	perStepUs := saveS / float64(steps) * 1e6
	ms := []Evidence{{"checkpoint saves' self time, share of the run's wall time", 100 * share, "%", "framework phases"},
		{"saves", float64(saves), "", "framework phases"},
		{"time per save", saveS / float64(saves) * 1e6, "us", "framework phases"},
		{fmt.Sprintf("save time per training step (%d steps)", steps), perStepUs, "us", "framework phases"}}
	change := "save less often (TrainingArguments(save_steps=... larger, or save_strategy=\"epoch\")), and save_only_model=True when the optimizer's state is not needed to resume"
	if fp.Framework == "lightning" {
		change = orTry(orTry("save less often (ModelCheckpoint(every_n_train_steps=... larger, or every_n_epochs=1))",
			"save_weights_only=True when the optimizer's state is not needed to resume: a smaller file"),
			"write in the background: Trainer(plugins=[AsyncCheckpointIO()]) (lightning.pytorch.plugins.io)")
	}
	s.emit(s.finding("run.checkpoint", fmt.Sprintf("Saving checkpoints takes %.0f%% of the run's wall time (%d saves, %s each)", 100*share, saves, units.Seconds(saveS/float64(saves))),
		perStepUs, ms, []Location{{Kind: "phase", Name: "save_checkpoint", Note: fp.Framework + " phases"}}, change))
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

// gpuBound: the GPU rules apply (a device, and its kernels hold enough
// of the step).
func (s *state) gpuBound() bool { return s.device && s.big(GPUCompute) }

// kernelMix is the kernel table's time by kind, which the GPU rules
// share.
type kernelMix struct {
	kernelUs, gemmUs, nonTC, convUs float64
	nonTCRows                       []Location // the top fp32 GEMMs on CUDA cores
}

// perStep turns kernel time over the steps into time per step.
func (m kernelMix) perStep(s *state, us float64) float64 {
	if m.kernelUs == 0 {
		return 0
	}
	return us / m.kernelUs * s.avg.KernelUs
}

func (s *state) kernelMix() kernelMix {
	if s.mix != nil {
		return *s.mix
	}
	var m kernelMix
	kt := s.in.Kernels
	if kt != nil {
		m.kernelUs = kt.TotalUs
		for _, r := range kt.Ranked() {
			if !isDeviceWork(r.Name) {
				continue
			}
			k := kernels.Classify(r.Name)
			if k.Family == kernels.GEMM || k.Family == kernels.Conv {
				m.gemmUs += r.TotalUs
				if k.FP32OnVectorCores() {
					m.nonTC += r.TotalUs
					if len(m.nonTCRows) < 3 {
						m.nonTCRows = append(m.nonTCRows, Location{Kind: "kernel", Name: r.Name, SharePct: stats.Round1(r.TotalPct), Note: kernelNote(k) + "; launched by " + cmp.Or(r.TopOp, "?")})
					}
				}
			}
			if isConv(r.Name) {
				m.convUs += r.TotalUs
			}
		}
	}
	s.mix = &m
	return m
}

// precisionFinding: gpu.precision.
func (s *state) precisionFinding() {
	m := s.kernelMix()
	if !s.gpuBound() || m.kernelUs == 0 || m.nonTC/m.kernelUs < s.p.NonTensorCoreGEMM {
		return
	}
	kernelUs, gemmUs, nonTC, nonTCRows := m.kernelUs, m.gemmUs, m.nonTC, m.nonTCRows
	change := ""
	d := s.hardware()
	vector, matrix := d.units()
	switch {
	case d.vendor == "amd":
		change = "run matmuls and convolutions on the matrix cores: " + s.halfPrecisionChange(d)
	case d.major >= 0 && !d.atLeast(8, 0):
		change = fmt.Sprintf("compute capability %d.%d has no bf16/TF32 tensor cores: %s", d.major, d.minor, s.halfPrecisionChange(d))
	case d.major >= 0:
		// TF32 first: one line, float32 storage, and a change run
		// --verify=numerics can try (an H200 GPT in fp32: 2.51x measured)
		change = orTry("run the fp32 matmuls and convolutions on tensor cores in TF32: torch.set_float32_matmul_precision(\"high\") (cuDNN's convolutions use TF32 by default), one line that keeps float32 storage",
			"bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16)): twice TF32's tensor-core rate and half the bytes, with more change to the numerics")
	}
	ms := []Evidence{{"fp32 matmul/conv kernel time on CUDA cores", 100 * nonTC / kernelUs, "% of kernel time", "kernels"},
		{"matmul/conv kernel time", 100 * gemmUs / kernelUs, "% of kernel time", "kernels"}}
	if r := s.in.Run; r != nil && r.Env != nil {
		if v, ok := r.Env.Flags["float32_matmul_precision"]; ok {
			ms = append(ms, Evidence{"float32_matmul_precision=" + fmt.Sprint(v), 0, "", "env"})
		}
	}
	f := s.finding("gpu.precision", fmt.Sprintf("FP32 matmuls/convolutions run on %s, not %s (%.0f%% of kernel time)", vector, matrix, 100*nonTC/kernelUs), m.perStep(s, nonTC), ms, nonTCRows, change)
	if d.vendor != "amd" && d.atLeast(8, 0) {
		f.Try = map[string]string{"tf32": "true"}
	}
	s.emit(f)

}

// cudnnBenchmarkFinding: gpu.cudnn-benchmark.
func (s *state) cudnnBenchmarkFinding() {
	m := s.kernelMix()
	r := s.in.Run
	if !s.gpuBound() || r == nil || r.Env == nil || m.kernelUs == 0 || m.convUs/m.kernelUs < s.p.ConvShare {
		return
	}
	kernelUs, convUs := m.kernelUs, m.convUs
	if v, ok := r.Env.Flags["cudnn_benchmark"].(bool); ok && !v {
		f := s.finding("gpu.cudnn-benchmark", fmt.Sprintf("Convolutions (%.0f%% of kernel time) with cudnn.benchmark off", 100*convUs/kernelUs), m.perStep(s, convUs),
			[]Evidence{{"convolution kernel time", 100 * convUs / kernelUs, "% of kernel time", "kernels"}}, nil, "")
		f.Try = map[string]string{"cudnn_benchmark": "true"}
		s.emit(f)
	}

}

// kernelsFinding: gpu.kernels.
func (s *state) kernelsFinding() {
	if !s.gpuBound() {
		return
	}
	kt := s.in.Kernels
	var where []Location
	if kt != nil {
		for _, r := range kt.Ranked() {
			if len(where) == 3 {
				break
			}
			if !isDeviceWork(r.Name) {
				continue
			}
			where = append(where, Location{Kind: "kernel", Name: r.Name, SharePct: stats.Round1(r.TotalPct), Note: kernelNote(kernels.Classify(r.Name)) + "; launched by " + cmp.Or(r.TopOp, "?")})
		}
	}
	change, fam := s.kernelsChange()
	if change == "" {
		change = s.generalKernelsChange()
	}
	if c, ev, loc := s.float64Change(true); c != "" {
		change, fam, where = c, append(fam, ev...), append(loc, where...)
	}
	s.emit(s.finding("gpu.kernels", fmt.Sprintf("Device kernels take %.0f%% of the step", pct(s.share[GPUCompute])), s.share[GPUCompute]*s.step,
		slices.Concat(s.ev[GPUCompute], fam), where, change))
}

// unfusedAttention: attention computed as softmax(q @ k.T) @ v: softmax
// and batched-matmul rows in the operator table and no fused attention
// op. It returns their device self time (host self time on a CPU, where
// the softmax's backward rows count too: the forward's row can fall out
// of the table's top rows) and the rows; 0 when a fused op runs or either
// kind is missing.
func (s *state) unfusedAttention(cpu bool) (float64, []Location) {
	t := s.in.Ops
	if t == nil {
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

// attentionFinding: attention computed as softmax(q @ k.T) @ v, unfused:
// softmax and batched-matmul ops take device time and no fused attention
// op runs.
func (s *state) attentionFinding() {
	t := s.in.Ops
	if !s.gpuBound() || t == nil || t.DevSelfUs <= 0 {
		return
	}
	us, where := s.unfusedAttention(false)
	if us/t.DevSelfUs < s.p.AttentionShare {
		return
	}
	kt := s.in.Kernels
	if kt == nil || kt.TotalUs <= 0 {
		return
	}
	share := us / t.DevSelfUs
	change := ""
	if fix, loc := s.attentionFix(false); fix != sdpaChange {
		change, where = fix, append(loc, where...)
	}
	s.emit(s.finding("gpu.attention", fmt.Sprintf("Attention runs unfused: softmax and batched matmuls take %.0f%% of device time", 100*share),
		s.kernelMix().perStep(s, share*kt.TotalUs), []Evidence{{"softmax + bmm device time", 100 * share, "% of device time", "operators"}}, where, change))
}

// layoutFinding: convolutions on NCHW tensors make cuDNN convert layouts
// around its tensor-core kernels; channels_last removes the conversions.
func (s *state) layoutFinding() {
	kt := s.in.Kernels
	m := s.kernelMix()
	kernelUs, convUs := m.kernelUs, m.convUs
	if !s.gpuBound() || kt == nil || kernelUs <= 0 || convUs/kernelUs < s.p.ConvShare {
		return
	}
	var conv float64
	var where []Location
	for _, r := range kt.Ranked() {
		if classify.ContainsAny(strings.ToLower(r.Name), layoutConversions) {
			conv += r.TotalUs
			if len(where) < 3 {
				where = append(where, Location{Kind: "kernel", Name: r.Name, SharePct: stats.Round1(r.TotalPct), Note: "launched by " + cmp.Or(r.TopOp, "?")})
			}
		}
	}
	if conv/kernelUs < s.p.LayoutShare {
		return
	}
	s.emit(s.finding("gpu.channels-last", fmt.Sprintf("Layout conversions around convolutions take %.0f%% of kernel time", 100*conv/kernelUs), m.perStep(s, conv),
		[]Evidence{{"NCHW<->NHWC conversion kernels", 100 * conv / kernelUs, "% of kernel time", "kernels"},
			{"convolution kernels", 100 * convUs / kernelUs, "% of kernel time", "kernels"}}, where, ""))
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

// minSyncsPerUpdate: DistributedDataParallel syncing gradients after this
// many forwards per optimizer update, on average, is gradient
// accumulation without no_sync().
const minSyncsPerUpdate = 2

// noSyncFinding: comm.no-sync. Gradient accumulation under DistributedDataParallel
// without model.no_sync() all-reduces the gradients after every
// micro-batch, where the update needs them once; the syncs beyond one per
// update are communication to remove (at stake: their part of comm, the
// step's exposed communication). Silent with one sync per update: no
// accumulation, no_sync in place, two models with an optimizer each, or
// a model called twice before one backward. It reports whether it fired.
func (s *state) noSyncFinding() {
	if !s.big(Comm) || !s.syncsEveryMicroBatch() {
		return
	}
	comm := s.at(Comm)
	g := s.in.Regions.GradSync
	perUpdate := float64(g.Synced) / float64(g.Updates)
	excess := 1 - 1/perUpdate
	ms := []Evidence{{"DDP gradient syncs per optimizer update", perUpdate, "", "regions"},
		{"DDP forwards per optimizer update", float64(g.Forwards) / float64(g.Updates), "", "regions"}}
	where := s.topOps(2, false, "DistributedDataParallel.forward", "all_reduce", "allreduce")
	if s.py != nil { // the micro-batch's backward, when the profile caught it
		if i := slices.IndexFunc(slices.Concat(s.py.Hot, s.py.RunHot), func(l runevidence.Line) bool { return strings.Contains(l.Text, "backward(") }); i >= 0 {
			where = slices.Insert(where, 0, s.pyLines(slices.Concat(s.py.Hot, s.py.RunHot)[i:], 1)...)
		}
	}
	s.emit(s.finding("comm.no-sync", fmt.Sprintf("DistributedDataParallel syncs the gradients %.3g times per optimizer update: gradient accumulation without no_sync()", perUpdate),
		excess*comm, ms, where,
		fmt.Sprintf("run the forward and backward of every micro-batch but the last under `with model.no_sync():`, so the gradients are all-reduced once per update instead of %.3g times (the accumulated gradients are the same)", perUpdate)))
}

// syncsEveryMicroBatch: DDP synced the gradients at least
// minSyncsPerUpdate times per optimizer update (comm.no-sync's case).
func (s *state) syncsEveryMicroBatch() bool {
	r := s.in.Regions
	if r == nil || r.GradSync == nil {
		return false
	}
	g := r.GradSync
	return g.Updates > 0 && g.Synced >= minSyncsPerUpdate*g.Updates
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
		where = append(where, Location{Kind: "python", Name: l.Func, File: l.File, Line: l.Line, SharePct: l.Pct, Note: "samples of thread " + g.Thread + ", whole run"})
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

// inputFinding: input.loader.
func (s *state) inputFinding() {
	if !s.big(Input) {
		return
	}
	var where []Location
	change := ""
	var try map[string]string // the run-time change for run --verify
	tryPct := -1.0            // its own predicted saving, when not the finding's
	if s.py != nil {
		where = s.pyLines(s.py.LoaderLines, 2)
	}
	workerLines, costs := s.workerLines()
	// with worker processes, the main thread only waits in __next__:
	// the dataset line that costs the time is in the workers
	where = append(workerLines, where...)
	if r := s.in.Run; r != nil {
		for i, l := range r.Loaders {
			nw := "?"
			if l.NumWorkers != nil {
				nw = fmt.Sprint(*l.NumWorkers)
			}
			loc := Location{Kind: "dataloader", Name: l.Dataset, Note: "num_workers=" + nw + " pin_memory=" + ptrStr(l.PinMemory) + " persistent_workers=" + ptrStr(l.PersistentWorkers)}
			if i != s.waitedLoader() {
				// another loader (an evaluation's): named, not judged
				loc.Note += fmt.Sprintf("; not the loader waited for (%s of wait over %d batches)", units.Seconds(l.WaitS), l.Batches)
				where = append(where, loc)
				continue
			}
			if len(r.Loaders) > 1 {
				loc.Note += fmt.Sprintf("; the loader waited for (%s of wait over %d batches)", units.Seconds(l.WaitS), l.Batches)
			}
			where = append(where, loc)
			// the workers' line, when named, already says what to make
			// cheaper
			cheaperSample := "make " + l.SampleMethod() + " cheaper"
			if costs != "" {
				cheaperSample = ""
			}
			switch {
			case l.NumWorkers != nil && *l.NumWorkers == 0:
				n := s.advisedWorkers()
				cheaper := func(c string) string { return orTry(c, "make the dataset's "+l.SampleMethod()+" cheaper") }
				if s.py != nil && len(s.py.LoaderLines) > 0 {
					// the line that loads: a collate_fn filling a batch
					// element by element is not __getitem__
					l := s.py.LoaderLines[0]
					cheaper = func(c string) string {
						return orTry(c, fmt.Sprintf("make %s at %s:%d cheaper (%.0f%% of the main thread's samples): a batch that loads faster leaves the workers less to hide", l.Func, filepath.Base(l.File), l.Line, l.Pct))
					}
				}
				if s.py != nil && s.py.LoaderIOShare >= 0.5 {
					cheaper = func(c string) string {
						return thenDo(c, fmt.Sprintf("pack the samples into one file read or memory-mapped once (one saved tensor, np.memmap) instead of a file per sample: loading is file reads (%.0f%% of its samples in torch.load, np.load, pickle and the like), which workers only overlap", pct(s.py.LoaderIOShare)))
					}
				}
				change = fmt.Sprintf("the DataLoader over %s%s loads its batches in the main thread (num_workers=0): DataLoader(num_workers=%d, persistent_workers=True%s) loads them in background workers while the step runs", cmp.Or(l.Dataset, "its dataset"), l.SiteRef(), n, pinText(s.device))
				if s.loadingWaits() {
					change += fmt.Sprintf(" (the loading waits rather than computes, %.0f%% of its samples off the CPU: waiting workers need no CPU, so more of them than CPUs still overlap)", pct(s.py.LoaderOffCPU))
				}
				change = cheaper(change)
				try = map[string]string{"num_workers": fmt.Sprint(n), "persistent_workers": "true"}
				if w, ok := s.workersSaving(); ok && w < s.share[Input]/2 && s.py != nil && len(s.py.LoaderLines) > 0 {
					// the workers this machine has cannot keep up:
					// the loading must get cheaper first
					l := s.py.LoaderLines[0]
					in := min(1, s.share[Input])
					change = fmt.Sprintf("make %s at %s:%d cheaper (%.0f%% of the main thread's samples): a batch takes %s to load against %s for the rest of the step, so %s on this machine could not keep up (the step would still take a batch's load over the workers: ~%.0f%% saved)",
						l.Func, filepath.Base(l.File), l.Line, l.Pct, units.Duration(in*s.step), units.Duration((1-in)*s.step), units.Things(n, "worker"), pct(w))
					change = thenDo(change, fmt.Sprintf("DataLoader(num_workers=%d, persistent_workers=True%s): overlaps what is left with the step", n, pinText(s.device)))
					tryPct = pct(w)
				}
				if s.py != nil && s.py.LoaderDataFrameRows {
					// the first change: workers would only share the
					// cost out
					change = thenDo(dataFrameRowsChange, fmt.Sprintf("the batches load in the main thread (num_workers=0): DataLoader(num_workers=%d, persistent_workers=True%s) overlaps what is left with the step", n, pinText(s.device)))
				}
			case l.RestartsWorkers():
				perBatches, perRestart, perWait := float64(l.Batches)/float64(l.Iterators), units.Seconds(l.Restart()/float64(l.Iterators)), units.Seconds((l.WaitS-l.FirstWaitS)/float64(l.Iterators))
				change = fmt.Sprintf("the DataLoader starts and stops its %d worker processes for each of its %d epochs (persistent_workers=False), %.0f batches each: %s an epoch, against %s of wait for its other batches: DataLoader(..., persistent_workers=True)",
					*l.NumWorkers, l.Iterators, perBatches, perRestart, perWait)
				try = map[string]string{"persistent_workers": "true"}
				if l.MadeAnew() {
					change = fmt.Sprintf("the program makes a new DataLoader over its %s for each of %d passes (an evaluation's loader made in the loop), and each starts and stops %d worker processes, %.0f batches a pass: %s a pass, against %s of wait for its other batches: make the DataLoader once, before the loop, with persistent_workers=True",
						l.Dataset, l.Iterators, *l.NumWorkers, perBatches, perRestart, perWait)
				}
				if l.Dataset == "TensorDataset" {
					change = orTry(change, "num_workers=0: a TensorDataset's batches are in memory already, and workers only add the hand-over")
				}
			case l.NumWorkers != nil && *l.NumWorkers > 0 && s.workersWait():
				// workers asleep in reads need no CPU: more of them
				// overlap more reads, however busy the CPUs are (4
				// workers reading from "network storage", 12% of
				// their busy time on a CPU, were told more workers
				// would not help)
				w := s.in.Run.Workers
				change = fmt.Sprintf("the %d workers mostly wait rather than compute (%.0f%% of their busy time on a CPU: file or network reads, a sleep, a lock): waiting workers need no CPU, so more of them overlap more of the waits: DataLoader(num_workers=%d, ...) and a larger prefetch_factor", *l.NumWorkers, 100*w.CPUShare, 2**l.NumWorkers)
				change = orTry(change, "faster reads (local disk, fewer and larger files): less for the workers to wait on")
				try = map[string]string{"num_workers": fmt.Sprint(2 * *l.NumWorkers)}
			case l.NumWorkers != nil && s.oversubscribed():
				change = orTry(fmt.Sprintf("%d workers and the main process's threads already want more CPUs than there are, so more workers would not help: leave the workers more cores (torch.set_num_threads(1) in the main process)", *l.NumWorkers), cheaperSample)
			case l.NumWorkers != nil:
				change = fmt.Sprintf("%d workers cannot keep up: raise num_workers or prefetch_factor", *l.NumWorkers)
				if cheaperSample != "" {
					change = orTry(fmt.Sprintf("%d workers cannot keep up: %s", *l.NumWorkers, cheaperSample), "raise num_workers or prefetch_factor")
				}
			}
			if r.WorkersReadDataFrameRows && l.NumWorkers != nil && *l.NumWorkers > 0 {
				change = thenDo(dataFrameRowsChange, change)
			}
			if costs != "" && l.NumWorkers != nil && *l.NumWorkers > 0 {
				change = thenDo(costs, change)
			}
			if len(r.Loaders) > 1 && change != "" {
				change = fmt.Sprintf("the step waits for the DataLoader over %s (%s of the run's %s of DataLoader wait; the program has %d loaders): %s",
					cmp.Or(l.Dataset, "its dataset"), units.Seconds(l.WaitS), units.Seconds(s.loaderWaitS()), len(r.Loaders), change)
			}
		}
		// the loader waited for first: the report shows the first few
		if i := s.waitedLoader(); i >= 0 && len(r.Loaders) > 1 {
			k := slices.IndexFunc(where, func(l Location) bool { return l.Kind == "dataloader" })
			j := k + i
			where[k], where[j] = where[j], where[k]
		}
	}
	if len(where) == 0 {
		where = append(where, Location{Kind: "dataloader", Name: "DataLoader __next__"})
	}
	ms := s.ev[Input]
	if in := s.in.Input; in != nil && in.Calls > 0 && s.device {
		ms = append(ms, Evidence{"device idle during DataLoader wait", in.GPUIdlePct, "%", "input_pipeline"})
	}
	// the title quotes the measurement the share came from: the agent's
	// step and the trace's mean step differ, so share × trace step
	// would disagree with the evidence below it
	title := fmt.Sprintf("The step waits for data: %s (%.0f%% of the step)", s.inputWait, pct(s.share[Input]))
	if run, win, _ := s.runInput(); s.inputRun {
		title = fmt.Sprintf("The step waits for data %.0f%% of the run's step time (%.0f%% in the recorded window, whose steps took batches loaded before it)", pct(run), pct(win))
	}
	f := s.finding("input.loader", title, s.at(Input), ms, where, change)
	f.Try = try
	if try != nil && tryPct >= 0 {
		f.TrySavingPct = &tryPct
	}
	s.emit(f)
}

// ioFinding: io.in-step.
func (s *state) ioFinding() {
	if !s.big(IO) || s.py == nil {
		return
	}
	change := ""
	if s.py.IOReadShare >= minIOReadShare {
		// reads in the loop are input, not checkpoints or logs (a
		// loop that np.load-ed a shard per step got "move checkpoint
		// saves and logging off the hot loop")
		change = fmt.Sprintf("the step reads files (%.0f%% of its I/O samples load or read: torch.load, np.load, pickle): read them once before the loop where they fit in memory", pct(s.py.IOReadShare))
		change = orTry(orTry(change, "memory-map them (np.load(path, mmap_mode=\"r\"), torch.load(path, mmap=True)): only the pages used are read"),
			"read them in a Dataset loaded by DataLoader workers, which overlap the reads with the steps")
	}
	s.emit(s.finding("io.in-step", fmt.Sprintf("File I/O in the step takes %.0f%% of the main thread", pct(s.py.IOShare)), s.at(IO), s.ev[IO], s.pyLines(s.py.IOLines, 3), change))
}

// syncFinding: sync.blocking.
func (s *state) syncFinding() {
	if !s.big(Sync) {
		return
	}
	var where []Location
	if r := s.in.Run; r != nil {
		for i, ss := range r.SyncSites {
			if i == 3 {
				break
			}
			where = append(where, Location{Kind: "sync-site", Name: ss.Func, File: ss.File, Line: ss.Line, Note: fmt.Sprintf("%d implicit syncs in the window", ss.Count)})
		}
	}
	if sy := s.in.Syncs; sy != nil {
		for _, c := range sy.Causes {
			if len(where) == 3 || c.StallUs <= 0 {
				break
			}
			name := cmp.Or(c.Op, c.TopOp, c.Call)
			call := c.Call
			if c.Copy != "" {
				call += " " + c.Copy + " pageable"
			}
			l := Location{Kind: "op", Name: name, Note: fmt.Sprintf("%d × %s, %s blocked, device stalled %s", c.Count, call, units.Duration(c.BlockedUs), units.Duration(c.StallUs))}
			if len(c.Stack) > 0 {
				l.Note += "; stack: " + c.Stack[0]
			}
			where = append(where, l)
		}
	}
	s.emit(s.finding("sync.blocking", fmt.Sprintf("%.0f blocking syncs per step stall the device", s.syncPS), s.at(Sync), s.ev[Sync], where, s.syncChange()))
}

// copyFinding: copy.h2d.
func (s *state) copyFinding() {
	if !s.big(Copy) {
		return
	}
	where, pageable, dtod := s.copies()
	title := fmt.Sprintf("Host-device copies take %.0f%% of the step", pct(s.share[Copy]))
	change := ""
	switch {
	case dtod:
		// copies within the device: pinned memory is not the answer
		title = fmt.Sprintf("Copies not overlapped with kernels take %.0f%% of the step, most of the copy time device-to-device", pct(s.share[Copy]))
		change = "the copies stay on the device: find the ops that issue them (copy_, contiguous, clone, cat, index_put) and avoid them with views, in-place ops or the layout the next op wants; torch.compile removes many"
		where = append(where, s.topOps(2, false, "aten::copy_", "contiguous", "clone", "aten::cat")...)
	case !pageable:
		change = orTry("the copies already come from pinned memory: overlap them with compute on a side stream (non_blocking=True)", "keep the data on the device: it is then copied once")
	case s.py != nil:
		// a copy from pageable memory holds the host until it is done:
		// the line that issues it is where the window's samples sit
		where = append(s.pyLines(slices.DeleteFunc(slices.Clone(s.py.Hot), func(l runevidence.Line) bool { return l.Pct < 25 }), 2), where...)
	}
	s.emit(s.finding("copy.h2d", title, s.at(Copy), s.ev[Copy], where, change))
}

// commFinding: comm.exposed.
func (s *state) commFinding() {
	if !s.big(Comm) {
		return
	}
	change := ""
	if !s.syncsEveryMicroBatch() && s.in.Regions != nil && s.in.Regions.GradSync != nil && s.in.Regions.GradSync.Forwards > s.in.Regions.GradSync.Synced {
		// several forwards per update, synced once: no_sync() in
		// place, or a model called twice before one backward
		change = "overlap communication with backward: DDP bucket_cap_mb, gradient_as_bucket_view=True; fewer, larger collectives (the gradients already sync once per optimizer update)"
	}
	f := s.finding("comm.exposed", fmt.Sprintf("Communication not overlapped with compute takes %.0f%% of the step", pct(s.share[Comm])), s.at(Comm), s.ev[Comm], s.topOps(3, false, "nccl", "gloo", "all_reduce", "allreduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all"), change)
	if n, w, partial := s.partialRanks(); partial {
		f.Measured = append(f.Measured, Evidence{fmt.Sprintf("ranks in the input: %d of %d", n, w), 0, "", "distributedInfo"})
		f.Change = thenDo(fmt.Sprintf("a collective waits for the slowest rank and this input holds %d of %d ranks: analyze all ranks together (bottleneck analyze DIR) to tell a straggler from the network", n, w), f.Change)
		if s.d.Verdict.Primary != Comm { // else the verdict's confidence, already lowered
			f.Confidence = lower(f.Confidence)
		}
	}
	s.emit(f)
}

// memoryCapacityFinding: memory.capacity.
func (s *state) memoryCapacityFinding() {
	if len(s.ev[Memory]) == 0 {
		return
	}
	s.emit(s.finding("memory.capacity", "Device memory is near capacity", 0, s.ev[Memory], nil, ""))
}

// cpuNativeFinding: cpu.native.
func (s *state) cpuNativeFinding() {
	if !s.big(CPUCompute) {
		return
	}
	var where []Location
	var try map[string]string // the run-time change for run --verify
	if s.py != nil {
		where = s.pyLines(s.py.Hot, 2)
	}
	nPy := len(where)
	where = append(where, s.topOps(3, true)...)
	change, fam, lead, attention := s.cpuOpsChange()
	ms := slices.Concat(s.ev[CPUCompute], fam)
	where = slices.Insert(where, 0, attention...)
	nPy += len(attention)
	if c, ev, loc, ok := s.outsideModelChange(fam); ok {
		change, ms = thenDo(c, change), append(ms, ev)
		where = slices.Concat(loc, where[nPy:])
		nPy = len(loc)
	}
	if c, ev, loc := s.float64Change(false); c != "" {
		change, ms = c, append(ms, ev...)
		where = slices.Insert(where, 0, loc...)
		nPy += len(loc)
	}
	if c, ev := s.emulatedAutocast(); c != "" {
		change, ms = c, append(ms, ev...)
		where = slices.Insert(where, 0, Location{Kind: "python", Name: "autocast", File: s.py.CPUAutocast.File, Line: s.py.CPUAutocast.Line, Note: "autocast on the CPU to " + s.py.CPUAutocast.DType})
	}
	if d, ok := s.cpuDemand(); ok {
		ms = append(ms, Evidence{"torch intra-op threads", float64(d.threads), "", "env"}, Evidence{"usable CPUs", float64(d.cpus), "", "env"})
		// more threads only where the CPUs are idle: with DataLoader
		// workers or several ranks, all cores are not torch's, and a
		// main thread that waits for a CPU shows that others use them
		if fit := d.fitThreads(); !d.oversubscribed() && fit > d.threads && !s.waitsForCPU() && !d.busy() {
			// the program's own call, named: a CNN trainer's
			// torch.set_num_threads(1), copied from a cluster job
			// script, was at the finding's third location only
			held := ""
			if c := s.in.Run.SetThreads; c != nil {
				held = fmt.Sprintf(" (torch.set_num_threads(%s) at %s:%d)", callValue(c.Value), filepath.Base(c.File), c.Line)
			}
			change = thenDo(fmt.Sprintf("torch uses %s%s and %s free: %s", units.Things(d.threads, "thread"), held, cpusFree(d.cpus-d.want), s.threadKnob(fit)), change)
			try = map[string]string{"threads": fmt.Sprint(fit)}
			where = slices.Insert(where, nPy, s.threadSetting()...) // before the ops: the report shows the first few
		}
	}
	if r, per, ok := s.optimizerStep(); ok && !r.MultiTensor && !r.Closure && per >= optimizerNativeShare*s.share[CPUCompute]*s.step {
		// the update's own ops are most of the native time: no op
		// family or torch.compile(model) reaches them (AdamW over 6M
		// parameters after a bf16 forward: 57% of the native time;
		// 27-36 ms a step, 18-22 ms with fused=True)
		change = thenDo(fmt.Sprintf("the optimizer's update (%s%s) takes %.0f%% of the native time and runs one parameter at a time: %s", r.Name, s.stepSiteRef(r.Name), pct(per/(s.share[CPUCompute]*s.step)), cpuUpdateFix(r)), change)
		if o := s.runOptimizer(r.Name); o != nil && o.StepSite != nil {
			site := Location{Kind: "python", Name: o.StepSite.Func, File: o.StepSite.File, Line: o.StepSite.Line, Note: "calls " + o.Class + ".step()"}
			where = slices.Insert(slices.DeleteFunc(where, func(l Location) bool { return l.Kind == "python" && l.File == site.File && l.Line == site.Line }), 0, site)
		}
	}
	change = thenDo(lead, change)
	f := s.finding("cpu.native", fmt.Sprintf("Native ops take %.0f%% of the step on the CPU", pct(s.share[CPUCompute])), s.at(CPUCompute), ms, where, change)
	f.Try = try
	s.emit(f)
}

// hostWhere is where the host's time goes: the program's hottest lines,
// then the frames the host waited in.
func (s *state) hostWhere() []Location {
	var where []Location
	if s.py != nil {
		where = s.pyLines(s.py.Hot, 3)
	}
	return append(where, s.hostWaitFrames()...)
}

// launchFinding: host.launch, when the host's share is launching kernels.
func (s *state) launchFinding() {
	if _, ok := s.share[Launch]; !ok || !s.big(Launch) {
		return
	}
	where := append(s.hostWhere(), s.topOps(3, true)...)
	change := s.servingEngineChange()
	if lead, ok := s.oneSampleSteps(); ok {
		change = thenDo(lead, cmp.Or(change, rule("host.launch").Change))
	}
	s.emit(s.finding("host.launch", fmt.Sprintf("Tiny kernels: the device idles %.0f%% of the step waiting for launches", pct(s.share[Launch])), s.at(Launch), s.ev[Launch], where, change))
}

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
	title := fmt.Sprintf("The device idles %.0f%% of the step while the host runs Python and framework code", pct(busy))
	if s.hostOnPath > 0 {
		title = fmt.Sprintf("The host's work holds %.0f%% of the step: the device runs beside it, then waits for it", pct(busy))
	}
	change := ""
	if !s.device {
		title = fmt.Sprintf("Python between ops takes %.0f%% of the step", pct(busy))
		change = orTry("take the Python work out of the step: vectorise it with tensor ops, or precompute it", "move it into a Dataset loaded by DataLoader workers, which run it beside the step")
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
		change = decodeChange(s.decoding(), s.share[GPUCompute])
	case in < s.p.ModuleOverhead*busy:
	case busy >= s.share[CPUCompute]:
		// the Python is torch's own, calling modules whose ops
		// take less time than it
		change = fmt.Sprintf("most of this Python time (~%.0f%% of the step) is inside nn.Module calls (__call__, hooks, Sequential's loop, each layer's forward), the modules' ops too small to pay for it: %s", pct(in), s.compileChange("them into one graph"))
		change = orTry(change, "give each call more work (a larger batch, fewer and wider layers): the same Python then pays for more")
	default:
		// the modules' own Python beside larger ops: no DataLoader
		// or vectorising of the program's code touches it (batch-1
		// inference of a small transformer: 36% Python, 64% ops,
		// got "move it into a Dataset loaded by DataLoader workers")
		change = fmt.Sprintf("most of this Python time (~%.0f%% of the step) runs inside nn.Module calls (__call__, hooks, each layer's forward code), beside the ops it calls: %s", pct(in), s.compileChange("them into one graph"))
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
		change = thenDo("inference on one sample per step (DataLoader batch_size=1): batch the samples, which pays this Python once per batch", cmp.Or(change, rule("host.python").Change))
	}
	s.emit(s.finding("host.python", title, busy*s.step, s.ev[Host], where, change))
}
