package diagnose

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "cpu.native", Class: CPUCompute, Factor: 0.5,
	When: "CPU-only: time inside native ops >= MinFinding of the step; saving: native ops made 2x faster",
	Change: orTry(orTry(orTry("native ops are the limit: use all cores (torch.set_num_threads)",
		"bf16 autocast or channels_last where the CPU supports them"),
		"torch.compile, which fuses small ops"),
		"an accelerator"),
	detect: (*state).cpuNativeFinding,
	Fires:  "driver.TestVerdictCorpus/dtu_mlops_cpu", Silent: "driver.TestVerdictCorpus/unmarked_decode_annotated",
})

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
	opsChange := change // nativeTry makes it, where it stays first
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
		if fit, ok := s.moreThreads(); ok {
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
	if r, per, ok := s.optimizerStep(); ok && !r.MultiTensor && !r.Closure && !s.sparseGrads(r.Name) && per >= s.p.OptimizerNativeShare*s.share[CPUCompute]*s.step {
		// the update's own ops are most of the native time: no op
		// family or torch.compile(model) reaches them (AdamW over 6M
		// parameters after a bf16 forward: 57% of the native time;
		// 27-36 ms a step, 18-22 ms with fused=True)
		change = thenDo(fmt.Sprintf("the optimizer's update (%s%s) takes %.0f%% of the native time and runs one parameter at a time: %s", r.Name, s.stepSiteRef(r.Name), pct(per/(s.share[CPUCompute]*s.step)), s.cpuUpdateFix(r)), change)
		if o := s.runOptimizer(r.Name); o != nil && o.StepSite != nil {
			site := Location{Kind: "python", Name: o.StepSite.Func, File: o.StepSite.File, Line: o.StepSite.Line, Note: "calls " + o.Class + ".step()"}
			where = slices.Insert(slices.DeleteFunc(where, func(l Location) bool { return l.Kind == "python" && l.File == site.File && l.Line == site.Line }), 0, site)
		}
	}
	change = thenDo(lead, change)
	f := s.finding("cpu.native", fmt.Sprintf("Native ops take %.0f%% of the step on the CPU", pct(s.share[CPUCompute])), s.at(CPUCompute), ms, where, change)
	if try == nil && lead == "" && change == opsChange {
		try = s.nativeTry
	}
	f.Try = try
	if try == nil && lead == "" && s.noProgramChange(fam) {
		f.SavingUs, f.SavingPct, f.SavingMethod = 0, 0, "share"
	}
	s.emit(f)
}

// noProgramChange: the op families' change (cpuFamilyChange, by its
// evidence fam) leaves the program on this machine nothing to change, so
// the time is at stake and no saving is promised: no change is known to
// make sparse products faster; torch.compile, the change for ops no
// family dominates, cannot compile a double backward (a PINN's one
// L-BFGS step was promised 30% by a change that then said "not here");
// and large matmuls or fused recurrent layers on a CPU without bfloat16
// instructions leave an accelerator alone, where nothing else is named
// (pytorch/examples' word language model on an AVX2 CPU, matmuls 53% in
// calls of 80 ms, was promised 25% by a change that said only that).
func (s *state) noProgramChange(fam []Evidence) bool {
	has := func(label string) bool {
		return slices.ContainsFunc(fam, func(e Evidence) bool { return e.What == label })
	}
	switch {
	case has(sparseProductsLabel):
		return true
	case has(fusableShareLabel):
		return !s.compiled() && s.doubleBackward() != ""
	case has(largeGEMMLabel), has(rnnShareLabel) && !has(rnnCallsLabel):
		return s.bf16Advice() == ""
	}
	return false
}

// moreThreads is the intra-op thread count cpu.native advises, where the
// CPUs are idle: with DataLoader workers or several ranks, all cores are
// not torch's, and a main thread that waits for a CPU shows that others
// use them.
func (s *state) moreThreads() (int, bool) {
	d, ok := s.cpuDemand()
	if !ok {
		return 0, false
	}
	fit := d.fitThreads()
	return fit, !d.oversubscribed() && fit > d.threads && !s.waitsForCPU() && !d.busy()
}

