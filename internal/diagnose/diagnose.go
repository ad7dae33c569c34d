// Package diagnose turns the analyses of a trace (and, from `bottleneck
// run`, the agent's evidence: Python profile, DataLoader wait, sync call
// sites, environment) into a verdict and findings ranked by the time they
// could save. It never reads events: it works on the analyses' results,
// so every number it states can be found in the rest of the report.
//
// The method (docs/diagnosis.md): the step-time breakdown partitions the
// mean step into disjoint shares; each class gets the share it explains
// (DataLoader wait, exposed communication, device idle while the host is
// busy, ...), corrected by the run evidence; the largest is the verdict.
// All thresholds and rules are in rules.go.
package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/critpath"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/input"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/launch"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/memory"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/whatif"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Definition names the diagnosis method; bump when rules change meaning.
const Definition = "diagnose/3"

// Analyses is what Compute reads: the analyses of one trace and, optionally,
// the run evidence of the same process.
type Analyses struct {
	Events    int            // events in the trace
	Window    *window.Result // which steps are steady state (nil: all are)
	Breakdown *breakdown.Result
	GPU       *gpu.Result
	Idle      *idle.Result
	Launch    *launch.Result
	Syncs     *syncs.Result
	Input     *input.Result
	Memory    *memory.Result
	Regions   *regions.Result
	Ops       *optable.OpTable
	Kernels   *optable.KernelTable
	CritPath  *critpath.Result
	Replay    *whatif.Model // the steps used, to replay each fix (nil: not replayed)
	Flops     *flops.Result // achieved FLOP/s and roofline per op (nil: not computed)
	Run       *runevidence.RunEvidence
	Params    *Params // nil: Default
	// WorldSize is the job's rank count (distributedInfo, 0 unknown);
	// RanksRead how many ranks' traces the input holds.
	WorldSize, RanksRead int
}

// Diagnosis is the verdict and findings of one trace.
type Diagnosis struct {
	// Definition names the version of the diagnosis method (docs/diagnosis.md).
	Definition string `json:"definition"`
	// Verdict is what holds the program back, with its share and confidence.
	Verdict Verdict `json:"verdict"`
	// StepUs is the mean step time the shares are of: the step breakdown's average over the steps used.
	StepUs float64 `json:"step_us"`
	// FindingsStepUs, when set, is the step the findings' percentages are of instead of StepUs: the replay's baseline, StepUs less the profiler's own cost where that was taken out (the window's steps longer than the run's), so that a saving's percent and speed-up are the program's as it runs unprofiled.
	FindingsStepUs float64 `json:"findings_step_us,omitempty"`
	// Sources are the inputs used: "trace", "run evidence", "python profile".
	Sources []string `json:"sources"`
	// Window: the steps used and whether the window is steady state.
	Window *WindowNote `json:"window,omitempty"`
	// Classes are every class's share of the step and estimated saving, by saving, largest first; the verdict is the first other than unexplained, unless none could be drawn.
	Classes []ClassScore `json:"classes"`
	// Findings are the changes to make, by estimated saving, largest first (a memory-growth finding always first).
	Findings []Finding `json:"findings"`
	// Unknown lists the classes the input cannot measure, and why.
	Unknown []Unmeasured `json:"not_measurable,omitempty"`
	// WhatIf is the replay of the steps used, unchanged and with each fix weighed (docs/diagnosis.md, "What a fix saves"); absent without a replay.
	WhatIf *whatif.Result `json:"what_if,omitempty"`
}

// Verdict is the primary class and the secondary ones that matter.
type Verdict struct {
	// Primary is the class that holds the program back (for one trace, the class whose usual fix would shorten the step most); "undetermined" when the input supports no verdict.
	Primary Class `json:"primary"`
	// Detail says the primary class in plain words.
	Detail string `json:"detail"`
	// SharePct is the primary class's share of the mean step, in percent (0 when undetermined, and across ranks without a straggler).
	SharePct float64 `json:"share_pct"`
	// Confidence is high, medium or low ("none" when undetermined).
	Confidence string `json:"confidence"`
	// Why gives the numbers behind the verdict and its caveats, in plain words.
	Why string `json:"why"`
	// Secondary are the other classes of at least 15% of the step, then memory-pressure, slowing-down (the steps get slower over the run), periodic-work (every Nth step is slow: its finding), debug-mode (a debugging setting on whose finding goes first) and memory-growth when flagged.
	Secondary []Class `json:"secondary,omitempty"`
}

// ClassScore is one class's share of the step, what its usual fix would
// save (the share times the class's fix factor, Rules), and the numbers
// behind it. The verdict is the class with the largest saving.
type ClassScore struct {
	// Class is the class scored.
	Class Class `json:"class"`
	// SharePct is the share of the mean step the class explains, in percent.
	SharePct float64 `json:"share_pct"`
	// SavingPct is what the class's usual fix would save, in percent of the step: the replay of the fix when SavingMethod is "replay", else SharePct times the fix factor of the class's main rule.
	SavingPct float64 `json:"saving_pct"`
	// SavingMethod says how SavingPct was found: "replay" (the steps replayed with the fix: docs/diagnosis.md, "What a fix saves") or "share" (share times factor: no replay of this fix).
	SavingMethod string `json:"saving_method"`
	// ReachPct is, when replayed, the part of the time the fix takes out that shortens the step, in percent (0: all of it hidden behind other work).
	ReachPct float64 `json:"reach_pct,omitempty"`
	// Evidence are the measured numbers behind the share.
	Evidence []Evidence `json:"evidence"`
}

// Evidence is one measured number.
type Evidence struct {
	// What says what was measured, in plain words.
	What string `json:"what"`
	// Value is the number, in Unit.
	Value float64 `json:"value"`
	// Unit is the number's unit: "us", "%", "% of step", "% of kernel time", "MiB", "x", ... ("" for a count).
	Unit string `json:"unit"`
	// Source names where the number comes from: an analysis (step_breakdown, synchronization, kernels, ...) or the run's evidence, Python profile or environment.
	Source string `json:"source"`
}

