package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/whatif"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// WindowNote says which steps the diagnosis used and whether the recorded
// window shows the program's steady state (the first check, before any
// verdict: docs/diagnosis.md, "Is the window worth diagnosing?").
type WindowNote struct {
	// SteadyState: the window check found it steady state and, with run evidence, its steps are not much slower than the rest of the run.
	SteadyState bool `json:"steady_state"`
	// UsedSteps are the numbers of the steps the verdict's figures average over.
	UsedSteps []string `json:"used_steps"`
	// WholeTrace: the trace has no ProfilerStep marks; its one step "0"
	// is the whole trace.
	WholeTrace bool `json:"whole_trace,omitempty"`
	// StepMarks: the trace has no ProfilerStep marks and its steps are the iterations between repeats of this event.
	StepMarks string `json:"step_marks,omitempty"`
	// Excluded lists the steps left out of every figure the verdict uses,
	// with the reason.
	Excluded []ExcludedStep `json:"excluded_steps,omitempty"`
	// Notes are the window's problems in plain words, most important first.
	Notes []string `json:"notes,omitempty"`
	// CPUWaitPct is the share of the window the main thread waited for a
	// CPU (runnable, not running), when it is enough to inflate the
	// window's times (absent below 10%); the first note says who held
	// the CPUs.
	CPUWaitPct float64 `json:"cpu_wait_pct,omitempty"`
	// Reprofile is how to record a steady-state window instead ("" when
	// the window is fine).
	Reprofile string `json:"reprofile,omitempty"`
}

// ExcludedStep is one step left out, and why.
type ExcludedStep struct {
	// Step is the step number as text.
	Step string `json:"step"`
	// Reason says why it is left out: the window check's reason (carry-over, start-up, graph capture, outlier, cut short) in plain words, or truncated.
	Reason string `json:"reason"`
}