var _ = addRule(Rule{
	ID: "cpu.oversubscribed", Class: CPUCompute, Factor: 0.5,
	When:   "run evidence: local ranks × (intra-op threads + DataLoader workers busy, by their samples where sampled) > usable CPUs, and the CPU side of the step (native ops, DataLoader wait, host work) >= MinFinding; with the step thread's measured wait for a CPU, at stake is that wait, and under CPUWaitNote nothing",
	Change: "give each process its share of the CPUs: OMP_NUM_THREADS / torch.set_num_threads so that ranks × (threads + workers) <= CPUs",
	detect: (*state).oversubscriptionFinding,
	Fires:  "TestOversubscription", Silent: "TestOversubscription",
})

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
	workers := d.busyWorkers
	if workers >= perRank {
		workers = max(perRank-1, 0)
	}
	threads := max(perRank-workers, 1)
	cpus := fmt.Sprintf("the %d CPUs", d.cpus)
	if q := s.in.Run.Env.CPUQuota; q > 0 {
		// torch counts the CPUs the process may run on, not its quota
		cpus = fmt.Sprintf("the %s its cgroup's quota allows (%s of CPU time a second; torch sized its threads by the CPUs it may run on)", units.Things(d.cpus, "CPU"), units.Seconds(q))
	}
	change := fmt.Sprintf("give each process its share of %s: OMP_NUM_THREADS=%d (or torch.set_num_threads(%d) at start)", cpus, threads, threads)
	if src := s.threadSource(); src != "" {
		change += "; the " + fmt.Sprint(d.threads) + " threads come from " + src
	}
	if workers != d.busyWorkers {
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
	workersBusy := fmt.Sprint(d.workers)
	if d.busyWorkers < d.workers {
		workersBusy = fmt.Sprintf("%d of %d", d.busyWorkers, d.workers)
		ms = append(ms, Evidence{"DataLoader workers busy (their samples)", float64(d.busyWorkers), "", "evidence"})
	}
	if q := s.in.Run.Env.CPUQuota; q > 0 {
		ms = append(ms, Evidence{"CPU quota of the process's cgroup (CPUs a period)", q, "", "env"})
	}
	title := fmt.Sprintf("%d threads want the CPU at once on %s: %d process(es) × (%d intra-op threads + %s DataLoader workers)", d.want, units.Things(d.cpus, "CPU"), d.ranks, d.opThreads, workersBusy)
	f := s.finding("cpu.oversubscribed", title, atStake*s.step, ms, append(s.threadSetting(), s.interopSetting()...), change)
	if workers == d.busyWorkers && threads < d.threads {
		f.Try = map[string]string{"threads": fmt.Sprint(threads)}
	}
	s.emit(f)
}

var _ = addRule(Rule{
	ID: "cpu.tiny-ops", Class: Overhead, Factor: 0.7,
	When:   "CPU-only: >= TinyOpsPerStep ops per step, <= TinyOpUs µs of step per op (steps outside the profiler window when the run evidence has them) and >= TinySelfShare of the ops' self time in calls of <= TinyOpUs each; the whole native-op share is then framework overhead, >= MinFinding",
	Change: "issue fewer, larger ops: batch the per-layer or per-parameter loop into one op over stacked tensors (torch.stack/cat, bmm, one Linear over the concatenated features), torch._foreach_* ops for a per-parameter update" + tinyOpsCompile + "; an unfused optimizer holding >= a third of the time at stake comes first: fused=True (Adam, AdamW, SGD, Adagrad) or torch._foreach_* ops for another",
	detect: (*state).tinyOpsFinding,
	Fires:  "TestTinyOps", Silent: "TestTinyOpsLessCPUWait",
})

// tinyOpsCompile is the rule's change's torch.compile, left out of a run
// whose steps take less in all than a compile (compileFloorS).
const tinyOpsCompile = ", or torch.compile to fuse the small ops (an experiment: seconds to minutes of compiling first, and a model of tiny ops may gain nothing)"