// Location is where a finding points: a Python line, an op, a kernel, a
// DataLoader, a rank.
type Location struct {
	// Kind is what the location is: python, op, kernel, memcpy, dataloader, rank, sync-site, phase or env.
	Kind string `json:"kind"`
	// Name names it: the function, op, kernel, copy kind, dataset, rank, phase or variable.
	Name string `json:"name"`
	// File is the source file of a Python location (absent otherwise).
	File string `json:"file,omitempty"`
	// Line is the line in File (absent when unknown).
	Line int `json:"line,omitempty"`
	// SharePct is the location's share of the samples or time it is measured against, in percent (absent when not measured).
	SharePct float64 `json:"share_pct,omitempty"`
	// Note says more about the location in plain words (settings, counts, what ran there).
	Note string `json:"note,omitempty"`
	// Inside says where a Python line that calls into an installed package spends its time there:
	// the package's function that holds most of its samples and what that calls (absent otherwise).
	Inside string `json:"inside,omitempty"`
}

// Finding is one thing to change, with what it could save.
type Finding struct {
	// Rule names the rule that fired (docs/diagnosis.md, "Findings"), e.g. "input.loader".
	Rule string `json:"rule"`
	// Class is the class the rule belongs to.
	Class Class `json:"class"`
	// Title says what was found, in one line.
	Title string `json:"title"`
	// Measured are the numbers the rule fired on.
	Measured []Evidence `json:"measured"`
	// Where are the places to change, most important first.
	Where []Location `json:"where,omitempty"`
	// Change is the one change the evidence supports first, in plain words.
	Change string `json:"change"`
	// Alternatives are the further changes, each on its own line: what
	// to do once the first is done, or what to try instead.
	Alternatives []Alternative `json:"alternatives,omitempty"`
	// AtStakeUs is the time per step the cause occupies.
	AtStakeUs float64 `json:"at_stake_us_per_step"`
	// AtStakePct is AtStakeUs as a percentage of the step (FindingsStepUs when set, else StepUs).
	AtStakePct float64 `json:"at_stake_pct"`
	// SavingUs is the estimate of what the change saves per step: when SavingMethod is "replay", the replay of the change (or, for a rule without a transformation of its own, AtStakeUs times the rule's factor times its class's reach); else AtStakeUs times the rule's factor (0: no estimate).
	SavingUs float64 `json:"saving_us_per_step"`
	// SavingPct is SavingUs as a percentage of the step (FindingsStepUs when set, else StepUs).
	SavingPct float64 `json:"saving_pct"`
	// SavingMethod says how SavingUs was found: "replay" or "share" (as classes[].saving_method).
	SavingMethod string `json:"saving_method"`
	// Try is the change bottleneck can make to the program at run time
	// for this finding (rundir.ChangeKinds by name), which run --verify
	// tries; absent when the change needs an edit.
	Try map[string]string `json:"try,omitempty"`
	// TryOption is, where Try is absent, the program's own command-line
	// option that makes the first change (the options it parsed), which
	// run --verify appends to the program's arguments; absent otherwise.
	TryOption *OptionTry `json:"try_option,omitempty"`
	// TrySavingPct is the predicted saving of Try, in percent of the step (FindingsStepUs when set, else StepUs), when it is not SavingPct (the finding leads with another change: workers that cannot keep up with a Dataset to make cheaper first); absent otherwise.
	TrySavingPct *float64 `json:"try_saving_pct,omitempty"`
	// ReachPct is, when replayed, the part of the time the change takes out that shortens the step, in percent.
	ReachPct float64 `json:"reach_pct,omitempty"`
	// Confidence is high, medium or low: the verdict's for a finding of the primary class, else medium unless the rule lowers it.
	Confidence string `json:"confidence"`
	// OnceS is the time the cause took once in the run rather than in
	// every step (start-up), in seconds; its per-step fields are 0.
	OnceS float64 `json:"once_s,omitempty"`
}

// Unmeasured is a class the input cannot support, and why.
type Unmeasured struct {
	// Class is the class not measurable ("undetermined": no verdict at all).
	Class Class `json:"class"`
	// Why says what the input lacks.
	Why string `json:"why"`
}

type state struct {
	in      Analyses
	p       Params
	d       *Diagnosis
	step    float64 // mean step µs
	steps   int
	avg     breakdown.Costs
	device  bool // device activity recorded
	usesGPU bool // the program launched device work (recorded or not)
	share   map[Class]float64
	ev      map[Class][]Evidence
	py      *runevidence.PythonEvidence
	syncPS  float64 // blocking syncs per step
	// profilerUs: how much longer the window's median step is than the
	// steps without the profiler (unprofiledUs), when the profiler's
	// per-op cost explains it (windowNote)
	profilerUs, unprofiledUs float64
	// inputWait says how the input share was measured, in the words and
	// the number of that measurement (the finding's title quotes it);
	// inputRun: the share is the run's DataLoader wait (runInput);
	// inputSamples: the Python profile's share of the run's samples;
	// else the share is the window's.
	inputWait              string
	inputRun, inputSamples bool
	// hostOnPath: the host's share is its hold on the replayed critical
	// path, not the device's idle time (scores)
	hostOnPath float64
	used       map[string]bool // the window's used steps, as a set (uses)
	mix        *kernelMix      // the kernel table's time by kind (kernelMix)
	// savingClause is the verdict's why's saving of its class's fix
	// (leadNote replaces it where the first finding promises none)
	savingClause string
	// nativeTry is the run-time change (rundir.ChangeKinds) that makes
	// the CPU op families' lead change (cpuFamilyChange), for cpu.native's
	// run --verify; nil when the agent cannot make it
	nativeTry map[string]string
}

// Compute diagnoses one trace.
func Compute(in Analyses) *Diagnosis {
	s := &state{in: in, p: Default, share: map[Class]float64{}, ev: map[Class][]Evidence{}}
	if in.Params != nil {
		s.p = *in.Params
	}
	s.d = &Diagnosis{Definition: Definition, Sources: []string{"trace"}, Classes: []ClassScore{}, Findings: []Finding{}}
	if in.Run != nil {
		s.d.Sources = append(s.d.Sources, "run evidence")
		if in.Run.Python != nil {
			s.py = in.Run.Python
			s.d.Sources = append(s.d.Sources, "python profile")
		}
	}
	undetermined := func(detail, why string) *Diagnosis {
		s.d.Verdict = Verdict{Primary: Undetermined, Detail: detail, Confidence: "none", Why: why}
		s.d.Unknown = append(s.d.Unknown, Unmeasured{Undetermined, why})
		return s.d
	}
	if why := s.tooFewEvents(); why != "" {
		return undetermined("", why)
	}
	s.windowNote()
	s.replay()
	if detail, why := s.windowBlocks(); why != "" {
		return undetermined(detail, why)
	}
	if why := s.degenerate(); why != "" {
		return undetermined("", why)
	}
	s.scores()
	s.verdict()
	s.findings()
	s.leadNote()
	return s.d
}