// windowNote fills the diagnosis's window note from the window check and
// the step breakdown (which also drops truncated trailing steps).
func (s *state) windowNote() {
	w, b := s.in.Window, s.in.Breakdown
	if w == nil {
		return
	}
	n := &WindowNote{SteadyState: w.SteadyState, UsedSteps: []string{}, WholeTrace: w.Synthetic, StepMarks: w.StepMarks}
	if b != nil {
		for _, st := range b.Steps {
			switch {
			case st.Excluded:
				n.Excluded = append(n.Excluded, ExcludedStep{st.Name, stepReason(w, st.Name)})
			case st.Incomplete:
				n.Excluded = append(n.Excluded, ExcludedStep{st.Name, "truncated: its device work was cut off by the end of the capture"})
			default:
				n.UsedSteps = append(n.UsedSteps, st.Name)
			}
		}
	}
	if c := w.Carry; c != nil {
		msg := fmt.Sprintf("the device ran work launched before the profiler started until +%s", units.Duration(c.UntilUs))
		if len(w.ExcludedBy(window.CarryOver)) > 0 {
			msg = "the capture started mid-flight: " + msg
		}
		switch {
		case c.Events > 0:
			msg += fmt.Sprintf(" (%d device events with no launch in the trace", c.Events)
		default:
			msg += fmt.Sprintf(" (the first work launched in the window started %s late with nothing recorded ahead of it", units.Duration(c.DelayedUs))
		}
		if c.HostWaitUs > 0 {
			msg += fmt.Sprintf("; the host waited %s on it in a sync", units.Duration(c.HostWaitUs))
		}
		msg += fmt.Sprintf("); after it the device is busy %.0f%% of the window", c.BusyAfterPct)
		if len(w.ExcludedBy(window.CarryOver)) == 0 {
			msg += "; too little of any step to change its figures"
		}
		n.Notes = append(n.Notes, msg)
	}
	if len(w.Startup) > 0 && (w.MedianUs == 0 || w.StartupUs >= s.p.StartupNote*w.MedianUs) {
		var parts []string
		for i, c := range w.Startup {
			if i == 3 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s %s (%s)", c.Name, units.Duration(c.Us), c.Kind))
		}
		n.Notes = append(n.Notes, fmt.Sprintf("one-time start-up costs %s in the window: %s", units.Duration(w.StartupUs), strings.Join(parts, ", ")))
	}
	if w.LastStepCut != "" && len(w.ExcludedBy(window.Cut)) == 0 {
		// its only step, cut inside: the part recorded is that step's
		// start (an LBFGS step, 20 closures of the same forward and
		// backward, that the memory bound closed after ~1 GiB of events)
		n.Notes = append(n.Notes, fmt.Sprintf("the window's only step was recorded in part (%s): its figures are of the part recorded, the step's start", w.LastStepCut))
	}
	if w.RecompileSteps > 0 {
		var steps []string
		for _, x := range w.Recompiles {
			if !slices.Contains(steps, x.Step) {
				steps = append(steps, x.Step)
			}
		}
		n.Notes = append(n.Notes, fmt.Sprintf("torch.compile compiled again in %s of the window (%s; steps %s among them): it recurs, so it is the program's cost, not start-up", units.Things(w.RecompileSteps, "step"), units.Duration(w.RecompileUs), strings.Join(steps, ", ")))
	}
	if g := w.Capture; g != nil {
		n.Notes = append(n.Notes, fmt.Sprintf("graph capture: %d launch calls recorded into CUDA/HIP graphs over %s, not executed", g.Launches, units.Duration(g.Us)))
	}
	if o := w.Overhead; o != nil && o.Pct >= s.p.OverheadPct {
		msg := fmt.Sprintf("profiler overhead (buffer requests and flushes) takes %.1f%% of the steps", o.Pct)
		if o.IdlePct < s.p.OverheadPct {
			msg += fmt.Sprintf(", %.1f%% while the device waited: the rest ran beside device work and does not lengthen them", o.IdlePct)
		}
		n.Notes = append(n.Notes, msg)
	}
	// A main thread waiting for a CPU inflates every time in the window;
	// waiting far more than over the run while other processes held the
	// CPUs, the machine was busy then (the profiler's own threads add to
	// the process's demand in the window, which is no such sign).
	busy := false
	if cw := s.cpuWait(); cw != nil && cw.Window.WaitShare() >= s.p.CPUWaitNote {
		win, run := cw.Window.WaitShare(), cw.Run.WaitShare()
		cause, others, _, _ := s.cpuWaitHolders()
		busy = others && win-run >= s.p.CPUWaitBusy
		n.SteadyState, n.CPUWaitPct = n.SteadyState && !busy, stats.Round1(pct(win))
		// first: it qualifies every figure of the window
		n.Notes = slices.Insert(n.Notes, 0, fmt.Sprintf("the main thread waited for a CPU %.0f%% of the window (%.0f%% over the run): its times are inflated by up to that much; %s",
			100*win, 100*run, cause))
	}
	if g := s.slowing(); g != nil {
		n.SteadyState = false
		what := "the run has no steady state: its steps get slower as it goes on"
		if len(g.Stages) > 0 {
			what = fmt.Sprintf("the run's steps rise in %d stages, each with a steady state of its own, and the window is not in the last", len(g.Stages)+1)
		}
		n.Notes = append(n.Notes, fmt.Sprintf("%s, %s at steps %d-%d, %s at steps %d-%d (the first finding)",
			what, units.Seconds(g.FirstMedianS), g.FirstSteps[0], g.FirstSteps[1], units.Seconds(g.LastMedianS), g.LastSteps[0], g.LastSteps[1]))
	}
	if r := s.in.Run; r != nil && r.BusierMachine != nil {
		g := r.BusierMachine
		n.Notes = append(n.Notes, fmt.Sprintf("the steps got slower as the run went on, %s at steps %d-%d to %s at steps %d-%d, only by waiting longer for a CPU (%s to %s a step): other threads or processes took the CPUs; the program's work did not grow",
			units.Seconds(g.FirstMedianS), g.FirstSteps[0], g.FirstSteps[1], units.Seconds(g.LastMedianS), g.LastSteps[0], g.LastSteps[1],
			units.Seconds(g.FirstWaitS), units.Seconds(g.LastWaitS)))
	}
	if r := s.in.Run; r != nil && r.MoreItems != nil {
		g := r.MoreItems
		model := "the model called on one sample"
		if m, _, ok := s.itemModelOfRun(); ok {
			model = fmt.Sprintf("the model called on one sample (%s)", modelCallRef(*m))
		}
		n.Notes = append(n.Notes, fmt.Sprintf("the steps got slower as the run went on, %s at steps %d-%d to %s at steps %d-%d, because each did more items: %s ran a median %.0f times a step, then %.0f, "+
			"and its time per item did not grow (an RL episode lasting longer as its policy learns): the window's steps did fewer items than the run's later ones, at the same cost per item",
			units.Seconds(g.FirstMedianS), g.FirstSteps[0], g.FirstSteps[1], units.Seconds(g.LastMedianS), g.LastSteps[0], g.LastSteps[1], model, g.FirstItems, g.LastItems))
	}
	inflated, slower, grew := false, busy, false
	run, win, prefetched := s.runInput()
	if prefetched {
		n.SteadyState = false
		n.Notes = append(n.Notes, fmt.Sprintf("the run waited for its DataLoader %.0f%% of its step time, the window %.0f%%: the window's steps took batches the workers had loaded before it (a prefetch queue filled during start-up), or the loading got slower later; the input share is the run's", pct(run), pct(win)))
	}
	if r := s.in.Run; r != nil {
		winS := r.WindowMedianS
		onlyStepCut := w.LastStepCut != "" && len(w.ExcludedBy(window.Cut)) == 0
		if onlyStepCut {
			// the window's bound closed it inside its first recorded
			// step, so the agent timed none of its recorded steps (only
			// its warm-up ones): the trace's step is the window's (a
			// Mamba's selective scan, testdata/rundir/cpu_mamba: 12.9 s
			// in it, 1.21 s a step outside, as the process grew from
			// 1.3 to 9.4 GB)
			winS = max(winS, w.MedianUs/1e6)
		}
		// against the steps next to the window; when they share its
		// slowness (a warm-up still going on, the machine busy for a
		// while), against the run's median step
		ref, stretch := 0.0, false
		switch {
		case r.OutsideStepS > 0 && winS >= s.p.ProfilerInflation*r.OutsideStepS:
			ref = r.OutsideStepS
		case r.RunMedianStepS > 0 && winS >= s.p.ProfilerInflation*r.RunMedianStepS:
			ref, stretch = r.RunMedianStepS, true
		}
		if ref > 0 {
			n.SteadyState = false
			against := "the steps outside the window"
			if stretch {
				against = "the run's median step"
			}
			msg := fmt.Sprintf("the recorded steps take %.1fx %s (median %s against %s)",
				winS/ref, against, units.Duration(winS*1e6), units.Duration(ref*1e6))
			// the profiler costs each recorded op a few µs: only steps with
			// enough ops can be slowed this much by it
			ops := s.opsPerStep(len(w.Used))
			switch excess := (winS - ref) * 1e6; {
			case busy:
				msg += ": the machine was busy during the window (above)"
			case onlyStepCut && w.LastStepCutBy == "memory":
				// torch.profiler over that Mamba (a plain profile of one
				// step, no agent): 11.0 s against 1.3 s, RSS 1.3 -> 7.4 GB
				grew = true
				msg += ": the process grew past the window's memory bound while it recorded (above), and memory touched the first time costs the ops that touch it (page faults): the recorded step paid for memory the steps outside it reuse, so ops that allocate and fill (zero fills, copies) take more of it than they do outside"
			case ops*s.p.ProfilerOpCostUs >= excess/2:
				inflated = true
				s.profilerUs, s.unprofiledUs = excess, ref*1e6
				msg += fmt.Sprintf(": the profiler's per-op overhead (%.0f ops per step) inflates op times, tiny ops most, so host and launch shares are overstated", ops)
			case stretch:
				slower = true
				msg += ": the window fell in a slow stretch of the run (a warm-up still going on, or the machine busy then); the run's step times show when"
			default:
				slower = true
				msg += fmt.Sprintf(", more than the profiler's per-op cost explains (%.0f ops per step): something else slowed the window (other processes on the machine, a periodic task in the program); the run's step times show when", ops)
			}
			n.Notes = append(n.Notes, msg)
		}
		s.profilerBase(r, busy, len(w.Used))
	}
	if out := w.ExcludedBy(window.Outlier); len(out) > 0 {
		n.Notes = append(n.Notes, fmt.Sprintf("outlier step(s) %s took more than twice the median step (%s) and are left out", stepList(out), units.Duration(w.MedianUs)))
	}
	if alt := w.Alternating; len(alt) > 0 {
		n.Notes = append(n.Notes, fmt.Sprintf("steps %s, every other step, took more than twice the others' median: the loop takes two kinds of step in turn (work done every second iteration), and both are used", stepList(alt)))
	}
	if !n.SteadyState {
		n.Reprofile = s.reprofile(w, inflated, slower, prefetched, grew)
	}
	s.d.Window = n
}