// tinyOpsChange is the rule's change, for this run.
func (s *state) tinyOpsChange() string {
	c := rule("cpu.tiny-ops").Change
	if why := s.compileTooLong(); why != "" {
		c = strings.Replace(c, tinyOpsCompile, " (torch.compile "+why+")", 1)
	}
	return c
}

// tinyOpsOptimizer is the unfused optimizer whose update holds enough
// of the per-op overhead (TinyOptimizerShare) that cpu.tiny-ops's change
// leads with it, and its time per step.
func (s *state) tinyOpsOptimizer() (regions.Region, float64, bool) {
	r, per, ok := s.optimizerStep()
	return r, per, ok && !r.MultiTensor && !s.sparseGrads(r.Name) && per >= s.p.TinyOptimizerShare*s.share[Overhead]*s.step
}

// tinyOpsReach is the part of the per-op overhead cpu.tiny-ops's change
// takes out: the update's, where the optimizer's fix leads (fused=True
// makes the update a few ops and leaves the model's as they are:
// stable-baselines3's PPO on CartPole, its Adam 24% of the step, was
// promised 46% from all of the overhead and measured 1.22-1.38x a
// step); else all of it, as where batching the samples or float32 leads
// before it (every op then does more work, or less).
func (s *state) tinyOpsReach() float64 {
	_, per, ok := s.tinyOpsOptimizer()
	if !ok || s.share[Overhead] <= 0 {
		return 1
	}
	if _, one := s.oneSampleSteps(); one {
		return 1
	}
	if c, _, _ := s.float64Change(false); c != "" {
		return 1
	}
	return min(1, per/(s.share[Overhead]*s.step))
}

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
	var ownCode []Location // where the program's own code issues the ops (tinyOpsSource)
	// An unfused optimizer that holds a good part of the overhead has a
	// one-argument fix; the generic advice would bury it (a 60-layer MLP
	// under AdamW measured here: 11.6 ms a step, 7.5 ms with fused=True,
	// 9.7 ms with foreach=True).
	if r, per, ok := s.tinyOpsOptimizer(); ok {
		fix := foreachUpdate
		if fusedOnCPU[optimizerClass(r.Name)] {
			fix = "fused=True makes it a few ops in all (torch 2.4 and later)"
			if v, old := s.torchBefore(2, 4); old {
				fix = oldTorchFused(v)
			}
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
		if change, ownCode = s.tinyOpsSource(); len(ownCode) > 0 {
			where = append(ownCode, slices.DeleteFunc(where, func(l Location) bool {
				return slices.ContainsFunc(ownCode, func(m Location) bool { return m.File == l.File && m.Line == l.Line })
			})...)
		}
	}
	change = cmp.Or(change, s.tinyOpsChange())
	if lead, ok := s.oneSampleSteps(); ok {
		if len(ownCode) > 0 && s.py.OutsideModelShare >= 2*s.py.ModuleShare {
			// the program's own code issues most of the ops, one sample's
			// elements at a time: a batch needs that code written over a
			// batch dimension anyway, and vectorising it comes first (a
			// BiLSTM-CRF's forward algorithm, a loop over tags calling
			// log-sum-exp on one row each: 3.5x once one logsumexp over
			// the tags' matrix, one sentence a step still)
			change = thenDo(change, lead)
		} else {
			change = thenDo(lead, change)
		}
	}
	ms := s.ev[Overhead]
	if c, ev, loc := s.float64Change(false); c != "" {
		// float32 first: the small ops' fixes can lose in float64 (an
		// LSTMCell loop fit with LBFGS: nn.LSTM in its place ran no faster
		// in float64, and 3x faster in float32; docs/diagnosis.md)
		change = thenDo(c, "in float32: "+change)
		ms = append(slices.Clone(ms), ev...)
		where = slices.Insert(where, 0, loc...)
	}
	title := fmt.Sprintf("%.0f ops per step, one per %s of step: the %.0f%% of the step in native ops is per-op framework overhead", t.perStep, units.Duration(t.stepUsPerOp), pct(s.share[Overhead]))
	s.emit(s.finding("cpu.tiny-ops", title, s.share[Overhead]*s.step, ms, where, change))
}