// leadNote: the first finding is of the verdict's class, by a rule of its
// own (padding the model computes, an evaluation every step), and saves
// clearly more than the class's usual fix, which the verdict's why
// weighs: the why names it, so that the two do not read as contradicting
// each other (a padded BERT: "its fix would save ~27%" above a first
// finding of 57%). Where the first finding is the class's main rule and
// promises no saving (no change the program can make: cpu.native's
// sparse products or double backward), the why promises none either.
func (s *state) leadNote() {
	v := &s.d.Verdict
	if len(s.d.Findings) == 0 || len(s.d.Classes) == 0 || s.step <= 0 {
		return
	}
	f := s.d.Findings[0]
	if f.Class != v.Primary {
		return
	}
	if f.Rule == classRules[f.Class] && f.SavingUs == 0 && f.AtStakeUs > 0 && f.SavingMethod == "share" {
		// the class's usual fix is no change the program can make here
		// (cpu.native's sparse products, a double backward): the why
		// must not promise what its first finding does not
		v.Why = strings.Replace(v.Why, s.savingClause, "no change to the program is known to save it on this machine (the first finding says why)", 1)
		return
	}
	if f.Rule == classRules[f.Class] || pct(f.SavingUs/s.step) < s.d.Classes[0].SavingPct+pct(s.p.MinFinding) {
		return
	}
	v.Why += fmt.Sprintf("; its first finding (%s) saves ~%.0f%%", f.Rule, pct(f.SavingUs/s.step))
}

func (s *state) tooFewEvents() string {
	if s.in.Events >= s.p.MinEvents {
		return ""
	}
	span := 0.0
	if b := s.in.Breakdown; b != nil {
		for _, st := range b.Steps {
			span += st.TotalUs
		}
	}
	return fmt.Sprintf("degenerate capture: %d events over %s, too few to say where the time goes", s.in.Events, units.Duration(span))
}

func (s *state) degenerate() string {
	b := s.in.Breakdown
	if b == nil || b.Average.TotalUs <= 0 || b.AveragedSteps == 0 {
		return "no step time could be measured (the step-time breakdown is empty)"
	}
	a := b.Average
	act := a.TotalUs - a.OtherUs
	if s.py == nil && act*float64(b.AveragedSteps) < s.p.MinRecordedUs {
		return fmt.Sprintf("too little recorded to judge: %s of activity over %d step(s); record several steps of the real work (torch.profiler.schedule(wait=1, warmup=2, active=5) with prof.step() after each, or bottleneck run)", units.Duration(act*float64(b.AveragedSteps)), b.AveragedSteps)
	}
	if s.py == nil && act < s.p.MinActivity*a.TotalUs {
		return fmt.Sprintf("recorded activity covers %.1f%% of the %s window: the profiler saw almost nothing the program did (a Python profile from `bottleneck run` would show the rest)", 100*act/a.TotalUs, units.Duration(a.TotalUs))
	}
	return ""
}

func (s *state) add(c Class, share float64, e ...Evidence) {
	s.share[c] = max(0, share)
	s.ev[c] = append(s.ev[c], e...)
}

func pct(x float64) float64 { return 100 * x }

// runInput is the DataLoader's wait as a share of the step time over the
// whole run and over every step of the window, ok when the run's exceeds
// the window's by RunInputGap and twice: a prefetch queue that filled
// during start-up served the window's steps (4 workers x prefetch_factor
// 8 after a 3 s set-up: steps 8-24 waited 19% of the window, the run
// 81% of its steps), so the window is not the run's steady state for
// input. Every window step counts, the slow ones too: N workers that
// cannot keep up make every Nth step wait, which the window's figures
// leave out as outliers (45% against the run's 97%).
func (s *state) runInput() (run, win float64, ok bool) {
	r := s.in.Run
	if r == nil || r.WindowStepS <= 0 || !r.HasDataLoader {
		return 0, 0, false
	}
	run, win = r.RunLoaderWaitShare, r.WindowLoaderWaitShare
	return run, win, run >= win+s.p.RunInputGap && run >= 2*win
}

// scaleToRun: when the input share is the run's (runInput), the other
// classes' shares, of the window's steps that waited less, become shares
// of the run's longer step, on the assumption that the rest of the step
// costs what it did in the window: 95% of native ops in a window that
// waited 2% for data are 56% of a run's step that waited 42%, and faster
// ops would not shorten the steps that wait.
func (s *state) scaleToRun() {
	run, win, _ := s.runInput() // inputRun: its ok held
	if !s.inputRun || win >= 1 {
		return
	}
	f := (1 - run) / (1 - win)
	for c := range s.share {
		if c != Input {
			s.share[c] *= f
		}
	}
	s.ev[Input] = append(s.ev[Input], Evidence{"other classes' shares scaled from the window's step to the run's", 100 * f, "%", "evidence"})
}