// stepList names the first 8 steps, and how many more there are.
func stepList(steps []string) string {
	list := strings.Join(steps[:min(len(steps), 8)], ", ")
	if len(steps) > 8 {
		list += fmt.Sprintf(" and %d more", len(steps)-8)
	}
	return list
}

// profilerBase takes the profiler's cost out of the replay's baseline
// (profilerUs) on a device trace whose window is slower than the steps
// next to it by ProfilerBaseMin or more, short of ProfilerInflation:
// the profiler's per-op cost lengthens the host's work more than the
// step where the device runs beside it, and left in, it hides what a
// faster device saves (testdata/rundir/h200/hf_gpt2, a Hugging Face
// Trainer's GPT-2: host work 27.7 ms a step in the window, its steps
// 1.09x those next to it; TF32 was predicted to save 7% and measured
// 1.19-1.52x).
func (s *state) profilerBase(r *runevidence.RunEvidence, busy bool, steps int) {
	// the steps less their DataLoader waits: a window on batches loaded
	// before it waited for none, the steps next to it did
	ref, win := r.OutsideWorkS, r.WindowWorkS
	if s.profilerUs > 0 || busy || !s.deviceRecorded() || ref <= 0 || win < (1+s.p.ProfilerBaseMin)*ref {
		return
	}
	excess := (win - ref) * 1e6
	if s.opsPerStep(steps)*s.p.ProfilerOpCostUs < excess/2 || !s.hostCanShorten(1-excess/(r.WindowMedianS*1e6)) {
		return
	}
	s.profilerUs, s.unprofiledUs = excess, r.WindowMedianS*1e6-excess
}

