package diagnose

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Work every N steps (a checkpoint, an evaluation, a log flush) makes
// every Nth step an outlier. A recorded window of a few steps rarely
// holds one, so the window's verdict is blind to it, and host.off-step
// (work in every step) is silent by design; the run's step times show it.

var _ = addRule(Rule{
	ID: "run.periodic", Class: Periodic, Factor: 0.9,
	When: "run evidence: >= 3 steps after start-up and outside the window (each less its collections' pauses and its waits for a CPU and for a DataLoader), holding half the time of all those over twice their median above it, take over twice it every N steps (N >= 3) and are >= 2/3 of the steps at those places, a fit slow steps as frequent placed at random reach under 5% of the time over the fits tried, and their time above the median >= MinFinding of the run's step time; what they do: a framework's checkpoint saves and validation (framework phases) when they hold half the slow steps' time above the median, with the epoch's own start and end where an epoch is that long, else the whole run's file I/O (>= half that share) or off-step work (host.off-step's kinds), else the slow steps' own samples' lines (mostly a module's forward, inside a package, or the first line the program's call of a model on at most 8 rows: give each call more, more environments stepped together in an RL rollout), else how to record one; silent when an epoch's DataLoader restart has that period (and, timed in the steps after each start, holds half the slow steps' time above the median: an evaluation at each epoch's end has the period too), or that framework work is run.checkpoint's or run.validation's (they fire)",
	Change: orTry("run the periodic work less often or in the background: an asynchronous checkpoint (torch.distributed.checkpoint.async_save)",
		"a smaller or rarer evaluation"),
	detect: (*state).periodicFinding,
	Fires:  "TestPeriodicFinding", Silent: "TestPeriodicFinding",
})