// scores fills the share of the step each class explains.
func (s *state) scores() {
	b := s.in.Breakdown
	a := b.Average
	s.avg, s.step, s.steps = a, a.TotalUs, b.AveragedSteps
	S := a.TotalUs
	s.device = s.deviceRecorded()
	s.usesGPU = s.device || a.RuntimeLaunchUs > 0
	src := "step_breakdown"
	defer s.scaleToRun() // after addRecompile
	defer s.addRecompile()

	// input
	in := a.DataLoaderUs / S
	inEv := []Evidence{{"DataLoader time per step (trace)", a.DataLoaderUs, "us", src}}
	s.inputWait = units.Duration(a.DataLoaderUs) + " per step"
	if r := s.in.Run; r != nil && r.WindowStepS > 0 && r.DataLoaderWaitS >= 0 && r.HasDataLoader {
		w := r.DataLoaderWaitS / r.WindowStepS
		inEv = append(inEv, Evidence{"DataLoader wait per step (agent)", r.DataLoaderWaitS * 1e6, "us", "evidence"},
			Evidence{"DataLoader wait share (agent)", pct(w), "%", "evidence"})
		if w > in {
			in = w
			s.inputWait = units.Duration(r.DataLoaderWaitS*1e6) + " per step"
		}
	}
	if run, _, ok := s.runInput(); ok && run > in {
		inEv = append(inEv, Evidence{"DataLoader wait share over the run (agent)", pct(run), "%", "evidence"})
		in = run
		s.inputRun = true
	}
	if s.py != nil && s.py.LoaderShare > in && (s.in.Run != nil && s.in.Run.HasDataLoader) {
		inEv = append(inEv, Evidence{"main-thread samples in DataLoader code", pct(s.py.LoaderShare), "%", "pyprofile"})
		in = s.py.LoaderShare
		s.inputWait, s.inputRun, s.inputSamples = fmt.Sprintf("%.0f%% of the main thread's samples", pct(in)), false, true
	}
	s.add(Input, in, inEv...)

	// io (Python profile only)
	io := 0.0
	if s.py != nil {
		io = s.py.IOShare
		ev := []Evidence{{"main-thread samples in I/O code", pct(io), "%", "pyprofile"}}
		// A checkpoint every N steps that lands in the window makes its
		// step an outlier: when the outlier steps hold half the I/O share
		// or more, the I/O is not the steps' own (run.periodic weighs it
		// over the run); the rest of it may be. (Profiles whose outlier
		// steps' samples are left out need no estimate.)
		if r := s.in.Run; r != nil && io > 0 && !s.py.OutliersLeftOut && r.WindowOutlierShare >= io/2 {
			io = max(0, io-r.WindowOutlierShare)
			ev = append(ev, Evidence{"of which outside the window's outlier steps", pct(io), "%", "pyprofile"})
		}
		s.add(IO, io, ev...)
	}

	comm := a.CommunicationUs / S
	s.add(Comm, comm, Evidence{"exposed communication per step", a.CommunicationUs, "us", src})

	if s.device {
		s.add(GPUCompute, a.KernelUs/S, Evidence{"computation kernels per step", a.KernelUs, "us", src})
		if g := s.in.GPU; g != nil {
			for _, d := range g.Devices {
				if d.KernelCount == 0 {
					continue
				}
				s.ev[GPUCompute] = append(s.ev[GPUCompute],
					Evidence{fmt.Sprintf("device %d utilization", d.Device), d.UtilizationPct, "%", "gpu"},
					Evidence{fmt.Sprintf("device %d kernel time on tensor cores", d.Device), d.TensorCorePct, "%", "gpu"})
			}
		}
		s.add(Copy, (a.MemcpyUs+a.MemsetUs)/S, Evidence{"memcpy+memset not overlapped with kernels, per step", a.MemcpyUs + a.MemsetUs, "us", src})

		// The device is idle for the rest of the step. Time where the host
		// recorded nothing is unexplained, not host work, unless a Python
		// profile shows the main thread running Python then.
		hostUs := a.RuntimeUs + a.DataLoaderUs + a.CPUExecUs
		unexplained := a.OtherUs
		if s.py != nil {
			hostUs, unexplained = hostUs+a.OtherUs, 0
		}
		idleShare := hostUs / S
		stall, blocked, perStep := s.syncStall()
		s.syncPS = perStep
		sy := 0.0
		syEv := []Evidence{{"blocking syncs per step", perStep, "", "synchronization"},
			{"host blocked in syncs", pct(blocked), "% of step", "synchronization"},
			{"device idle after syncs, until the host issued more work", pct(stall), "% of step", "synchronization"}}
		if perStep >= s.p.SyncPerStep {
			hostSide := max(0, (a.RuntimeUs+a.DataLoaderUs+a.CPUExecUs+a.OtherUs)/S-in)
			sy = min(stall, hostSide)
			// A sync costs more than the device's idle after it: while
			// the host waits it prepares no later work, and the two stop
			// overlapping. The replay without the syncs measures that
			// (at most the step's host side).
			if p, ok := s.prediction(string(Sync)); ok {
				if r := min(s.replayedPct(p)/100, hostSide); r > sy {
					sy = r
					syEv = append(syEv, Evidence{"step time the syncs cost (the steps replayed without them)", pct(r), "% of step", "what_if"})
				}
			}
		}
		s.add(Sync, sy, syEv...)
		pool := max(0, idleShare-in-sy-io)
		u := unexplained / S
		pool, u = s.addGC(pool, u)
		unexplained = u * S
		hostEv := []Evidence{{"device idle while the host runs (runtime, CPU ops, Python)", pct(pool), "% of step", src},
			{"kernel-launch calls per step", a.RuntimeLaunchUs, "us", src}}
		if s.profilerUs > 0 {
			// The profiler's per-op cost lengthened the window's steps
			// (their median by profilerUs), all of it host time in which
			// the device waited: without it the host keeps up better, the
			// device's work does not change (an H100 at 1.97 ms of
			// kernels a step: 3.57 ms steps in the window, 2.34 ms
			// without the profiler). Its share of the median step is cut,
			// which leaves findingsStep.
			cut := min(pool, s.profilerUs/(s.unprofiledUs+s.profilerUs))
			pool -= cut
			hostEv = append(hostEv, Evidence{"of which the profiler's own cost, left out", pct(cut), "% of step", "evidence"})
		}
		// The breakdown gives the time where the host and the device both
		// run to the device: a host that runs beside the kernels for most
		// of the step and holds them up shows little idle. Its share is
		// then its hold on the critical path: how much shorter the
		// replayed step gets without its work (without the blocked waits,
		// which are sync's).
		if p, ok := s.prediction(hostPath); ok && s.replayedPct(p)/100 > pool+s.p.MinFinding {
			s.hostOnPath = s.replayedPct(p) / 100
			hostEv = append(hostEv, Evidence{"host work on the critical path (the steps replayed without it)", pct(s.hostOnPath), "% of step", "what_if"})
			pool = s.hostOnPath
		}
		if s.launchy() {
			kps, short := s.kernelStats()
			s.add(Launch, pool, append(hostEv, Evidence{"kernels per step", kps, "", "kernel_launches"},
				Evidence{"kernels shorter than their launch call", pct(short), "%", "kernel_launches"},
				Evidence{"step time per kernel", s.step / kps, "us", "kernel_launches"},
				Evidence{"host time to issue the kernels (launch calls) per kernel time", a.RuntimeLaunchUs / max(a.KernelUs, 1), "x", src})...)
		} else {
			s.add(Host, pool, hostEv...)
		}
		s.addUnexplained(unexplained / S)
		return
	}
	// CPU only (or GPU work not recorded)
	other := a.RuntimeUs / S
	unexplained := a.OtherUs / S
	if s.py != nil {
		other, unexplained = other+unexplained, 0
	}
	cpu := a.CPUExecUs / S
	ioOther := min(io, other)
	other -= ioOther
	cpu = max(0, cpu-(io-ioOther))
	if s.usesGPU {
		// Kernels were launched but not recorded: the host side alone
		// cannot say whether the device or the host is the limit.
		s.d.Unknown = append(s.d.Unknown, Unmeasured{GPUCompute, fmt.Sprintf(
			"the program launched device work (%s of launch calls per step) but the trace holds no kernels: it was recorded with CPU activity only (add ProfilerActivity.CUDA)", units.Duration(a.RuntimeLaunchUs))})
		for _, c := range []Class{Copy, Sync, Launch} {
			s.d.Unknown = append(s.d.Unknown, Unmeasured{c, "no device activity in the trace"})
		}
		return
	}
	other, unexplained = s.addGC(other, unexplained)
	cpu -= s.addTinyOps(cpu)
	hostEv := []Evidence{{"Python time between ops per step", (other + ioOther) * S, "us", src}}
	if g := s.gil(); g != nil && g.MainOffCPU > other {
		// the main thread's waits for the GIL (between ops), for a CPU,
		// and for the intra-op threads the other thread keeps off the
		// CPUs (inside ops) are that thread's: host work, not computation
		cpu = max(0, cpu-(g.MainOffCPU-other))
		other = g.MainOffCPU
		hostEv = append(hostEv, Evidence{"main-thread samples off the CPU inside torch while thread " + g.Thread + " runs Python", pct(g.MainOffCPU), "%", "pyprofile"})
	}
	s.add(Host, other, hostEv...)
	s.add(CPUCompute, cpu, Evidence{"time inside native ops per step", a.CPUExecUs, "us", src})
	s.addUnexplained(unexplained)
}