// hostCanShorten says whether the replayed steps, their host's ops and
// runtime calls taken out, get shorter than ratio × their length: only
// then can the profiler's per-op cost on the host explain the window's
// excess (a copy-bound step, 97% copies, is held by its device whatever
// the host's work costs).
func (s *state) hostCanShorten(ratio float64) bool {
	m := s.in.Replay
	if m == nil {
		return false
	}
	unchanged, _ := m.Replay(whatif.Identity("", ""))
	without, _ := m.Replay(s.profilerCut(0))
	return without < ratio*unchanged
}

// cpuWait is the run's main-thread scheduling record when it covers the
// recorded window.
func (s *state) cpuWait() *rundir.CPUWait {
	if r := s.in.Run; r != nil && r.CPUWait != nil && r.CPUWait.Window != nil {
		return r.CPUWait
	}
	return nil
}

// running is the share of a span the main thread was not waiting for a
// CPU (1 when unknown; at least a tenth).
func running(t *rundir.ThreadSched) float64 {
	return max(0.1, 1-t.WaitShare())
}

// cpuWaitHolders says who held the CPUs while the main thread waited
// (cpuWaitCause), over the steps outside the profiler's window where they
// were measured, else over the window, and which span that is (where:
// its name). Outside the window, a CPU the process left to others must be
// half of one; in it, whose profiler threads add to the process's, a
// whole one (mnist's CNN beside one busy loop on 2 CPUs: the process used
// 1.3 of them in the window, 1.5 in the steps, its main thread waited 40%
// and 24%).
func (s *state) cpuWaitHolders() (cause string, others bool, span *rundir.ThreadSched, where string) {
	cw := s.cpuWait()
	if cw == nil {
		return "", false, nil, ""
	}
	span, where, spare := cw.Steps, "the steps outside the profiler's window", 0.5
	if span == nil || span.WallS <= 0 {
		span, where, spare = cw.Window, "the recorded window", 1
	}
	cause, others = s.cpuWaitCause(span, spare, cmp.Or(span.LoadAverage, cw.Window.LoadAverage)) // the steps' span has no load
	return cause, others, span, where
}