// periodicFinding: the run's steps every N steps spend at least
// MinFinding of the run's step time above the median. What they do comes
// from the whole run's samples that the window lacks: file I/O
// (io.in-step's lines over the whole run), an evaluation or metrics
// (host.off-step's), else the finding says how to record such a step.
// At stake: that share of the step. Silent where periodic says.
func (s *state) periodicFinding() {
	p := s.periodic()
	if p == nil || p.InWindow {
		return
	}
	r := s.in.Run
	steps := make([]string, len(p.Steps))
	for i, n := range p.Steps {
		steps[i] = fmt.Sprint(n)
	}
	if p.Count > len(p.Steps) {
		steps = append(steps, "...")
	}
	ms := []Evidence{{"steps over twice the median at that interval", float64(p.Count), "", "evidence"},
		{"mean duration of those steps", p.MeanS * 1e6, "us", "evidence"},
		{"median step", p.MedianS * 1e6, "us", "evidence"},
		{"their time above the median, share of the run's step time", pct(p.Share), "%", "evidence"}}
	what, change := "", ""
	var where []Location
	py := r.Python
	valS, saveS := s.frameworkPeriodic(p)
	switch {
	case valS > 0 || saveS > 0:
		// a framework's checkpoint saves or validation, each under its
		// own rule's share (else that rule has it): Lightning's DQN
		// template saved a checkpoint at every 13-step epoch's end, 5% of
		// its wall time, and its epoch boundaries held 12% of the step
		// time; saving every 10th epoch and epochs of 62 steps measured
		// 1.14x
		what, change = s.frameworkPeriodicChange(p, valS, saveS)
		phase := "save_checkpoint"
		if valS > saveS {
			phase = "validation"
		}
		where = []Location{{Kind: "phase", Name: phase, Note: r.Phases.Framework + " phases"}}
		ms = append(ms, Evidence{"validation and checkpoint saves' self time, whole run", (valS + saveS) * 1e6, "us", "framework phases"})
	case py != nil && py.RunIOShare >= p.Share/2 && len(py.RunIOLines) > 0:
		what = "file I/O"
		for _, l := range py.RunIOLines[:min(3, len(py.RunIOLines))] {
			where = append(where, lineLocation(l, "file I/O, main-thread samples, whole run"))
		}
		ms = append(ms, Evidence{"main-thread samples in file I/O, whole run", pct(py.RunIOShare), "%", "pyprofile"})
		change = fmt.Sprintf("the write every %d steps at %s blocks training for %s each time: write asynchronously (torch.distributed.checkpoint.async_save, or copy the state_dict to CPU tensors and write them on a background thread), or write less often", p.Every, lineName(where[0]), units.Seconds(p.MeanS-p.MedianS))
	case py != nil && py.OffStepShare >= p.Share/2 && len(py.OffStep) > 0:
		top := py.OffStep[0]
		what = top.Kind
		for _, l := range py.OffStep[:min(3, len(py.OffStep))] {
			where = append(where, lineLocation(l.Line, l.Kind+", whole run"))
		}
		ms = append(ms, Evidence{"main-thread samples in it, whole run", pct(py.OffStepShare), "%", "pyprofile"})
		change = fmt.Sprintf("the %s every %d steps at %s takes %s each time: run it less often or on fewer batches (a subset of the validation set), under torch.inference_mode(), or in another process on a copy of the weights", top.Kind, p.Every, lineName(where[0]), units.Seconds(p.MeanS-p.MedianS))
	case py != nil && py.SlowSamples >= s.p.MinSlowSamples && len(py.SlowLines) > 0 && py.SlowLines[0].Pct >= 10:
		// the agent's samples of the slow steps: what they do, window or not
		var names string
		where, names = namedLines(py.SlowLines, 3, "main-thread samples in steps over twice the median, whole run")
		if l, ok := s.slowLoopLine(); ok {
			// the loop's own line first: the evaluation it calls, where
			// the lines above are deep inside it (bigram.py's
			// estimate_loss, named by its get_batch before)
			loc := lineLocation(l, "the training loop's line, main-thread samples in steps over twice the median, whole run")
			where = append([]Location{loc}, slices.DeleteFunc(where, func(w Location) bool { return w.File == loc.File && w.Line == loc.Line })...)
			names = fmt.Sprintf("%s %.0f%% at the training loop's level, and inside it %s", lineName(loc), l.Pct, names)
		}
		ms = append(ms, Evidence{"main-thread samples in steps over twice the median, whole run", float64(py.SlowSamples), "", "pyprofile"})
		change = fmt.Sprintf("the slow steps' time goes to %s (their main-thread samples): that work every %d steps takes %s each time; make it cheaper (one op over a batch instead of a loop of small calls), run it less often, or overlap it with the steps (a background thread or process)", names, p.Every, units.Seconds(p.MeanS-p.MedianS))
		if model := s.rolloutModel(py.SlowLines[0]); model != "" {
			what = "a module's forward"
			change = fmt.Sprintf("the slow steps' time goes to %s (their main-thread samples): that work every %d steps takes %s each time, %s; "+
				"if it calls the model once per item (an RL rollout once per environment step, a sampling loop once per token), give each call more: "+
				"step more environments together (a vectorized environment: stable_baselines3's make_vec_env(..., n_envs=8), gymnasium.vector.SyncVectorEnv), or sample for several prompts at once; "+
				"else run it less often, or overlap it with the steps (a background thread or process)", names, p.Every, units.Seconds(p.MeanS-p.MedianS), model)
		}
	default:
		// record one: the window starts skip_first + warmup steps in
		change = fmt.Sprintf("the recorded window holds none of these steps, so what they do is not known: record one with bottleneck run --skip-first %d --warmup 1 --active 2 (steps %d-%d), then run it less often or in the background", max(0, p.Steps[0]-3), max(2, p.Steps[0]-1), p.Steps[0])
	}
	title := fmt.Sprintf("Every %d steps a step takes %s, %.1fx the median (steps %s): %.0f%% of the run's step time", p.Every, units.Seconds(p.MeanS), p.MeanS/p.MedianS, strings.Join(steps, ", "), pct(p.Share))
	if what != "" {
		title += ", in " + what
	}
	s.emit(s.finding("run.periodic", title, p.Share*s.step, ms, where, change))
}

// rolloutModel says which model the slow steps' top line spends them in,
// where that is a loop calling it once per item, as a rollout does (""
// otherwise): two thirds or more of the line's samples in a module's
// forward called inside a package (PPO on CartPole in stable-baselines3,
// a rollout every 320 updates, 53% of the run's step time: 8
// environments stepped together ran 2.2x faster), or the line is the
// program's own call of a model whose input has at most maxRolloutBatch
// rows (cleanrl's PPO: its policy called on its 4 environments'
// observations, [4, 4], a rollout of 128 steps every 16 updates, 66% of
// the run's step time: 16 environments of 32 steps each, the same batch
// an update, ran 1.47x faster).
func (s *state) rolloutModel(l runevidence.Line) string {
	if in := l.Inside; in != nil && in.Module {
		return "mostly in " + strings.TrimSuffix(in.Func, ".forward") + "'s forward"
	}
	if s.in.Run == nil {
		return ""
	}
	for _, m := range s.in.Run.Models {
		if m.File == l.File && m.Line == l.Line && len(m.Input) > 0 && m.Input[0] >= 1 && m.Input[0] <= maxRolloutBatch {
			return fmt.Sprintf("the first line a call of %s (%s:%d) on an input of %s", m.Class, filepath.Base(m.File), m.Line, shapeText(m.Input))
		}
	}
	return ""
}