// deviceRecorded reports whether the trace holds device work.
func (s *state) deviceRecorded() bool {
	if g := s.in.GPU; g != nil {
		for _, d := range g.Devices {
			if d.KernelCount > 0 || d.MemcpyCount > 0 {
				return true
			}
		}
	}
	return false
}

// addRecompile gives torch.compile's recurring compilations (window
// check) their share: their time over every step of the window, the
// steps that recompiled being often left out as outliers. The part that
// falls in the steps used is host work the other shares already hold: it
// is taken from them (CPU-side classes first).
func (s *state) addRecompile() {
	w := s.in.Window
	if w == nil || w.RecompileSteps == 0 || len(w.Steps) == 0 || s.step <= 0 {
		return
	}
	share := min(1, w.RecompileUs/float64(len(w.Steps))/s.step)
	var used float64
	n := 0
	for _, st := range w.Steps {
		if st.Excluded == "" {
			used += st.RecompileUs
			n++
		}
	}
	if n > 0 {
		take := used / float64(n) / s.step
		for _, c := range []Class{CPUCompute, Overhead, Host, Launch, Unexplained} {
			v, ok := s.share[c]
			if !ok || take <= 0 {
				continue
			}
			d := min(v, take)
			s.share[c], take = v-d, take-d
		}
	}
	s.add(Recompile, share, Evidence{"recompilation time in the window", w.RecompileUs, "us", "window"},
		Evidence{"steps that recompiled", float64(w.RecompileSteps), "", "window"},
		Evidence{"steps in the window", float64(len(w.Steps)), "", "window"})
}

// addGC takes the garbage collector's share of the step (run evidence)
// out of the time where no op ran: first the unexplained share (nothing
// recorded: a collection records no op), then the host share. It returns
// what is left of both.
func (s *state) addGC(host, unexplained float64) (float64, float64) {
	r := s.in.Run
	if r == nil || r.GC == nil {
		return host, unexplained
	}
	g := min(r.GC.Share, host+unexplained)
	fromU := min(g, unexplained)
	host, unexplained = host-(g-fromU), unexplained-fromU
	s.add(GC, g, Evidence{"garbage-collection pause per step (agent, whole run)", r.GC.PausePerStepS * 1e6, "us", "evidence"},
		Evidence{"garbage-collection share of the step (agent, whole run)", pct(r.GC.Share), "%", "evidence"},
		Evidence{"collections per step", r.GC.CollectionsPerStep, "", "evidence"})
	return host, unexplained
}

// addTinyOps: on a CPU-only trace with at least TinyOpsPerStep ops per
// step and at most TinyOpUs of step per op, the ops are too small for
// their native time to be computation: it is the framework's per-op cost
// (Python binding, dispatch, allocation), and the whole native share is
// framework overhead (faster kernels or more threads would not help;
// fewer, larger ops would). The step per op is measured outside the
// profiler window when the run evidence has it: the profiler inflates
// each op.
func (s *state) addTinyOps(native float64) float64 {
	t := s.tinyOps()
	if t.perStep < s.p.TinyOpsPerStep || t.stepUsPerOp > s.p.TinyOpUs || t.smallShare < s.p.TinySelfShare || native <= 0 {
		return 0
	}
	s.add(Overhead, native, Evidence{"ops per step", t.perStep, "", "operators"},
		Evidence{fmt.Sprintf("host self time in calls of at most %s each (operator table rows)", units.Duration(s.p.TinyOpUs)), pct(t.smallShare), "%", "operators"},
		Evidence{"step time per op" + t.stepNote, t.stepUsPerOp, "us", "operators"},
		Evidence{"mean host self time of an op (profiled window)", t.selfUsPerOp, "us", "operators"})
	return native
}

// tinyOpStats: ops per step (annotations left out, nested ops included:
// each goes through the dispatcher), the step time per op and the mean
// host self time of an op.
type tinyOpStats struct {
	perStep, stepUsPerOp, selfUsPerOp float64
	// smallShare: the share of the kept rows' host self time in rows whose
	// calls take at most TinyOpUs each (a fast CPU runs many large ops
	// per µs of step too, but their time is in large calls)
	smallShare float64
	stepNote   string
}