// cpuWaitCause says who held the CPUs while the main thread waited, and
// whether it was other processes: the program's own threads when they
// outnumber the CPUs, when the process itself used all CPUs but spare,
// or with its child processes or DataLoader workers, else other
// processes: a CPU the program left was someone else's, or its main
// thread would not have waited.
func (s *state) cpuWaitCause(t *rundir.ThreadSched, spare float64, load *float64) (cause string, others bool) {
	d, ok := s.cpuDemand()
	if ok && d.oversubscribed() {
		return fmt.Sprintf("the program's own threads want %d CPUs of %d (below)", d.want, d.cpus), false
	}
	if !ok || t.WallS <= 0 {
		return "other threads or processes held the CPUs", false
	}
	used := t.ProcessCPUS / t.WallS
	if used > float64(d.cpus)-spare {
		return fmt.Sprintf("this process's own threads used %.1f of the %d CPUs (its DataLoader workers aside)", used, d.cpus), false
	}
	if c := s.in.Run.Children; c != nil && c.WallS > 0 && c.CPUS/c.WallS >= 0.5 {
		// the program's own processes beside it (hogwild's trainers)
		return fmt.Sprintf("the program's child processes (%d) used %.1f CPUs while they lived, this process %.1f", c.Processes, c.CPUS/c.WallS, used), false
	}
	workers := 0.0
	if w := s.in.Run.Workers; w != nil && w.Samples > 0 {
		workers = workersCPUs(w)
	}
	if workers >= 0.1 && used+workers > float64(d.cpus)-spare {
		// its DataLoader workers, busy too few to outnumber the CPUs
		// with the intra-op threads, took the rest
		return fmt.Sprintf("this process used %.1f of the %d CPUs and its DataLoader workers about %.1f (their samples)", used, d.cpus, workers), false
	}
	if q := s.in.Run.Env.CPUQuota; q > 0 && used+workers > q-spare {
		// the kernel throttled the program at its quota, whatever the
		// CPUs left idle (mnist at a quota of 1.5 CPUs on 2: its main
		// thread waited 28%, the process used 1.4)
		return fmt.Sprintf("its cgroup's CPU quota (%.3g CPUs) held the program back: this process used %.1f", q, used), false
	}
	machine := ""
	if load != nil {
		machine = fmt.Sprintf("load average %.1f on %d CPUs; ", *load, d.cpus)
	}
	return fmt.Sprintf("other processes held the CPUs (%sthis process used %.1f, its DataLoader workers aside)", machine, used), true
}

// workersCPUs is about how many CPUs the DataLoader workers used, by
// their samples: busy, and on a CPU while busy where that was measured.
func workersCPUs(w *pyprofile.WorkerSummary) float64 {
	onCPU := w.CPUShare
	if onCPU < 0 {
		onCPU = 1
	}
	return float64(w.Processes) * w.BusyShare * onCPU
}

// opsPerStep is how many ops and runtime calls the profiler recorded per
// used step.
func (s *state) opsPerStep(steps int) float64 {
	if s.in.Ops == nil || steps == 0 {
		return 0
	}
	return float64(s.in.Ops.Calls) / float64(steps)
}

func stepReason(w *window.Result, step string) string {
	for _, st := range w.Steps {
		if st.Step != step {
			continue
		}
		switch st.Excluded {
		case window.CarryOver:
			return fmt.Sprintf("carry-over: %s of it ran work launched before the capture", units.Duration(st.CarryUs))
		case window.StartUp:
			return fmt.Sprintf("start-up: %s of one-time costs", units.Duration(st.StartupUs))
		case window.Capture:
			return "graph capture"
		case window.Outlier:
			return fmt.Sprintf("outlier: %s against a median of %s", units.Duration(st.Us), units.Duration(w.MedianUs))
		case window.Cut:
			return "cut short: " + w.LastStepCut
		}
	}
	return "excluded"
}