// maxRolloutBatch: the most rows a model's input has for rolloutModel to
// take its calls for a loop over items, each call with a few of them (a
// vectorized environment's observations).
const maxRolloutBatch = 8

// lineName is a Python location as file:line.
func lineName(l Location) string { return fmt.Sprintf("%s:%d", filepath.Base(l.File), l.Line) }

// namedLines are the first n lines as locations with the note, and as
// text for a change: "train.py:30 60%, train.py:12 25%".
func namedLines(lines []runevidence.Line, n int, note string) ([]Location, string) {
	var where []Location
	var names []string
	for _, l := range lines[:min(n, len(lines))] {
		loc := lineLocation(l, note)
		name := fmt.Sprintf("%s %.0f%%", lineName(loc), l.Pct)
		if loc.Inside != "" {
			name += " (" + loc.Inside + ")"
		}
		where, names = append(where, loc), append(names, name)
	}
	return where, strings.Join(names, ", ")
}

// slowLoopLine is the training loop's line that leads to most of the slow
// steps' samples, when it is not their innermost line already (the loop
// runs the work itself) and leads to at least half of them.
func (s *state) slowLoopLine() (runevidence.Line, bool) {
	py := s.in.Run.Python
	if len(py.SlowLoopLines) == 0 || len(py.SlowLines) == 0 {
		return runevidence.Line{}, false
	}
	l := py.SlowLoopLines[0]
	inner := py.SlowLines[0]
	return l, l.Pct >= 50 && (l.File != inner.File || l.Line != inner.Line)
}

// periodic is the run's periodic steps when they take at least
// MinFinding of the run's step time, and neither the DataLoader (most of
// the slow steps' samples wait for it), an epoch's restart of the
// DataLoader's workers, a framework's validation or checkpoint phases
// (run.validation's and run.checkpoint's) nor a second optimizer explain
// them.
func (s *state) periodic() *runevidence.PeriodicSteps {
	r := s.in.Run
	if r == nil || r.Periodic == nil || r.Periodic.Share < s.p.MinFinding {
		return s.windowPeriodic()
	}
	p := r.Periodic
	if py := r.Python; py != nil && py.SlowSamples >= s.p.MinSlowSamples && py.SlowLoaderShare >= 0.5 {
		// the slow steps wait for the DataLoader: its workers deliver a
		// round of batches at once (4 workers: every 4th step waited
		// 170 ms for the next round), which is input-bound, not work
		// every N steps
		return nil
	}
	if len(r.Optimizers) >= 2 {
		// the step is one optimizer's: with the step on a GAN's critic
		// (a window that came before the generator's first step, or an
		// older agent), the generator's update after every 5 critic steps
		// made every 5th step slow
		return nil
	}
	if valS, saveS := s.frameworkPeriodic(p); (valS > 0 || saveS > 0) && (s.validationFires() || s.checkpointFires()) {
		return nil // a framework's validation or checkpoints: run.validation's and run.checkpoint's
	}
	for _, l := range r.Loaders {
		// an epoch's start that starts worker processes again; without
		// workers, or with persistent ones, what the epoch's end does (an
		// evaluation pass) is the periodic work
		restarts := l.NumWorkers != nil && *l.NumWorkers > 0 && (l.PersistentWorkers == nil || !*l.PersistentWorkers)
		if restarts && l.Iterators >= 2 && l.Batches > 0 {
			per := float64(l.Batches) / float64(l.Iterators)
			// timed, the restarts must hold half the slow steps' excess:
			// an evaluation at each epoch's end has the epoch's period too
			timed := l.RestartsTimed == 0 || l.RestartStepsS/float64(l.RestartsTimed)*float64(l.Iterators-1) >= p.ExcessS/2
			if math.Abs(per-float64(p.Every)) <= 1 && timed {
				return nil // input.loader's or input.worker-restarts'
			}
		}
	}
	return p
}