func (s *state) tinyOps() tinyOpStats {
	t := s.in.Ops
	if t == nil || s.device || s.usesGPU {
		return tinyOpStats{}
	}
	steps := float64(s.opTableSteps())
	// A main thread waiting for a CPU stretches every time by its wait:
	// the ops' sizes are judged on the time it ran (a loaded CI machine,
	// 50% of the window waited: 37 µs per addmm call, 18.5 µs running).
	winRunning, runRunning := 1.0, 1.0
	if cw := s.cpuWait(); cw != nil {
		winRunning, runRunning = running(cw.Window), running(cw.Run)
	}
	// every row's calls (the table may keep only its top rows), less the
	// annotations among the rows kept (a few per step)
	calls, self := float64(t.Calls), t.HostSelfUs
	var rowsSelf, smallSelf float64
	for _, r := range t.Ranked() {
		if isAnnotation(r) {
			calls -= float64(r.Calls)
			self -= r.HostSelfUs
			continue
		}
		rowsSelf += r.HostSelfUs
		if r.Calls > 0 && winRunning*r.HostSelfUs/float64(r.Calls) <= s.p.TinyOpUs {
			smallSelf += r.HostSelfUs
		}
	}
	if steps <= 0 || calls <= 0 || rowsSelf <= 0 {
		return tinyOpStats{}
	}
	st := tinyOpStats{perStep: calls / steps, selfUsPerOp: self / calls, smallShare: smallSelf / rowsSelf, stepNote: " (profiled window)"}
	// The steps outside the window, free of the profiler's per-op cost,
	// unless they are longer: then they hold more work than the window's
	// steps (a policy's episodes, 22 ms in the window and 62 ms over the
	// run as it learned to balance longer), which the window's op count
	// does not describe.
	stepUs := s.step * winRunning
	if r := s.in.Run; r != nil && r.RunMedianStepS > 0 && r.RunMedianStepS*1e6*runRunning < stepUs {
		stepUs, st.stepNote = r.RunMedianStepS*1e6*runRunning, " (median step outside the profiled window)"
	}
	if winRunning < 1 || runRunning < 1 {
		st.stepNote += ", less the main thread's wait for a CPU"
	}
	st.stepUsPerOp = stepUs / st.perStep
	return st
}

// addUnexplained records the share of the step where nothing was
// recorded on the host while the device (if any) was idle: Python code
// between ops, I/O or waiting that the trace cannot tell apart. It is
// shown, never the verdict (docs/diagnosis.md).
func (s *state) addUnexplained(share float64) {
	if share <= 0 {
		return
	}
	s.add(Unexplained, share, Evidence{"step time with nothing recorded on the host and the device idle", pct(share), "% of step", "step_breakdown"})
}

// syncStall returns, as shares of the step over the steps used, the
// device idle time that blocking syncs cost (syncs.Result.StallUs) and the
// host time blocked in them, and the syncs per step.
func (s *state) syncStall() (stall, blocked, perStep float64) {
	sy := s.in.Syncs
	if sy == nil {
		return 0, 0, 0
	}
	var st, sl, b float64
	n, steps := 0, 0
	for _, p := range sy.PerStep {
		if !s.uses(p.Step) {
			continue
		}
		st += p.StepUs
		sl += p.StallUs
		b += p.BlockedUs
		n += p.Count
		steps++
	}
	if st <= 0 || steps == 0 {
		total := s.step * float64(s.steps)
		return sy.StallUs / total, sy.BlockedUs / total, float64(sy.Count) / float64(s.steps)
	}
	perStep = float64(n) / float64(steps)
	if r := s.in.Run; r != nil && r.SyncsPerStep > perStep {
		perStep = r.SyncsPerStep
	}
	return sl / st, b / st, perStep
}

// uses reports whether the step named step is one the diagnosis uses.
// It is asked once per step of every per-step table: a set, not a scan
// (steps² was 2.9 s of 4.0 s at 30k steps).
func (s *state) uses(step string) bool {
	if s.d.Window == nil {
		return true
	}
	if s.used == nil {
		s.used = make(map[string]bool, len(s.d.Window.UsedSteps))
		for _, u := range s.d.Window.UsedSteps {
			s.used[u] = true
		}
	}
	return s.used[step]
}

func (s *state) kernelStats() (perStep, shortFrac float64) {
	l := s.in.Launch
	if l == nil || l.Launched == 0 {
		return 0, 0
	}
	var n, steps int
	for _, p := range l.PerStep {
		if s.uses(p.Step) {
			n += p.Kernels
			steps++
		}
	}
	if steps > 0 {
		perStep = float64(n) / float64(steps)
	} else {
		perStep = float64(l.Launched) / float64(max(1, s.steps))
	}
	return perStep, float64(l.ShortKernels) / float64(l.Launched)
}

func (s *state) launchy() bool {
	kps, short := s.kernelStats()
	return kps >= s.p.LaunchKernelsPerStep && short >= s.p.LaunchShortFrac && s.step/kps <= s.p.LaunchStepUsPerKernel
}

var detail = map[Class]string{
	Input:      "waiting on data loading",
	Host:       "the host (Python, framework) holds up the device",
	Launch:     "kernel-launch overhead: many tiny kernels leave the device idle",
	Sync:       "the host blocks on the device every step",
	GPUCompute: "device kernels fill the step",
	Copy:       "host-device copies not hidden behind compute",
	Comm:       "communication not hidden behind compute",
	Memory:     "device memory near capacity",
	CPUCompute: "CPU-only: native ops fill the step",
	IO:         "file I/O (checkpointing, logging) in the step",
	GC:         "Python garbage collection pauses the step",
	Overhead:   "CPU-only: the ops are tiny: the native time is per-op framework overhead",
	Recompile:  "torch.compile compiles again as the inputs change",
	Straggler:  "one rank holds the others back",
}

