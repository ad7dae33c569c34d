package diagnose

import (
	"fmt"
	"math"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/whatif"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Predicting a fix (docs/diagnosis.md, "What a fix saves"): each class's
// usual fix, and the rules with a fix of their own, is a transformation
// of the replayed steps (internal/analysis/whatif) that takes the rule's
// Factor of the time it touches. The replay says how much of the time
// taken out shortens the step. A class's saving is its fix's replayed
// saving; a finding's is its rule's fix replayed, or, for a rule without
// a transformation of its own, its time at stake × Factor × the reach of
// its class's fix (the part of the time taken out that shortens the
// step). Work hidden behind other work reaches nothing: kernels made
// faster under a host that is the step's critical path save nothing, as
// the path says. A saving can exceed the class's share: the share is the
// time the class has to itself (the step breakdown gives time where the
// host and the device both run to the device), and a host that runs
// beside the device for most of the step and is its critical path saves
// what the replay finds.

// fixes maps a class, or a rule with a fix of its own, to the rule whose
// Factor the transformation takes out, and how it applies it.
var fixes = []struct {
	id    string // class (verdict classes) or rule id
	rule  string
	what  string
	apply func(f *whatif.Fix, keep float64)
}{
	{string(Input), "input.loader", "DataLoader waits cut to KEEP", func(f *whatif.Fix, k float64) { f.Host[whatif.Loader] = k }},
	{string(Host), "host.python", "host work (Python, ops, runtime calls) cut to KEEP", hostScale},
	{string(Launch), "host.launch", "host work issuing the kernels (Python, ops, launch calls) cut to KEEP", hostScale},
	{string(GPUCompute), "gpu.kernels", "computation kernels cut to KEEP of their time", func(f *whatif.Fix, k float64) { f.Compute = k }},
	{string(Copy), "copy.h2d", "copies and memsets cut to KEEP of their time, the host not waiting on copies to the device", func(f *whatif.Fix, k float64) { f.Copy, f.CopyWaits = k, true }},
	{string(Sync), "sync.blocking", "blocking syncs removed: the host runs ahead", func(f *whatif.Fix, _ float64) { f.Syncs = true }},
	{string(Comm), "comm.exposed", "communication kernels and host-side collectives cut to KEEP of their time", func(f *whatif.Fix, k float64) { f.Comm, f.Host[whatif.Comm] = k, k }},
	{string(CPUCompute), "cpu.native", "CPU ops cut to KEEP of their time", func(f *whatif.Fix, k float64) { f.Host[whatif.Op] = k }},
	{string(Overhead), "cpu.tiny-ops", "CPU ops cut to KEEP of their time", func(f *whatif.Fix, k float64) { f.Host[whatif.Op] = k }},
	{hostPath, "host.python", "host work (Python, ops, runtime calls) removed", func(f *whatif.Fix, _ float64) { hostScale(f, 0) }},
	{"gpu.precision", "gpu.precision", "fp32 matmul/conv kernels on CUDA cores cut to KEEP of their time", func(f *whatif.Fix, k float64) { f.FP32Math = k }},
	{"host.optimizer", "host.optimizer", "host work inside Optimizer.step cut to KEEP", func(f *whatif.Fix, k float64) { f.Optimizer = k }},
	// the host's calls stay: they launch as many kernels
	{"input.padding", "input.padding", "computation kernels cut to KEEP of their time (each batch padded to its own longest sequence)", func(f *whatif.Fix, k float64) { f.Compute = k }},
}

// hostPath removes the host's work: what the replay saves is the host's
// hold on the step's critical path (the host's share on a device trace).
const hostPath = "host-bound (removed)"

func hostScale(f *whatif.Fix, k float64) {
	f.Host[whatif.Python], f.Host[whatif.Op], f.Host[whatif.Runtime] = k, k, k
}

// pairClasses are the classes whose fixes are also replayed two at a time
// (device traces: where overlap makes fixes interact).
var pairClasses = []Class{Input, Host, GPUCompute, Copy, Sync, Comm}

// replayedFixes are the transformations replayed for the diagnosis: each entry of
// fixes, and each pair of pairClasses' fixes. Without a Python profile,
// the host's stretches where nothing was recorded are not known to be
// Python (a wait the trace does not show looks the same: the breakdown
// calls them Other, the diagnosis unexplained), so no fix shortens them.
// Two fixes take what they keep from the device rather than the rule's
// Factor: precision from its peaks, pinned copies from its host link.
func (s *state) replayedFixes(pythonKnown bool) []whatif.Fix {
	var out []whatif.Fix
	byID := map[string]whatif.Fix{}
	for _, x := range fixes {
		keep := 1 - rule(x.rule).Factor
		what, pageable := x.what, 1.0
		switch x.id {
		case string(Input):
			if k, n, ok := s.loaderKeep(); ok {
				keep, what = k, fmt.Sprintf("DataLoader waits cut to KEEP (%d workers: what they cannot produce while the rest of the step runs)", n)
			}
		case "input.padding":
			k, ok := s.paddingKeep()
			if !ok {
				continue
			}
			keep = k
		case "gpu.precision":
			if k, unit, ok := s.precisionKeep(); ok {
				keep, what = k, strings.Replace(what, "cut to", "on "+unit+" cut to", 1)
			}
		case string(Copy):
			if k, from, to, ok := s.pageableKeep(); ok {
				pageable = k
				what = fmt.Sprintf("copies from pageable memory at the pinned rate (%.1f -> %.1f GB/s), other %s", from, to, what)
			}
		}
		f := whatif.Identity(x.id, strings.ReplaceAll(what, "KEEP", fmt.Sprintf("%.0f%%", 100*keep)))
		x.apply(&f, keep)
		f.Pageable = pageable
		if !pythonKnown {
			f.Host[whatif.Python], f.UnrecordedWaits = 1, true
		}
		out = append(out, f)
		byID[x.id] = f
	}
	for i, a := range pairClasses {
		for _, b := range pairClasses[i+1:] {
			out = append(out, whatif.Join(byID[string(a)], byID[string(b)]))
		}
	}
	return out
}

// replay predicts every fix on the replayed steps. When the profiler's
// per-op cost lengthened the window's steps (windowNote), the baseline
// first takes it out of the host's work: the host's stretches are scaled
// until the replayed step is as much shorter as the steps outside the
// window are (their median against the window's), so that the fixes are
// weighed against the program as it runs unprofiled (an H100 at 1.97 ms
// of kernels a step: 3.15 ms steps in the window, the host the limit;
// 2.34 ms without the profiler, the device nearly so).
func (s *state) replay() {
	m := s.in.Replay
	if m == nil {
		return
	}
	base := whatif.Identity("", "")
	if s.deviceRecorded() && s.profilerUs > 0 && s.unprofiledUs > 0 {
		unchanged, _ := m.Replay(base)
		k := hostShareFor(unchanged*s.unprofiledUs/(s.unprofiledUs+s.profilerUs), func(k float64) float64 {
			step, _ := m.Replay(s.profilerCut(k))
			return step
		})
		base = whatif.Identity("unprofiled", fmt.Sprintf("the profiler's own cost taken out of the host's work (ops and runtime calls cut to %.0f%%), so that the replayed step is as much shorter as the steps outside the window (median %s against %s)",
			100*k, units.Duration(s.unprofiledUs), units.Duration(s.unprofiledUs+s.profilerUs)))
		hostScale(&base, k)
		base.Host[whatif.Python] = 1
	}
	base.UnrecordedWaits = s.py == nil
	s.d.WhatIf = m.Predict(base, s.replayedFixes(s.py != nil))
}

// profilerCut is the replay with the host's ops and runtime calls cut to
// k of their time, where the profiler's per-op cost is; its Python
// between them kept.
func (s *state) profilerCut(k float64) whatif.Fix {
	f := whatif.Identity("", "")
	hostScale(&f, k)
	f.Host[whatif.Python], f.UnrecordedWaits = 1, s.py == nil
	return f
}

// hostShareFor is the scale k in [0, 1] of the host's work at which the
// replayed step, step(k), is target long; step grows with k and is
// piecewise linear (a replay), so regula falsi (the Illinois method: a
// stale end's value halved) finds k in a few replays where bisection
// took 24, and a step that did not halve the bracket is followed by a
// bisection, for a flat stretch (the device the limit) beside the root.
// A target below step(0) gives 0 (the host's work cannot shrink the
// step enough), one above step(1) gives 1.
func hostShareFor(target float64, step func(k float64) float64) float64 {
	lo, hi := 0.0, 1.0
	flo, fhi := step(0)-target, step(1)-target
	if flo >= 0 {
		return 0
	}
	if fhi <= 0 {
		return 1
	}
	side, bisect := 0, false
	for hi-lo > 1e-7 {
		width, k := hi-lo, (lo+hi)/2
		if !bisect {
			k = (lo*fhi - hi*flo) / (fhi - flo)
		}
		fk := step(k) - target
		if math.Abs(fk) <= 1e-9*target {
			return k
		}
		if fk > 0 {
			hi, fhi = k, fk
			if side == 1 {
				flo /= 2
			}
			side = 1
		} else {
			lo, flo = k, fk
			if side == -1 {
				fhi /= 2
			}
			side = -1
		}
		bisect = !bisect && hi-lo > width/2
	}
	return lo
}

// precisionKeep is the part of their time fp32 matmuls and convolutions on
// CUDA cores keep on tensor cores: TF32 where the device has it at twice
// its fp32 rate or more (the least change: no autocast), else fp16/bf16;
// the ratio of the peaks × TensorEfficiency, at most 8x faster, never
// slower. ok is false for a device not in the peak table.
func (s *state) precisionKeep() (keep float64, unit string, ok bool) {
	p, ok := s.devicePeak()
	if !ok || p.FP32 <= 0 {
		return 0, "", false
	}
	tensor, unit := p.TF32, "TF32 tensor cores"
	if tensor < 2*p.FP32 {
		tensor, unit = max(p.FP16, p.BF16), "fp16/bf16 tensor cores"
	}
	return min(1, max(1.0/8, p.FP32/(s.p.TensorEfficiency*tensor))), unit, tensor > 0
}

// pageableKeep is the part of their time copies to or from pageable host
// memory keep when the memory is pinned: their measured rate over the
// pinned rate, the faster of the trace's fastest pinned copy (1 MB or
// more) and PinnedLinkShare of the device's host link. ok is false when
// the trace has no pageable copy or no pinned rate is known.
func (s *state) pageableKeep() (keep, pageableGBs, pinnedGBs float64, ok bool) {
	g := s.in.GPU
	if g == nil {
		return 0, 0, 0, false
	}
	var bytes int64
	var us float64
	for _, d := range g.Devices {
		for _, m := range d.Memcpy {
			switch {
			case m.HostMemory == "pageable":
				bytes, us = bytes+m.Bytes, us+m.TimeUs
			case m.HostMemory == "pinned" && m.Bytes >= 1e6:
				pinnedGBs = max(pinnedGBs, m.BandwidthGBps)
			}
		}
	}
	if p, ok := s.devicePeak(); ok {
		pinnedGBs = max(pinnedGBs, s.p.PinnedLinkShare*p.HostLinkGBs)
	}
	if bytes <= 0 || us <= 0 || pinnedGBs <= 0 {
		return 0, 0, 0, false
	}
	pageableGBs = float64(bytes) / (us * 1000)
	return min(1, pageableGBs/pinnedGBs), pageableGBs, max(pinnedGBs, pageableGBs), true
}

// devicePeak is the peak table's entry for the trace's first named device.
func (s *state) devicePeak() (flops.Peak, bool) {
	if g := s.in.GPU; g != nil {
		for _, d := range g.Devices {
			if d.Name != "" {
				return flops.PeakFor(d.Name)
			}
		}
	}
	return flops.Peak{}, false
}

// prediction is the replay of the fix named id, when the replay is
// trusted and the fix takes out enough of the step to measure its reach.
//
// On a CPU-only trace the replay is one timeline, so every fix saves its
// time × its factor there: the share × factor is the same prediction,
// with the corrections only the run's evidence knows (garbage collection,
// the GIL, I/O, the agent's measured waits), so it is used instead.
func (s *state) prediction(id string) (whatif.Prediction, bool) {
	w := s.d.WhatIf
	if !w.Trusted(s.p.MaxBaselineErrorPct) || !s.deviceRecorded() {
		return whatif.Prediction{}, false
	}
	p, ok := w.Find(id)
	return p, ok && p.RemovedPct >= s.p.MinRemovedPct
}

// classSaving is what class c's usual fix saves in the replay, as a share
// of the step, when it was replayed and the class's time is the trace's
// (an input share the agent measured beyond the trace's DataLoader time
// is weighed by its share: the replay cannot see it).
func (s *state) classSaving(c Class) (whatif.Prediction, bool) {
	p, ok := s.prediction(string(c))
	if !ok {
		return p, false
	}
	if c == Input {
		w := s.d.WhatIf
		if trace := w.HostUs[whatif.CategoryNames[whatif.Loader]] / w.MeasuredUs; s.share[Input] > trace+s.p.MinFinding {
			return p, false
		}
	}
	return p, true
}

// waitWithWorkers is the DataLoader wait left, of in in a step of step, when
// the loader the step waits for loads in advisedWorkers workers: a
// batch's load over the workers, less the rest of the step, which runs
// meanwhile (the step becomes the longer of the two). A batch's load is
// the wait where the main process loads (num_workers=0), and the step
// times the workers where workers already load and the step waits for
// them (each turns out a batch every that many steps). An H200 fed by 8
// workers waited for none of its batches (a fixed 10% of the wait kept
// predicted 4.8x; measured 8.5x).
func (s *state) waitWithWorkers(in, step float64) (wait float64, workers int, ok bool) {
	from, n, ok := s.moreWorkers()
	if !ok || in <= 0 || s.workersShareCPUs() {
		return 0, 0, false
	}
	load := in
	if from > 0 {
		load = float64(from) * step
	}
	return max(0, load/float64(n)-(step-in)), n, true
}

// loaderKeep is the part of the trace's DataLoader waits waitWithWorkers
// leaves (the input fix's replay).
func (s *state) loaderKeep() (keep float64, workers int, ok bool) {
	b := s.in.Breakdown
	if b == nil {
		return 0, 0, false
	}
	in := b.Average.DataLoaderUs
	wait, n, ok := s.waitWithWorkers(in, b.Average.TotalUs)
	if !ok {
		return 0, 0, false
	}
	return min(1, wait/in), n, true
}

// workersSaving is the share of the step that loading in advisedWorkers
// workers saves, from the shares alone (no replay).
func (s *state) workersSaving() (float64, bool) {
	in := min(1, s.share[Input])
	wait, _, ok := s.waitWithWorkers(in, 1)
	return max(0, in-wait), ok
}

// advisedWorkers is the num_workers the input change proposes: the
// machine's CPUs but one, at most MaxWorkers (4 when unknown). Loading
// that waits (its line off the CPU: a sleep, a read) needs no CPU, so
// then as many as hide a batch's load behind the rest of the step, up to
// MaxWorkers, whatever the CPUs (a Dataset sleeping 5 ms a sample on 2
// CPUs got one worker and measured 1.02x).
func (s *state) advisedWorkers() int {
	n := 4
	if r := s.in.Run; r != nil && r.Env != nil && r.Env.CPUs > 0 {
		n = min(max(r.Env.CPUs-1, 1), s.p.MaxWorkers)
	}
	if in := s.share[Input]; s.loadingWaits() && in > 0 {
		n = max(n, min(s.p.MaxWorkers, int(math.Ceil(in/max(1-in, 1/float64(s.p.MaxWorkers))))))
	}
	return n
}

// workersShareCPUs: no accelerator, the main process's intra-op threads
// take every usable CPU, the rest of the step is mostly those threads'
// native ops, and the loading computes (it does not wait): workers would
// load on the CPUs the step's ops already use, so overlapping them with
// the step hides no time. pytorch/examples' mnist_rnn on 2 CPUs (2
// intra-op threads, an LSTM step, PIL and ToTensor loading 63% of the
// step) was told num_workers=1 would save 37%: 100 steps took 1.27-1.84x
// longer with it (6 quiet pairs, 10.8-13.2 ms against 15.9-20.3 ms).
func (s *state) workersShareCPUs() bool {
	r := s.in.Run
	if s.usesGPU || r == nil || r.Env == nil || r.Env.CPUs <= 0 || r.Env.NumThreads < r.Env.CPUs || s.loadingWaits() {
		return false
	}
	rest := 1 - min(1, s.share[Input])
	return rest > 0 && s.share[CPUCompute] >= s.p.WorkersShareNative*rest
}

// loadingWaits: the main thread's samples in DataLoader code were off
// the CPU (neither on one nor waiting for one) in at least
// LoaderWaitsShare of them.
func (s *state) loadingWaits() bool {
	return s.py != nil && s.py.LoaderOffCPU >= s.p.LoaderWaitsShare
}

// restartSaving is the share of the run's step time that workers kept
// from one epoch to the next (persistent_workers=True, or a DataLoader
// made once) save a loader that starts them anew each epoch
// (Loader.RestartsWorkers): making and ending the iterators, and of each
// epoch's first wait what exceeds a batch's loading. Kept workers still
// load each epoch's first batch after iter() (torch's workers prefetch
// nothing across epochs), and a worker loads a batch in at most
// NumWorkers median steps (the workers keep the steps fed, or the steps
// wait for them), so that much of each first wait stays: a lower bound.
// The first epoch still starts its workers. pytorch/examples' dcgan on an
// H200 (fake data, 2 workers, 16 batches an epoch, 80 ms first waits of
// 143 ms epoch starts) was predicted 1.18x when the input class's whole
// replayed fix stood for it, and measured 1.05x (epochs 1-5 as is: 3.25
// and 2.84 s; persistent: 2.86 and 2.94 s). ok is false without the
// run's step times.
func (s *state) restartSaving(l runevidence.Loader) (share float64, ok bool) {
	r := s.in.Run
	if r == nil || r.StepsS <= 0 || r.RunMedianStepS <= 0 || l.Iterators < 2 || l.NumWorkers == nil {
		return 0, false
	}
	n := float64(l.Iterators)
	loading := n * float64(max(1, *l.NumWorkers)) * r.RunMedianStepS // a batch's loading, at most, each epoch
	saved := (n - 1) / n * (l.RestartS + max(0, l.FirstWaitS-loading))
	if l.RestartsTimed > 0 {
		// the steps the restarts were timed in, which hold the fork's
		// copy-on-write faults too, and the workers' shutdown before each
		// making, less the first batch's loading that kept workers still
		// do after each iter()
		timed := (n - 1) * (l.RestartStepsS/float64(l.RestartsTimed) + l.StopS/n - min(l.FirstWaitS, loading)/n)
		saved = max(saved, timed)
	}
	return min(1, saved/r.StepsS), true
}

// moreWorkers: the run's DataLoader the step waits for most loads in
// fewer processes than advisedWorkers (from: 0, the main process; else its
// workers), and the change is advisedWorkers workers (to).
//
// Not when the change leads with something else: loading that reads a
// file per sample (packing the samples removes the reads), a Dataset
// reading a DataFrame row by row (converting the columns once), workers
// started anew each epoch (persistent_workers), workers that mostly wait
// (twice as many), or workers where the CPUs are unknown or full.
func (s *state) moreWorkers() (from, to int, ok bool) {
	r := s.in.Run
	if r == nil || len(r.Loaders) == 0 || s.py != nil && (s.py.LoaderIOShare >= 0.5 || s.py.LoaderDataFrameRows) {
		return 0, 0, false
	}
	// the loader the step waits for, as the input finding judges it
	l := r.Loaders[s.waitedLoader()]
	if l.NumWorkers == nil {
		return 0, 0, false
	}
	from, to = *l.NumWorkers, s.advisedWorkers()
	if from > 0 {
		// room for more: the CPUs known, the workers not waiting for
		// one, and the added workers within each rank's share
		d, ok := s.cpuDemand()
		if w := r.Workers; !ok || d.oversubscribed() || w != nil && w.WaitShare >= s.p.CPUWaitNote || l.RestartsWorkers() || s.workersWait() {
			return 0, 0, false
		}
		to = min(to, d.cpus/d.ranks-d.opThreads)
	}
	return from, to, to > from
}

// findingsStep is the replay's baseline in µs (Diagnosis.FindingsStepUs):
// the recorded mean step less what the baseline took out (the profiler's
// own cost, in the proportion of the window's median step to the run's).
// Not where the shares are the run's (inputRun): its steps ran without
// the profiler.
func (s *state) findingsStep() float64 {
	if w := s.d.WhatIf; w != nil && w.Base != "" && !s.inputRun {
		return s.step * s.unprofiledUs / (s.unprofiledUs + s.profilerUs)
	}
	return s.step
}

// findingPct is a share of the recorded mean step in percent of the
// findings' step (findingsStep), for a finding's title.
func (s *state) findingPct(share float64) float64 { return 100 * share * s.step / s.findingsStep() }

// replayedUs is a prediction's saving per step in µs: its share of the
// replay's baseline.
func (s *state) replayedUs(p whatif.Prediction) float64 {
	return p.SavingPct / 100 * s.findingsStep()
}

// replayedPct is replayedUs in percent of the recorded mean step.
func (s *state) replayedPct(p whatif.Prediction) float64 { return 100 * s.replayedUs(p) / s.step }

// exposedShare: the class's share is the time it leaves the device idle
// (or, for syncs, what the replay without them saves), not all of its
// work: its fix's replayed saving may exceed it. Every other class's share
// is all of its time in the step, which no fix saves more of.
func exposedShare(c Class) bool { return c == Host || c == Launch || c == Sync }

// ruleSaving is what rule id's change saves per step, in µs, and its
// reach: the replay of its own fix (a class's main rule, or a rule with a
// transformation of its own), else the time at stake × its factor × the
// reach of its class's fix (the part of that class's time that shortens
// the step). ok is false when nothing was replayed.
func (s *state) ruleSaving(id string, atStakeUs float64) (savingUs, reachPct float64, ok bool) {
	r := rule(id)
	for _, x := range fixes {
		if x.rule != id {
			continue
		}
		if x.id == hostPath {
			continue
		}
		p, ok := s.prediction(x.id)
		if x.id == string(r.Class) {
			p, ok = s.classSaving(r.Class)
		}
		if ok {
			us := s.replayedUs(p)
			if !exposedShare(r.Class) {
				us = min(us, atStakeUs)
			}
			return us, p.ReachPct, true
		}
	}
	if p, ok := s.classSaving(r.Class); ok {
		return atStakeUs * r.Factor * p.ReachPct / 100, p.ReachPct, true
	}
	if w, ok := s.workersSaving(); ok && id == "input.loader" && w >= s.share[Input]/2 && !s.inMemoryLeads() {
		return min(atStakeUs, w*s.step), 0, false // the change leads with the workers
	}
	switch id {
	case "cpu.native":
		return atStakeUs * r.Factor * s.nativeReach(), 0, false
	case "cpu.tiny-ops":
		return atStakeUs * r.Factor * s.tinyOpsReach(), 0, false
	}
	return atStakeUs * r.Factor, 0, false
}

// together says, when the top class's fix and another's save clearly
// more together than either alone (both are near the critical path: the
// host and the device take turns), what each and both save in the
// replay; "" otherwise. The other class is the one whose pair saves most.
func (s *state) together(top Class, others []ClassScore) string {
	pa, ok := s.prediction(string(top))
	if !ok {
		return ""
	}
	var note string
	bestPair := 0.0
	for _, o := range others {
		pb, ok1 := s.prediction(string(o.Class))
		pab, ok2 := s.prediction(string(top) + "+" + string(o.Class))
		if !ok2 {
			pab, ok2 = s.prediction(string(o.Class) + "+" + string(top))
		}
		a, b, ab := s.replayedPct(pa), s.replayedPct(pb), s.replayedPct(pab)
		if !ok1 || !ok2 || ab < max(a, b)+5 || ab < 1.25*max(a, b) || ab <= bestPair {
			continue
		}
		bestPair = ab
		note = fmt.Sprintf("%s and %s share the path: alone their fixes save %.0f%% and %.0f%%, together %.0f%%",
			top, o.Class, a, b, ab)
	}
	return note
}