// reprofile says how to record a window that shows the steady state, by
// what is wrong with this one: `bottleneck run` flags when the trace came
// from it, else the torch.profiler schedule.
func (s *state) reprofile(w *window.Result, inflated, slower, prefetched, grew bool) string {
	startup := len(w.ExcludedBy(window.StartUp)) > 0 || len(w.ExcludedBy(window.Capture)) > 0
	carry := len(w.ExcludedBy(window.CarryOver)) > 0
	if s.in.Run != nil {
		switch {
		case s.slowing() != nil && len(s.slowing().Stages) > 0:
			g := s.slowing()
			return fmt.Sprintf("record the last stage's steps: bottleneck run --skip-first %d ...", g.Stages[len(g.Stages)-1]+5)
		case s.slowing() != nil:
			return "no later window would be the steady state either: make the step's cost stop growing first (the first finding)"
		case len(w.ExcludedBy(window.Cut)) > 0 && len(w.Used) == 0:
			return "record earlier steps: bottleneck run --skip-first 1 --warmup 1 ..."
		case startup:
			return "re-run with more steps skipped before the window: bottleneck run --skip-first 20 ..."
		case carry:
			return "re-run recording more steps, so that steps after the first (which inherits queued work) decide: bottleneck run --active 8 ..."
		case grew:
			// the same Mamba recorded from step 16 grew and slowed alike
			return "a later window grows alike where recording is what holds the memory: read the ops' ranking, not their times, and measure a change by the run's step times (bottleneck diff)"
		case inflated:
			return "the profiler's own cost inflates tiny ops: trust the Python profile of the whole run, or re-run without --record-shapes/--with-stack/--profile-memory"
		case prefetched:
			// the queue drains faster than the workers refill it: twice
			// its size in steps is past it (4 workers x 8: slow steps
			// from step 36)
			return fmt.Sprintf("to record steps that wait as the run's do, skip past the batches the workers load ahead (num_workers x prefetch_factor: %d): bottleneck run --skip-first %d ...", s.in.Run.BatchesAhead(), 2*s.in.Run.BatchesAhead())
		case slower:
			return s.laterWindow()
		}
		return "re-run with a longer warm-up before the window: bottleneck run --warmup 4 ..."
	}
	sched := "torch.profiler.schedule(wait=1, warmup=2, active=5)"
	if startup {
		sched = "torch.profiler.schedule(skip_first=10, wait=1, warmup=2, active=5)"
	}
	adv := "re-profile a steady-state window: torch.profiler.profile(schedule=" + sched + ", ...) with prof.step() after every step"
	if carry {
		adv += ", and torch.cuda.synchronize() before the profiler starts"
	}
	if w.Overhead != nil {
		adv += "; record_shapes, with_stack and profile_memory off make the profiler lighter"
	}
	return adv
}

// laterWindow advises a window where the run's steps had settled, or a
// quiet machine when they never did after the window.
func (s *state) laterWindow() string {
	r := s.in.Run
	if r.SettledStep == 0 {
		return "the steps after the window did not settle for long (the run's step times show it): re-run on a quiet machine, with more steps"
	}
	return fmt.Sprintf("the run's steps settle from step %d: record a later window: bottleneck run --skip-first %d ... (or re-run on a quiet machine)", r.SettledStep, r.SettledStep)
}

// windowBlocks returns why no verdict can be drawn from the window ("" when
// steady-state steps remain).
func (s *state) windowBlocks() (detail, why string) {
	w, b := s.in.Window, s.in.Breakdown
	if w == nil || b == nil || b.AveragedSteps > 0 || len(s.d.Window.Excluded) == 0 {
		return "", ""
	}
	var reasons []string
	if len(w.ExcludedBy(window.CarryOver)) > 0 {
		detail = "the capture started mid-flight"
		reasons = append(reasons, "work launched before the capture")
	}
	if len(w.ExcludedBy(window.StartUp)) > 0 {
		if detail == "" {
			detail = "the window holds start-up, not the steady state"
		}
		reasons = append(reasons, "start-up costs")
	}
	if len(w.ExcludedBy(window.Capture)) > 0 {
		if detail == "" {
			detail = "the window is graph capture, not the run"
		}
		reasons = append(reasons, "graph capture")
	}
	if len(w.ExcludedBy(window.Cut)) > 0 && len(reasons) == 0 {
		// what a run's window recorded after its last step began: the
		// program's end (5 LBFGS steps of ~28 s, the window's first step
		// the last: 522 ms of the test prediction and plot after it read
		// "undetermined: 50% nothing recorded"), or an evaluation after
		// training that the idle bound closed (2 s of forwards read "1191200
		// ops per step: per-op framework overhead")
		return "the window recorded no whole step", fmt.Sprintf("its only step was cut short (%s), so its figures would describe what ran then, not a step", w.LastStepCut)
	}
	if detail == "" {
		detail = "no step left to diagnose"
	}
	why = fmt.Sprintf("no step of the window is free of %s, so idle, sync and share figures would describe the capture rather than the program", strings.Join(reasons, " and "))
	return detail, why
}