func (s *state) verdict() {
	cs := make([]ClassScore, 0, len(s.share))
	for c, v := range s.share {
		reach := 1.0
		switch c {
		case CPUCompute:
			reach = s.nativeReach()
		case Overhead:
			reach = s.tinyOpsReach()
		}
		sc := ClassScore{Class: c, SharePct: stats.Round1(pct(v)), SavingPct: stats.Round1(pct(v * fixFactor(c) * reach)), SavingMethod: "share", Evidence: s.ev[c]}
		if p, ok := s.classSaving(c); ok && fixFactor(c) > 0 {
			saving := s.replayedPct(p)
			if !exposedShare(c) {
				saving = min(saving, pct(v))
			}
			sc.SavingPct, sc.SavingMethod, sc.ReachPct = stats.Round1(saving), "replay", stats.Round1(p.ReachPct)
		}
		cs = append(cs, sc)
	}
	order := classOrder()
	// the limiter is the class whose fix shortens the step most, not the
	// largest share: a DataLoader wait can go almost entirely, kernels
	// only get faster
	slices.SortFunc(cs, func(a, b ClassScore) int {
		return cmp.Or(cmp.Compare(b.SavingPct, a.SavingPct), cmp.Compare(b.SharePct, a.SharePct), cmp.Compare(order[a.Class], order[b.Class]))
	})
	s.memoryPressure()
	if !s.usesGPU || s.device {
		s.unmeasured()
	}
	s.d.Classes = cs
	s.d.StepUs = s.step
	if step := s.findingsStep(); step != s.step {
		s.d.FindingsStepUs = step
	}
	if s.usesGPU && !s.device {
		// only a CPU-side class that explains most of the step can be the verdict
		top := cs[0]
		if top.SharePct < 50 || (top.Class != Input && top.Class != IO) {
			s.d.Verdict = Verdict{Primary: Undetermined, Confidence: "none",
				Why: "the trace records CPU activity only although the program launched device work, so it cannot say whether the host or the device is the limit"}
			return
		}
	}
	ranked := slices.DeleteFunc(slices.Clone(cs), func(c ClassScore) bool { return c.Class == Unexplained })
	if u := s.share[Unexplained]; u >= s.p.UnexplainedShare {
		why := fmt.Sprintf("for %.0f%% of the mean step (%s) the host recorded nothing and the device was idle: Python code between ops, I/O, or waiting on something outside the trace; record with with_stack=True, or use bottleneck run for a Python profile of the whole run", pct(u), units.Duration(s.step))
		if top := ranked[0]; top.SharePct > 0 {
			why += fmt.Sprintf("; of the recorded rest, %s explains most (%.0f%% of the step)", top.Class, top.SharePct)
		}
		s.d.Verdict = Verdict{Primary: Undetermined, Detail: "most of the step has no recorded activity", Confidence: "none", Why: why}
		return
	}
	top := ranked[0]
	v := Verdict{Primary: top.Class, Detail: detail[top.Class], SharePct: top.SharePct}
	if top.Class == IO && s.py != nil && s.py.IOReadShare >= s.p.MinIOReadShare {
		v.Detail = "file reads in the step: data loaded in the loop"
	}
	if top.Class == Host && !s.device {
		v.Detail = "CPU-only: Python between ops fills the step"
		if g := s.gil(); g != nil {
			v.Detail = "CPU-only: the main thread waits for the GIL, which thread " + g.Thread + " holds"
		}
	}
	second := 0.0
	if len(ranked) > 1 {
		second = ranked[1].SavingPct
	}
	sh, margin := top.SharePct/100, (top.SavingPct-second)/100
	switch {
	case sh >= s.p.HighShare && margin >= s.p.HighMargin:
		v.Confidence = "high"
	case sh >= s.p.MediumShare && margin >= s.p.MediumMargin:
		v.Confidence = "medium"
	default:
		v.Confidence = "low"
	}
	var caveats []string
	if s.in.Breakdown.SyntheticStep {
		caveats = append(caveats, "no ProfilerStep marks: the whole trace is taken as one step")
		v.Confidence = lower(v.Confidence)
	} else if s.steps < 2 {
		caveats = append(caveats, "only one step recorded")
		v.Confidence = lower(v.Confidence)
	}
	if w := s.d.Window; w != nil && !w.SteadyState {
		c := "the window is not steady state (see above)"
		if s.device && s.profilerUs > 0 {
			c += fmt.Sprintf(": the host's share leaves out the profiler's own cost (%s a step; %s without the profiler)", units.Duration(s.profilerUs), units.Duration(s.unprofiledUs))
			if step := s.findingsStep(); step != s.step {
				c += fmt.Sprintf("; the findings' percentages are of the mean step without it (~%s)", units.Duration(step))
			}
		}
		caveats = append(caveats, c)
		v.Confidence = lower(v.Confidence)
	}
	if n, w, partial := s.partialRanks(); partial && top.Class == Comm {
		caveats = append(caveats, fmt.Sprintf("%d of the job's %d ranks in the input: waiting for slower ranks counts as communication", n, w))
		v.Confidence = lower(v.Confidence)
	}
	saving := fmt.Sprintf("~%.0f%%", top.SavingPct)
	if s.findingsStep() != s.step {
		saving += fmt.Sprintf(" (~%.0f%% of the mean step without the profiler's own cost)", s.findingPct(top.SavingPct/100))
	}
	s.savingClause = savingNote(top) + " " + saving
	v.Why = fmt.Sprintf("%s explains %.0f%% of the mean step (%s); %s; next: %s", top.Class, top.SharePct, units.Duration(s.step), s.savingClause, nextText(ranked))
	if u := s.share[Unexplained]; u >= s.p.MinFinding {
		caveats = append(caveats, fmt.Sprintf("%.0f%% of the step is unexplained (nothing recorded on the host, device idle)", pct(u)))
	}
	if note := s.together(top.Class, ranked[1:]); note != "" {
		caveats = append(caveats, note)
	}
	if w := s.d.WhatIf; s.device && !w.Trusted(s.p.MaxBaselineErrorPct) {
		// savings are shares: the path may disagree with them
		if note := s.critPathNote(top.Class); note != "" {
			caveats = append(caveats, note)
		}
		if w != nil {
			caveats = append(caveats, "savings are shares × factors, not replayed: "+w.Untrusted(s.p.MaxBaselineErrorPct))
		}
	}
	if len(caveats) > 0 {
		v.Why += "; " + strings.Join(caveats, "; ")
	}
	for _, c := range ranked[1:] {
		if c.SharePct/100 >= s.p.Secondary {
			v.Secondary = append(v.Secondary, c.Class)
		}
	}
	if _, ok := s.share[Memory]; ok {
		v.Secondary = append(v.Secondary, Memory)
	}
	if g := s.slowing(); g != nil {
		v.Secondary = append(v.Secondary, Slowing)
		v.Why += fmt.Sprintf("; the steps get slower as the run goes on (%s to %s): the window shows its earlier steps (the first finding)", units.Seconds(g.FirstMedianS), units.Seconds(g.LastMedianS))
	}
	if p := s.periodic(); p != nil && p.Share > sh*(1-p.Share) {
		// The slow steps take more of the run than the window's limiter
		// takes of the steps between them (its share of those, which are
		// the rest of the run): a PPO loop's rollout every 32 updates was
		// 67% of the run, its updates' per-op overhead 73% of the rest.
		v.Secondary = append([]Class{top.Class}, slices.DeleteFunc(v.Secondary, func(c Class) bool { return c == top.Class })...)
		v.Why = fmt.Sprintf("periodic-work explains %.0f%% of %s (its finding); between those steps, %s", pct(p.Share), p.ShareOf(), v.Why)
		v.Primary, v.SharePct = Periodic, 0
		v.Detail = fmt.Sprintf("%s %s, %.0fx the median: %.0f%% of %s", p.When(), units.Seconds(p.MeanS), p.MeanS/p.MedianS, pct(p.Share), p.ShareOf())
		v.Confidence = "medium"
	} else if p != nil {
		v.Secondary = append(v.Secondary, Periodic)
		v.Why += fmt.Sprintf("; %s %s (%.0f%% of %s)", p.When(), units.Seconds(p.MeanS), pct(p.Share), p.ShareOf())
		if !p.InWindow {
			v.Why += ", which the window does not show"
		}
		v.Why += " (its finding)"
	}
	if own, ok := s.startup(); ok {
		if s.startupInChildren() {
			oversubscribed := ""
			if c, cpus, ok := s.childrenOversubscribed(); ok {
				oversubscribed = fmt.Sprintf(", and whose threads (%.1f wanting %d CPUs) waited for a CPU %.0f%% of their time", c.Runnable(), cpus, pct(c.WaitShare()))
			}
			v.Why += fmt.Sprintf("; before its first step the program waited %s for its multiprocessing children, whose work no step here holds%s, more than all its steps (%s): the second finding", units.Seconds(own), oversubscribed, units.Seconds(s.in.Run.StepsS))
		} else {
			v.Why += fmt.Sprintf("; before its first step the program worked %s in its own code, more than all its steps (%s): the second finding", units.Seconds(own), units.Seconds(s.in.Run.StepsS))
		}
	}
	if steps, before, ok := s.shortRun(); ok {
		v.Why += fmt.Sprintf("; this run's steps take %s in all, against %s before the first began: here no change to the steps saves more than that, in a longer run what the findings say", units.Seconds(steps), units.Seconds(before))
	}
	if _, _, on := s.anomaly(); on {
		// its finding goes first: the first line says why
		v.Secondary = append(v.Secondary, Debug)
		v.Why += "; autograd anomaly detection is on and slows every op: turn it off first (the first finding)"
	}
	if m := s.memoryGrowth(); m != nil {
		v.Secondary = append(v.Secondary, MemoryGrowth)
		v.Why += fmt.Sprintf("; memory grows %s per step (%s): the run ends when it runs out", units.Bytes(m.SlopeBytes), m.Source)
	}
	s.d.Verdict = v
}