// frameworkPeriodic is a framework's validation and checkpoint saving
// self time over the run (framework phases) when together they hold half
// the periodic steps' time above the median; zeros otherwise.
func (s *state) frameworkPeriodic(p *runevidence.PeriodicSteps) (valS, saveS float64) {
	fp := s.in.Run.Phases
	if fp == nil {
		return 0, 0
	}
	valS, _, _ = validationTime(fp)
	saveS, _ = checkpointTime(fp)
	if valS+saveS < p.ExcessS/2 {
		return 0, 0
	}
	return valS, saveS
}

// frameworkPeriodicChange says what the framework does every p.Every
// steps and how to do it less often, where its validation and saves are
// each under their own rule's share.
func (s *state) frameworkPeriodicChange(p *runevidence.PeriodicSteps, valS, saveS float64) (what, change string) {
	r := s.in.Run
	lightning := r.Phases.Framework == "lightning"
	name := "the Trainer"
	if lightning {
		name = "Lightning"
	}
	var whats, hows []string
	if _, saves := checkpointTime(r.Phases); saveS > 0 && saves > 0 {
		how := trainerSaveLessOften
		if lightning {
			how = "save less often (ModelCheckpoint(every_n_epochs=N), or every_n_train_steps=N larger), save_weights_only=True when the optimizer's state is not needed to resume, or write in the background (Trainer(plugins=[AsyncCheckpointIO()]))"
		}
		whats = append(whats, "checkpoint saves")
		hows = append(hows, fmt.Sprintf("%d saves of %s each: %s", saves, units.Seconds(saveS/float64(saves)), how))
	}
	if valS > 0 {
		whats = append(whats, "validation")
		hows = append(hows, fmt.Sprintf("validation, %s over the run: %s", units.Seconds(valS), validateLessOften(r.Phases.Framework)))
	}
	what = strings.Join(whats, " and ")
	change = fmt.Sprintf("%s's %s come every %d steps and hold %s of the %s those steps take above the median over the run: %s",
		name, what, p.Every, units.Seconds(valS+saveS), units.Seconds(p.ExcessS), strings.Join(hows, "; "))
	for _, l := range r.Loaders {
		if l.Iterators >= 2 && l.Batches > 0 && math.Abs(float64(l.Batches)/float64(l.Iterators)-float64(p.Every)) <= 1 {
			change += fmt.Sprintf("; an epoch is %d steps, so the epoch's own start and end (a new DataLoader iterator, the epoch's hooks) come as often: fewer, longer epochs pay them less often", p.Every)
			break
		}
	}
	return what, change
}

// windowPeriodic is the recorded window's own outlier steps as periodic
// work, when two or more of them, at least 3 steps apart (a busy spell
// slows steps in a row; every other step slow is two kinds of step),
// take MinFinding of the recorded steps' time (those used and those
// outliers) above the median, their recompilations left out (those are
// compile.recompile's), and with run evidence their garbage collections
// and waits for a CPU (gc.pauses' and the machine's: a churning loop's
// full collection every 9 steps, 400 ms each, was called periodic work
// nothing recorded): the trace alone
// tells what they do (window.OutlierWork). A trainer that evaluated
// every N steps, 35-43% of its loop, was told only that its steps N and
// 2N were outliers.
func (s *state) windowPeriodic() *runevidence.PeriodicSteps {
	w := s.in.Window
	if w == nil || w.OutlierWork == nil || w.MedianUs <= 0 {
		return nil
	}
	p := &runevidence.PeriodicSteps{InWindow: true, Work: w.OutlierWork, MedianS: w.MedianUs / 1e6}
	var notOwn map[int]float64
	if r := s.in.Run; r != nil {
		notOwn = r.NotOwnS
	}
	var totalUs, slowUs float64
	gaps := map[int]bool{}
	for i, st := range w.Steps {
		if i == 0 && st.Excluded == window.Outlier {
			// the first recorded step carries the profiler's start (a
			// per-sample FGSM loop's: 17 ms against a median of 1.2):
			// no occurrence, and two outliers 22 steps apart, one of
			// them that, were called an evaluation every 22 steps
			continue
		}
		switch st.Excluded {
		case window.Outlier:
			if len(p.Steps) > 0 {
				gaps[i-p.Steps[len(p.Steps)-1]] = true
			}
			p.Steps = append(p.Steps, i)
			n, _ := strconv.Atoi(st.Step)
			// compile.recompile's, gc.pauses' and the machine's load
			slowUs += st.Us - st.RecompileUs - 1e6*notOwn[n]
		case "":
		default:
			continue
		}
		totalUs += st.Us
	}
	if gaps[1] || gaps[2] || len(p.Steps) < 2 || totalUs <= 0 {
		return nil // every other step slow: two kinds of step (run.periodic's N >= 3)
	}
	p.Count = len(p.Steps)
	p.MeanS = slowUs / float64(p.Count) / 1e6
	p.ExcessS = (slowUs - float64(p.Count)*w.MedianUs) / 1e6
	p.Share = p.ExcessS * 1e6 / totalUs
	if p.Share < s.p.MinFinding {
		return nil
	}
	if len(gaps) == 1 {
		for g := range gaps {
			p.Every = g
		}
	}
	// the step numbers, not their indices
	for k, i := range p.Steps {
		p.Steps[k], _ = strconv.Atoi(w.Steps[i].Step)
	}
	return p
}

var _ = addRule(Rule{
	ID: "steps.periodic", Class: Periodic, Factor: 0.9,
	When:   "window check: >= 2 of the recorded steps left out as outliers (the first recorded step, which carries the profiler's start, aside), >= 3 steps apart, their time above the median (less their recompilations and, with run evidence, their garbage collections and waits for a CPU) >= MinFinding of the recorded steps' time (used and outliers), and no run.periodic; what they do: the outermost ops and ranges they spend more in than an ordinary step (forward ops with under a tenth of it in the backward: an evaluation), or, when those hold under half the excess, work nothing recorded",
	Change: "make the work cheaper, run it less often or on fewer batches, or move it off the loop (another process, async_save)",
	detect: (*state).windowPeriodicFinding,
	Fires:  "TestWindowPeriodic", Silent: "driver.TestVerdictCorpus/run_checkpoint_outlier",
})

// windowPeriodicFinding names what the window's outlier steps do beyond
// an ordinary step: forward ops with no backward beside them are an
// evaluation; extra time with nothing recorded is Python, file I/O or
// sleeping (a checkpoint's write records no op).
func (s *state) windowPeriodicFinding() {
	p := s.periodic()
	if p == nil || !p.InWindow {
		return
	}
	wk := p.Work
	each := units.Seconds(p.MeanS - p.MedianS)
	ms := []Evidence{{"outlier steps in the window", float64(p.Count), "", "window"},
		{"mean duration of those steps", p.MeanS * 1e6, "us", "window"},
		{"median step", p.MedianS * 1e6, "us", "window"},
		{"their time above the median, share of the recorded steps' time", pct(p.Share), "%", "window"},
		{"of that, in recorded ops and ranges", pct(wk.RecordedUs / wk.ExcessUs), "%", "window"}}
	var where []Location
	var names []string
	for _, n := range wk.Top[:min(3, len(wk.Top))] {
		where = append(where, Location{Kind: "op", Name: n.Name, Note: units.Duration(n.Us) + " more per slow step than per ordinary step"})
		names = append(names, fmt.Sprintf("%s %s", n.Name, units.Duration(n.Us)))
	}
	what, change := "", ""
	switch {
	case wk.RecordedUs < wk.ExcessUs/2:
		what = "work the profiler does not record"
		change = fmt.Sprintf("%.0f%% of the slow steps' extra %s ran with no op recorded: Python, file I/O (a checkpoint's write records no op) or sleeping; bottleneck run samples the program's lines there and names them. Then run that work less often, or in the background (torch.distributed.checkpoint.async_save for a checkpoint)", pct(1-wk.RecordedUs/wk.ExcessUs), each)
	case wk.BackwardUs < wk.RecordedUs/10 && len(names) > 0:
		what = "an evaluation"
		change = fmt.Sprintf("the slow steps run forward ops with no backward beside them (%s): an evaluation pass, %s each time. Evaluate less often or on fewer batches (a subset of the validation set), under torch.inference_mode(), or in another process on a copy of the weights", strings.Join(names, ", "), each)
	case len(names) > 0:
		change = fmt.Sprintf("the slow steps' extra %s goes to %s: make that work cheaper, run it less often, or overlap it with the steps (a background thread or process)", each, strings.Join(names, ", "))
	}
	when := p.When()
	title := fmt.Sprintf("%s %s, %.1fx the median: %.0f%% of %s", strings.ToUpper(when[:1])+when[1:], units.Seconds(p.MeanS), p.MeanS/p.MedianS, pct(p.Share), p.ShareOf())
	if what != "" {
		title += ", in " + what
	}
	s.emit(s.finding("steps.periodic", title, p.Share*s.step, ms, where, change))
}