// partialRanks: the job has more ranks than the input holds. A collective
// ends when the last rank joins it, so one rank's trace cannot tell
// transfer time from waiting for the others.
func (s *state) partialRanks() (read, world int, partial bool) {
	read, world = s.in.RanksRead, s.in.WorldSize
	return read, world, world > 1 && read > 0 && read < world
}

// critPathNote explains a disagreement between the verdict and the
// critical path of the analysed step ("" when they agree or there is no
// path).
func (s *state) critPathNote(c Class) string {
	cp := s.in.CritPath
	// a path much shorter than the step leaves most of it unexplained
	if cp == nil || cp.BoundBy == "" || cp.LengthUs < 0.8*s.step {
		return ""
	}
	var share float64
	for _, b := range cp.Breakdown {
		if b.Category == cp.BoundBy {
			share = b.Pct
		}
	}
	switch {
	case c == GPUCompute && (cp.BoundBy == "cpu" || cp.BoundBy == "kernel_launch_overhead") && share >= 50:
		return fmt.Sprintf("the critical path of the step runs mostly through %s (%.0f%%), not kernels: shorter kernels alone would leave the host on the path", cp.BoundBy, share)
	case c != GPUCompute && c != Comm && c != Copy && cp.BoundBy == "gpu_compute" && share >= 50:
		return fmt.Sprintf("the critical path runs mostly through kernels (%.0f%%): removing the %s time shortens the step until the device is saturated, then kernels limit it", share, c)
	}
	return ""
}

// savingNote says how a class's saving was found, for the verdict's why.
func savingNote(c ClassScore) string {
	if c.SavingMethod == "replay" {
		return "replayed, its fix saves"
	}
	return "its fix would save"
}

func nextText(cs []ClassScore) string {
	if len(cs) < 2 {
		return "none"
	}
	return fmt.Sprintf("%s %.0f%%, fix ~%.0f%%", cs[1].Class, cs[1].SharePct, cs[1].SavingPct)
}

func lower(c string) string {
	switch c {
	case "high":
		return "medium"
	case "medium":
		return "low"
	}
	return c
}

func classOrder() map[Class]int {
	o := map[Class]int{}
	for i, c := range []Class{Input, IO, GC, Recompile, Sync, Launch, Copy, Comm, Overhead, Host, GPUCompute, CPUCompute, Memory, MemoryGrowth, Slowing, Periodic, Debug, Straggler, Unexplained} {
		o[c] = i
	}
	return o
}

// memoryPressure flags devices near capacity (not a share of time: a risk).
func (s *state) memoryPressure() {
	m := s.in.Memory
	if m == nil {
		return
	}
	for _, d := range m.Devices {
		if d.DeviceType == 0 || d.TotalBytes == 0 {
			continue
		}
		if d.PeakReservedPct >= s.p.MemoryPct {
			s.ev[Memory] = append(s.ev[Memory], Evidence{d.Device + " peak reserved", d.PeakReservedPct, "% of device memory", "memory"},
				Evidence{d.Device + " peak allocated", d.PeakAllocatedPct, "% of device memory", "memory"})
			s.share[Memory] = 0
		}
	}
}

func (s *state) unmeasured() {
	u := func(c Class, why string) { s.d.Unknown = append(s.d.Unknown, Unmeasured{c, why}) }
	if s.in.Input != nil && s.in.Input.Calls == 0 && (s.in.Run == nil || !s.in.Run.HasDataLoader) {
		u(Input, "no DataLoader __next__ in the trace (data loaded another way is not visible)")
	}
	if s.py == nil {
		u(IO, "needs a Python profile (bottleneck run)")
	}
	if r := s.in.Run; r == nil || r.GC == nil {
		u(GC, "needs the agent's per-step record (bottleneck run)")
	}
	if r := s.in.Run; r == nil || r.Memory == nil {
		u(MemoryGrowth, "needs the agent's per-step memory record (bottleneck run, at least 8 steps after start-up)")
	}
	if s.usesGPU && (s.in.Memory == nil || s.in.Memory.Events == 0) {
		u(Memory, "no [memory] events (record with profile_memory=True)")
	}
	u(Straggler, "needs several ranks")
}

func isConv(name string) bool {
	n := strings.ToLower(name)
	if strings.Contains(n, "nccl") {
		return false
	}
	for _, p := range convNames {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

func isDeviceWork(name string) bool {
	return !strings.HasPrefix(name, "Memcpy") && !strings.HasPrefix(name, "Memset") && !classify.IsCommKernel(name)
}
