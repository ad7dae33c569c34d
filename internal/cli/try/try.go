// Package try implements `bottleneck try`: run a program as it is and
// again with changes the agent makes at run time (rundir.ChangeKinds:
// DataLoader workers, threads, backend flags, the optimizer's
// implementation, the garbage collector), without editing it, and report
// the measured difference with its 95% interval beside what the first
// run's diagnosis predicted (docs/run.md, "Run-time changes").
package try

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/diff"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
	"github.com/bottleneck-dev/bottleneck/internal/runreport"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
	"github.com/bottleneck-dev/bottleneck/internal/units"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

// Options are the command's flags and arguments.
type Options struct {
	IO       *iostreams.IOStreams
	Args     []string
	Module   bool
	Launcher bool
	Python   string
	Out      string
	Set      map[string]string
	// Compare runs the program as it is and changed twice, interleaved
	// (A B A B), so drift of the machine shows as disagreeing pairs.
	Compare bool
	// Steps is how many steps each run times before its short recorded
	// window ends it: the comparison's samples.
	Steps   int
	Timeout time.Duration
	JSON    bool
	// Env and Dir are for tests (runner.Config).
	Env []string
	Dir string
}

// NewCmd returns the try command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios, Set: map[string]string{}}, Run)
}

// newCmd parses the command line into o and hands it to runF: Run, or a
// test's recorder, so that parsing is tested without running the program.
// Usage errors are found here, before runF (exit 2).
func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "try --set NAME=VALUE [--set ...] [flags] script.py [args...] | -m module [args...] | -- launcher [args...]",
		Short: "Measure a change: run the program as it is and changed, and compare",
		Long: `Run a Python program twice under bottleneck's agent: as it is, then with
the changes given by --set, which the agent makes at run time without
editing the program. Each run times --steps steps, records a short window
and ends; the report compares the two (median step, 95% interval from the
steps' spread) and sets the first run's predicted saving beside the
measured one.

  bottleneck try --set num_workers=4 train.py
  bottleneck try --set threads=2 --set gc_freeze=true --compare train.py
  bottleneck try --set num_workers=4 -- torchrun --nproc-per-node 2 train.py

With a launcher (-- torchrun ...) every rank is changed, and a step's time
is its slowest rank's.

Changes (NAME=VALUE):
` + changeHelp() + `
The program's output goes to a log beside each run directory, not to the
terminal; it runs with no stdin. Both runs do the program's side effects
(files it writes, services it calls): see docs/run.md.

Exit status: 0 both runs measured; the program's status when a run of it
failed; 2 bad usage.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			o.Launcher = cmd.ArgsLenAtDash() == 0
			if !o.Launcher && !o.Module {
				o.Python, o.Module, o.Launcher, o.Args = runner.SplitInterpreter(o.Python, args)
			}
			if len(args) == 0 {
				return exitcode.New(exitcode.Usage, errors.New("try: missing program: script.py or -m module"))
			}
			if len(o.Set) == 0 {
				return exitcode.New(exitcode.Usage, errors.New("try: nothing to try: give at least one --set NAME=VALUE"))
			}
			if o.Launcher && o.Module {
				return exitcode.New(exitcode.Usage, errors.New("try: -m and -- cannot be combined: use -- python -m module"))
			}
			if o.Steps < 3 {
				return exitcode.New(exitcode.Usage, errors.New("try: --steps must be at least 3 (an interval needs 3 steps a side)"))
			}
			if o.Timeout < 0 {
				return exitcode.New(exitcode.Usage, errors.New("try: --timeout must be >= 0 (0: no limit)"))
			}
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.Var(&changesValue{o.Set}, "set", "a change to try, NAME=VALUE (repeat for several at once)")
	f.BoolVarP(&o.Module, "module", "m", false, "run a module as `python -m` does")
	f.StringVar(&o.Python, "python", "", "Python interpreter (default: the active virtualenv's, else python3 on PATH)")
	f.StringVarP(&o.Out, "output", "o", "", "folder for the runs (default ./bottleneck-runs/<timestamp>-try)")
	f.BoolVar(&o.Compare, "compare", false, "run as-is and changed twice each, interleaved (A B A B)")
	f.IntVar(&o.Steps, "steps", 10, "steps each run times before its window (the comparison's samples)")
	f.DurationVar(&o.Timeout, "timeout", 0, "stop each run gracefully after this long (0: no limit)")
	f.BoolVar(&o.JSON, "json", false, "print the result as JSON (the same as try.json)")
	return cmd
}

// changesValue is --set: each NAME=VALUE checked when it is parsed.
type changesValue struct{ m map[string]string }

func (v *changesValue) Set(s string) error {
	name, value, err := rundir.ParseChange(s)
	if err != nil {
		return err
	}
	v.m[name] = value
	return nil
}

func (v *changesValue) String() string { return rundir.FormatChanges(v.m) }

func (v *changesValue) Type() string { return "NAME=VALUE" }

func changeHelp() string {
	var b strings.Builder
	for _, k := range rundir.ChangeKinds {
		note := ""
		if k.Numerics {
			note = " (changes numerics)"
		}
		fmt.Fprintf(&b, "  %-19s %-5s %s%s\n", k.Name, k.Value, k.What, note)
	}
	return b.String()
}

// Result is try.json: the runs and what the comparison measured.
type Result struct {
	Schema  string            `json:"schema"`
	Command []string          `json:"command"`
	Set     map[string]string `json:"set"`
	// Args are, instead of Set, the program's own options appended to its
	// arguments (run --verify of a diagnose.OptionTry).
	Args []string `json:"args,omitempty"`
	// Numerics: a change alters the program's numbers (rundir.ChangeKind.Numerics).
	Numerics bool `json:"changes_numerics"`
	// Pairs are the comparisons, one per round (two with --compare).
	Pairs []Pair `json:"pairs"`
	// Applied are the change run's records of where each change took effect.
	Applied []rundir.Change `json:"applied"`
	// Predicted is the first run's predicted saving for the changed cause (absent: its diagnosis names none).
	Predicted *Prediction `json:"predicted,omitempty"`
	// Pooled sums up the pairs of --compare (absent with one pair).
	Pooled *Pooled `json:"pooled,omitempty"`
}

// smallChange: a significant change of one pair smaller than this may be
// the machine's drift between runs (a change that did nothing measured
// 1.18x slower, 95% interval 1.03x to 1.35x, on the project's busy 2-core
// machine: cudnn.benchmark on a CPU-only program).
const smallChange = 0.25

// Pooled is the pairs of --compare taken together, against the machine's
// drift: the same runs repeated (as it is twice, changed twice) differ by
// what the machine adds, which no interval of one pair's steps holds.
type Pooled struct {
	// Speedup is the geometric mean of the pairs' mean speed-ups; Low and
	// High the lowest and the highest of them.
	Speedup float64 `json:"speedup"`
	Low     float64 `json:"low"`
	High    float64 `json:"high"`
	// DriftPct is how much the repeated runs' mean steps differ, the larger
	// of the two configurations', in percent.
	DriftPct float64 `json:"drift_pct"`
	// BeyondDrift: every pair moved the same way, by more than the drift.
	BeyondDrift bool `json:"beyond_drift"`
}

// pool sums up two or more pairs (nil for fewer).
func pool(pairs []Pair) *Pooled {
	if len(pairs) < 2 {
		return nil
	}
	p := &Pooled{Low: math.Inf(1), High: math.Inf(-1)}
	logSum := 0.0
	baseLo, baseHi, newLo, newHi := math.Inf(1), 0.0, math.Inf(1), 0.0
	for _, x := range pairs {
		if x.MeanSpeedup <= 0 || x.MeanBaseUs <= 0 || x.MeanNewUs <= 0 {
			return nil
		}
		logSum += math.Log(x.MeanSpeedup)
		p.Low, p.High = min(p.Low, x.MeanSpeedup), max(p.High, x.MeanSpeedup)
		baseLo, baseHi = min(baseLo, x.MeanBaseUs), max(baseHi, x.MeanBaseUs)
		newLo, newHi = min(newLo, x.MeanNewUs), max(newHi, x.MeanNewUs)
	}
	p.Speedup = math.Exp(logSum / float64(len(pairs)))
	p.DriftPct = 100 * max(baseHi/baseLo-1, newHi/newLo-1)
	drift := 1 + p.DriftPct/100
	p.BeyondDrift = p.Low > drift || p.High < 1/drift
	return p
}

// Pair is one run as it is against one run changed.
type Pair struct {
	BaseDir   string `json:"base_dir"`
	ChangeDir string `json:"change_dir"`
	// Headline is the diff engine's comparison of the median steps.
	Headline diff.Headline `json:"headline"`
	// Speedup is the base's median step over the changed one's; SpeedupLow..SpeedupHigh its 95% interval (0 when unknown).
	Speedup     float64 `json:"speedup"`
	SpeedupLow  float64 `json:"speedup_low"`
	SpeedupHigh float64 `json:"speedup_high"`
	// MeanBaseUs and MeanNewUs are the mean steps, slow ones included:
	// what the run takes (a collection every 9 steps moves the mean, not
	// the median); MeanSpeedup their ratio, MeanLow..MeanHigh its 95%
	// interval (0 when unknown), MeanSignificant when it excludes 1x.
	MeanBaseUs      float64 `json:"mean_base_us"`
	MeanNewUs       float64 `json:"mean_change_us"`
	MeanSpeedup     float64 `json:"mean_speedup"`
	MeanLow         float64 `json:"mean_speedup_low"`
	MeanHigh        float64 `json:"mean_speedup_high"`
	MeanSignificant bool    `json:"mean_significant"`
	BaseVerdict     string  `json:"base_verdict"`
	NewVerdict      string  `json:"change_verdict"`
	// DeviceBehindBaseUs and DeviceBehindNewUs are how long each run's
	// device still worked when its timed steps ended (rundir.Evidence's
	// DeviceBehindS): the agent waited for it in the last timed step.
	// HostAhead: in either run that wait is over hostAheadShare of its
	// timed steps' sum, so the host ran ahead of the device: the median
	// (Headline, Speedup) is the host's step, which understates the step;
	// the mean holds the wait.
	DeviceBehindBaseUs float64 `json:"device_behind_base_us"`
	DeviceBehindNewUs  float64 `json:"device_behind_change_us"`
	HostAhead          bool    `json:"host_ahead"`
	// BaseStepsUs and NewStepsUs are the compared steps, in order.
	BaseStepsUs []float64 `json:"base_steps_us"`
	NewStepsUs  []float64 `json:"new_steps_us"`
	// BaseSteps and NewSteps are the first and the last number of the
	// compared steps in each run ([0, 0]: not the agent's steps).
	BaseSteps [2]int `json:"base_step_range"`
	NewSteps  [2]int `json:"change_step_range"`
	// CPUWaitBaseUs and CPUWaitNewUs are the compared steps' mean wait
	// for a CPU (the main thread runnable, not running: the machine's
	// load, or the program's own threads), when CPUWaitKnown; LoadDiffers:
	// that wait makes up most of the difference (loadDiffers).
	CPUWaitBaseUs float64 `json:"cpu_wait_base_us"`
	CPUWaitNewUs  float64 `json:"cpu_wait_change_us"`
	CPUWaitKnown  bool    `json:"cpu_wait_known"`
	LoadDiffers   bool    `json:"load_differs"`
	// Work is set when the compared steps did different work (diff.Result.Work).
	Work *rundir.StepWork `json:"work,omitempty"`
}

// hostAheadShare is the share of a run's timed steps above which the wait
// for the device at their end says the host ran ahead of it (Pair.HostAhead).
const hostAheadShare = 0.10

// Prediction is what the first run's diagnosis said the change's cause
// would save.
type Prediction struct {
	Rule      string  `json:"rule"`
	SavingPct float64 `json:"saving_pct"`
	Speedup   float64 `json:"speedup"`
	Method    string  `json:"method"`
}

// Schema names try.json's format.
const Schema = "bottleneck.try/v1"

// Run executes try with o.
func Run(o *Options) error {
	dir, err := outDir(o.Out)
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("try: %w", err))
	}
	res := &Result{Schema: Schema, Command: o.Args, Set: o.Set, Numerics: numerics(o.Set), Applied: []rundir.Change{}}
	rounds := 1
	if o.Compare {
		rounds = 2
	}
	for r := 1; r <= rounds; r++ {
		base, err := o.runOnce(filepath.Join(dir, fmt.Sprintf("base-%d", r)), nil, fmt.Sprintf("run %d of %d: as it is", 2*r-1, 2*rounds))
		if err != nil {
			return err
		}
		changed, err := o.runOnce(filepath.Join(dir, fmt.Sprintf("change-%d", r)), o.Set, fmt.Sprintf("run %d of %d: with %s", 2*r, 2*rounds, rundir.FormatChanges(o.Set)))
		if err != nil {
			return err
		}
		p, findings, err := compare(o.IO, base, changed, 0)
		if err != nil {
			return exitcode.New(exitcode.Failed, fmt.Errorf("try: %w", err))
		}
		res.Pairs = append(res.Pairs, *p)
		if r == 1 {
			res.Applied = applied(changed)
			res.Predicted = predicted(findings, o.Set)
		}
	}
	res.Pooled = pool(res.Pairs)
	if err := writeJSON(filepath.Join(dir, "try.json"), res); err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("try: %w", err))
	}
	if o.JSON {
		b, _ := json.MarshalIndent(res, "", "  ")
		_, err := o.IO.Out.Write(append(b, '\n'))
		return err
	}
	Write(o.IO.Out, res)
	fmt.Fprintf(o.IO.Out, "runs: %s (bottleneck diff %s %s compares them in full)\n", dir, res.Pairs[0].BaseDir, res.Pairs[0].ChangeDir)
	return nil
}

// Verify tries the run-time changes of the first findings that have one
// (diagnose.Finding.Try, at most max; one that changes numerics only
// withNumerics, run --verify=numerics), each in one more run of the
// program into base-tried-N, compared with the run already made in base;
// the results are written to w, to each tried run's try.json, and,
// measured against predicted, to base's tried.json (its reports show
// them).
func Verify(o *Options, w io.Writer, base string, findings []diagnose.Finding, max int, withNumerics bool) {
	var tried []rundir.TriedChange
	defer func() {
		if len(tried) > 0 {
			if err := rundir.WriteTried(base, tried); err != nil {
				fmt.Fprintf(w, "bottleneck: %v\n", err)
			}
		}
	}()
	chosen, held, idle := toVerify(findings, max, withNumerics)
	for _, f := range held {
		fmt.Fprintf(w, "%s: %s changes numerics: not tried (run --verify=numerics tries it%s)\n", f.Rule, textsafe.String(triedWhat(f)), tryHint(f))
	}
	for _, f := range idle {
		fmt.Fprintf(w, "%s: %s is predicted to save %.1f%% of the step: not tried%s\n", f.Rule, textsafe.String(triedWhat(f)), trySaving(f), tryHint(f))
	}
	for i, f := range chosen {
		dir := fmt.Sprintf("%s-tried-%d", strings.TrimRight(base, string(filepath.Separator)), i+1)
		saving := trySaving(f)
		res := &Result{Schema: Schema, Command: o.Args, Set: f.Try, Numerics: changesNumerics(f), Applied: []rundir.Change{},
			Predicted: &Prediction{Rule: f.Rule, SavingPct: saving, Speedup: 1 / (1 - min(saving, 99)/100), Method: f.SavingMethod}}
		ro, from, epochCaveat := o.plan(base, f)
		if t := optionTry(f); t != nil {
			res.Args = t.Args
		}
		var changed string
		var err error
		if res.Args != nil && slices.Contains(o.Args, "--") {
			err = errors.New(`the program's arguments hold "--": options appended after it would be positional`)
		} else {
			changed, err = ro.runOnce(dir, f.Try, fmt.Sprintf("verifying %s: one more run with %s", f.Rule, triedWhat(f)))
		}
		if err == nil {
			var p *Pair
			if p, _, err = compare(o.IO, base, changed, from); err == nil {
				res.Pairs = append(res.Pairs, *p)
				res.Applied = applied(changed)
				err = writeJSON(filepath.Join(changed, "try.json"), res)
			}
		}
		tc := rundir.TriedChange{Rule: f.Rule, Set: f.Try, Args: res.Args, Numerics: res.Numerics, Dir: dir,
			PredictedSavingPct: saving, PredictedSpeedup: res.Predicted.Speedup, PredictedMethod: f.SavingMethod}
		if err != nil {
			fmt.Fprintf(w, "%s: not verified: %v\n", f.Rule, err)
			tc.Error = err.Error()
			tried = append(tried, tc)
			continue
		}
		Write(w, res)
		p := res.Pairs[0]
		if c := wholeRunCaveat(p); c != "" {
			fmt.Fprintf(w, "  %s\n", c)
			tc.Caveat = c
		}
		for _, c := range append([]string{prefetchCaveat(f.Try, lastStep(p))}, slowCaveats(p)...) { // (Write printed them)
			if c != "" {
				tc.Caveat = strings.TrimPrefix(tc.Caveat+"; "+c, "; ")
			}
		}
		if epochCaveat != "" {
			fmt.Fprintf(w, "  %s\n", epochCaveat)
			tc.Caveat = strings.TrimPrefix(tc.Caveat+"; "+epochCaveat, "; ")
		}
		if p.LoadDiffers {
			tc.Caveat = strings.TrimPrefix(tc.Caveat+"; "+loadNote(p, f.Try), "; ")
		}
		tc.MeanBaseUs, tc.MeanNewUs, tc.MeanSpeedup, tc.MeanLow, tc.MeanHigh, tc.Significant = p.MeanBaseUs, p.MeanNewUs, p.MeanSpeedup, p.MeanLow, p.MeanHigh, p.MeanSignificant
		tc.MedianSpeedup, tc.HostAhead, tc.BaseVerdict, tc.NewVerdict = p.Speedup, p.HostAhead, p.BaseVerdict, p.NewVerdict
		tc.BaseStepsUs, tc.NewStepsUs, tc.Work = roundUs(p.BaseStepsUs), roundUs(p.NewStepsUs), p.Work
		tried = append(tried, tc)
	}
}

// toVerify picks the findings whose change --verify tries: the first max
// with a run-time change predicted to save at least minVerifySavingPct,
// none that changes numerics unless withNumerics; held are those passed
// over for changing numerics, idle those predicted to save less (before
// the max was reached), which the user is told of. A run spent on a
// change the replay says saves nothing measures noise, or a cost: a
// launch-bound ResNet-18 on an H200 was given cudnn.benchmark (0% of the
// step predicted) and ran 0.74x.
func toVerify(findings []diagnose.Finding, max int, withNumerics bool) (chosen, held, idle []diagnose.Finding) {
	for _, f := range findings {
		switch {
		case len(chosen) == max:
			return chosen, held, idle
		case len(f.Try) == 0 && optionTry(f) == nil:
		case changesNumerics(f) && !withNumerics:
			held = append(held, f)
		case trySaving(f) < minVerifySavingPct:
			idle = append(idle, f)
		default:
			chosen = append(chosen, f)
		}
	}
	return chosen, held, idle
}

// plan is the tried run of f's change: its options (the steps it times,
// the program's arguments), the first step compared (0: all) and a
// caveat when its steps cannot show the change.
func (o *Options) plan(base string, f diagnose.Finding) (ro Options, from int, caveat string) {
	ro = *o
	if _, ok := f.Try["persistent_workers"]; ok {
		ro.Steps, caveat = epochSteps(base, o.Steps)
	} else if ahead, _ := loadAhead(f.Try); ahead > 0 {
		ro.Steps, from = prefetchSteps(ahead, o.Steps)
	} else if t := optionTry(f); t != nil {
		// the program's own options, after its arguments (argparse: the
		// last of a flag wins); the steps it spends compiling left out
		ro.Args = append(slices.Clone(o.Args), t.Args...)
		ro.Steps, from = o.Steps+t.WarmupSteps, t.WarmupSteps+1
	} else {
		ro.Steps = precisionSteps(base, trySaving(f), o.Steps)
	}
	return ro, from, caveat
}

// precisionSteps is how many steps a tried run times so that the steps
// compared can tell the predicted saving (savingPct) from the steps' own
// spread: at least steps. The median of n steps of relative spread c
// (1.4826 MAD over the median) varies by about 1.25·c/√n, so the 95%
// interval of the ratio of two such medians is about ±1.96·1.25·c·√(2/n);
// n is what brings it within half the saving. The steps counted are the
// first run's own that it timed outside its window (those compared), so
// the run lasts until n of them; at most maxPrecisionSteps steps and
// maxPrecisionS of the first run's median step. A cleanrl DQN's 1.3 ms
// steps (c 0.11) timed over 20 steps read fused=True's 8% predicted as
// "no significant change (0.91x to 1.17x)".
func precisionSteps(base string, savingPct float64, steps int) int {
	run, err := rundir.Read(base)
	if err != nil || savingPct <= 0 {
		return steps
	}
	timed := diff.AgentSteps(runreport.FromRun(run))
	nums := slices.Sorted(maps.Keys(timed))
	if len(nums) < minSameSteps {
		return steps
	}
	durs := make([]float64, 0, min(len(nums), maxPrecisionSteps))
	for _, n := range nums[:min(len(nums), maxPrecisionSteps)] {
		durs = append(durs, timed[n].DurS)
	}
	med := stats.Median(durs)
	dev := make([]float64, len(durs))
	for i, d := range durs {
		dev[i] = math.Abs(d - med)
	}
	c := 1.4826 * stats.Median(dev) / med
	half := savingPct / 100 / 2
	need := max(1, int(math.Ceil(2*math.Pow(1.96*1.25*c/half, 2))))
	last := nums[min(need, len(nums))-1] // the step by which the tried run has timed need of them
	limit := min(maxPrecisionSteps, int(maxPrecisionS/med))
	return max(steps, min(last, limit))
}

// maxPrecisionSteps and maxPrecisionS bound a tried run that precisionSteps
// lengthens: short steps need the most of them, and take the least time.
const (
	maxPrecisionSteps = 1000
	maxPrecisionS     = 30.0
)

// epochSteps is how many steps a tried run of persistent_workers times:
// the change acts only where an epoch starts, so the steps must hold two
// epochs' starts (the base run's longest epoch: batches per iterator of a
// loader that made two or more), at least steps and at most
// maxTriedSteps; past that, steps, and a caveat that says the tried steps
// cannot show the change. dcgan (16 batches an epoch) was timed over 10
// steps and read "no significant change" against 1.18x predicted: the
// change never came into them.
func epochSteps(base string, steps int) (int, string) {
	r, err := rundir.Read(base)
	if err != nil {
		return steps, ""
	}
	epoch := 0
	for _, p := range r.Processes {
		if p.Evidence == nil {
			continue
		}
		for _, l := range p.Evidence.DataLoader.Loaders {
			if l.Iterators >= 2 && l.Batches > 0 {
				epoch = max(epoch, l.Batches/l.Iterators)
			}
		}
	}
	switch need := 2*epoch + 2; {
	case epoch == 0 || need <= steps:
		return steps, ""
	case need <= maxTriedSteps:
		return need, ""
	default:
		return steps, fmt.Sprintf("an epoch is %d batches: the tried run's %d steps hold no epoch start, where persistent_workers acts, so they cannot show it; bottleneck try --set persistent_workers=true --steps %d times two", epoch, steps, need)
	}
}

// maxTriedSteps: a tried run of persistent_workers or num_workers times
// at most this many steps, to reach two epochs' starts or past the
// batches its workers load ahead.
const maxTriedSteps = 200

// prefetchSteps sizes a tried run of a num_workers change whose workers
// load ahead batches: as many steps again as o.Steps asks for, compared
// from the first past those batches (from), which the workers loaded
// while the program started and the steps took without waiting. timm's
// ResNet-50 on an H200 (8 workers, 16 batches ahead) was timed over 13
// steps, all of them prefetched: "no significant change", where 12
// workers measured 1.38-1.57x by hand. Capped at maxTriedSteps; from is 0
// where too few steps would be left past the batches ahead.
func prefetchSteps(ahead, steps int) (n, from int) {
	n = min(ahead+steps, maxTriedSteps)
	if n-ahead < minSameSteps {
		return n, 0
	}
	return n, ahead + 1
}

// minVerifySavingPct: --verify tries a change predicted to save at least
// this much of the step, in percent.
const minVerifySavingPct = 1

// optionTry is the finding's change by the program's own options, where
// the agent makes none.
func optionTry(f diagnose.Finding) *diagnose.OptionTry {
	if len(f.Try) > 0 || f.TryOption == nil || len(f.TryOption.Args) == 0 {
		return nil
	}
	return f.TryOption
}

// triedWhat says what verifying f tries.
func triedWhat(f diagnose.Finding) string {
	if t := optionTry(f); t != nil {
		return rundir.TriedWhat(nil, t.Args)
	}
	return rundir.FormatChanges(f.Try)
}

// tryHint says how to try f by hand.
func tryHint(f diagnose.Finding) string {
	if optionTry(f) != nil {
		return ""
	}
	return ", or bottleneck try --set " + textsafe.String(rundir.FormatChanges(f.Try))
}

// changesNumerics says whether f's change alters the program's numbers.
func changesNumerics(f diagnose.Finding) bool {
	if t := optionTry(f); t != nil {
		return t.Numerics
	}
	return numerics(f.Try)
}

// trySaving is what the finding predicts its run-time change saves, in
// percent of the step.
func trySaving(f diagnose.Finding) float64 {
	if f.TrySavingPct != nil {
		return *f.TrySavingPct
	}
	return f.SavingPct
}

// roundUs rounds step times to 0.1 µs (tried.json's precision).
func roundUs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(10*x) / 10
	}
	return out
}

func numerics(set map[string]string) bool {
	for name := range set {
		if k, _ := rundir.ChangeKindOf(name); k.Numerics {
			return true
		}
	}
	return false
}

func writeJSON(path string, res *Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// outDir makes the folder of the runs: dir (new or empty) or a fresh
// ./bottleneck-runs/<timestamp>-try.
func outDir(dir string) (string, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
			return "", fmt.Errorf("%s must be a new or empty folder", dir)
		}
		return filepath.Abs(dir)
	}
	base := filepath.Join("bottleneck-runs", time.Now().Format("20060102-150405")+"-try")
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", err
	}
	for i := 1; ; i++ {
		d := base
		if i > 1 {
			d = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(d, 0o755)
		if err == nil {
			return filepath.Abs(d)
		}
		if !os.IsExist(err) {
			return "", err
		}
	}
}

// runOnce runs the program into dir with the changes set (nil: as it
// is), its output into dir.log, and returns the run directory. A run
// whose program failed ends try with the program's status.
func (o *Options) runOnce(dir string, set map[string]string, what string) (string, error) {
	fmt.Fprintf(o.IO.ErrOut, "bottleneck try: %s\n", what)
	log, err := os.Create(dir + ".log")
	if err != nil {
		return "", exitcode.New(exitcode.Failed, fmt.Errorf("try: %w", err))
	}
	defer log.Close()
	ac := runner.DefaultAgentConfig()
	// time the steps before the window, record a short one, and end: the
	// same steps in every run, never the whole training
	ac.Profiler.SkipFirst, ac.Profiler.EarlyStartS = o.Steps, 0
	ac.StopAfterProfile = true
	if o.Launcher {
		// every rank's window the same steps, not lengthened to a minimum
		// time that each rank reaches at its own step: a rank that stopped
		// a step before the others leaves them in a collective with no
		// peer (gloo: "Connection closed by peer")
		ac.Profiler.MinWindowS = 0
	}
	ac.Set = set
	cfg := runner.Config{
		RunDir: dir, Timeout: o.Timeout, KillAfter: 30 * time.Second, Agent: ac, Version: version.Version,
		Stdin: strings.NewReader(""), Stdout: log, Stderr: log, Env: o.Env, Dir: o.Dir,
	}
	if err := cfg.Program(o.Launcher, o.Module, o.Args, o.Python); err != nil {
		return "", exitcode.New(exitcode.Failed, fmt.Errorf("try: %w", err))
	}
	res, err := runner.Run(context.Background(), cfg)
	if res == nil {
		return "", exitcode.New(exitcode.Failed, fmt.Errorf("try: %w", err))
	}
	if res.ExitCode != 0 {
		raised := ""
		if e := raisedIn(log.Name()); e != "" {
			raised = ": " + e
		}
		return "", exitcode.New(res.ExitCode, fmt.Errorf("try: the program exited with status %d (%s)%s; its output: %s", res.ExitCode, what, raised, log.Name()))
	}
	return res.RunDir, nil
}

// raisedIn is the Python exception that ended a program, from the end
// of its output in path: the traceback's last line and the innermost of
// its frames outside installed packages and the standard library ("a
// change made the program fail" says little; "RuntimeError: view size is
// not compatible ... at net.py:8" says where the change needs an edit).
// "" without a traceback.
func raisedIn(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		if _, err := f.Seek(fi.Size()-tail, io.SeekStart); err != nil {
			return ""
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, tail))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "Traceback (most recent call last):") {
			start = i
		}
	}
	if start < 0 {
		return ""
	}
	var exc, site string
	for _, l := range lines[start+1:] {
		t := strings.TrimSpace(l)
		if file, rest, ok := strings.Cut(strings.TrimPrefix(t, `File "`), `", line `); ok && strings.HasPrefix(t, `File "`) {
			if !strings.Contains(file, "site-packages") && !strings.Contains(file, "dist-packages") && !strings.Contains(file, "/lib/python") && !strings.HasPrefix(file, "<") {
				line, _, _ := strings.Cut(rest, ",")
				site = filepath.Base(file) + ":" + line
			}
			exc = ""
			continue
		}
		if exc == "" && l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			exc = t // the exception's line: the first unindented one after the frames
		}
	}
	if exc == "" {
		return ""
	}
	const most = 300
	if len(exc) > most {
		exc = exc[:most] + "..."
	}
	if site != "" {
		exc += " (at " + site + ")"
	}
	return textsafe.String(exc)
}

// compare measures one pair through the diff engine's noise model, and
// returns the base run's findings with it.
func compare(ios *iostreams.IOStreams, base, changed string, from int) (*Pair, []diagnose.Finding, error) {
	b, _, err := diff.LoadSteps(ios, base)
	if err != nil {
		return nil, nil, err
	}
	n, _, err := diff.LoadSteps(ios, changed)
	if err != nil {
		return nil, nil, err
	}
	// the same steps in both: the first run of run --verify timed the
	// whole program, the tried one its first steps, and a cost that comes
	// every few steps (an epoch's start) was the first run's alone
	// (epoch_workers.py: 8.06x measured over steps 1-319 against 1-8)
	// and the tried run's steps that fell in the first run's window are
	// left out too: steps drift over a run (a launch-bound ResNet-18 on an
	// H200: steps 1-5 13-17 ms, 6-10 of the tried run 19-25 ms, the
	// first run's median 23 ms), so one side's later steps against the
	// other's first ones measure the drift
	bsteps, nsteps := diff.AgentSteps(b.Run), diff.AgentSteps(n.Run)
	if same := sameSteps(bsteps, nsteps, from); len(same) >= minSameSteps {
		notSame := func(k int, _ steptimes.Step) bool { return !same[k] }
		if len(same) < len(bsteps) {
			b.OnlySteps = same
			maps.DeleteFunc(bsteps, notSame)
		}
		if len(same) < len(nsteps) {
			n.OnlySteps = same
			maps.DeleteFunc(nsteps, notSame)
		}
	}
	r := diff.Compare(b, n, diff.Options{})
	h := r.Headline
	p := &Pair{BaseDir: base, ChangeDir: changed, Headline: h, BaseVerdict: r.Base.Verdict, NewVerdict: r.New.Verdict}
	if h.NewUs > 0 {
		p.Speedup = h.BaseUs / h.NewUs
	}
	if h.NoiseKnown && h.HighPct > -100 && h.LowPct > -100 {
		p.SpeedupLow, p.SpeedupHigh = 1/(1+h.HighPct/100), 1/(1+h.LowPct/100)
	}
	bs, ns := r.Base.StepTimesUs, r.New.StepTimesUs
	for _, x := range bs {
		p.MeanBaseUs += x / float64(len(bs))
	}
	for _, x := range ns {
		p.MeanNewUs += x / float64(len(ns))
	}
	if p.MeanNewUs > 0 {
		p.MeanSpeedup = p.MeanBaseUs / p.MeanNewUs
	}
	p.BaseStepsUs, p.NewStepsUs = bs, ns
	p.BaseSteps, p.NewSteps = stepRange(bsteps, len(bs)), stepRange(nsteps, len(ns))
	if p.CPUWaitKnown = cpuWaitsKnown(b.Run) && cpuWaitsKnown(n.Run) && p.BaseSteps[1] > 0 && p.NewSteps[1] > 0; p.CPUWaitKnown {
		p.CPUWaitBaseUs, p.CPUWaitNewUs = meanWaitUs(bsteps), meanWaitUs(nsteps)
	}
	p.DeviceBehindBaseUs, p.DeviceBehindNewUs = deviceBehindUs(b.Run), deviceBehindUs(n.Run)
	p.HostAhead = hostAhead(p.DeviceBehindBaseUs, bs) || hostAhead(p.DeviceBehindNewUs, ns)
	if h.NoiseKnown {
		low, high := diff.MeanRatioInterval(bs, ns)
		if low > -100 && high > -100 {
			p.MeanLow, p.MeanHigh = 1/(1+high/100), 1/(1+low/100)
			p.MeanSignificant = p.MeanLow > 1 || p.MeanHigh < 1
		}
	}
	p.LoadDiffers = loadDiffers(*p)
	p.Work = r.Work
	return p, b.Report.Findings(), nil
}

// minSameSteps: a pair is compared over the steps both runs timed when
// there are this many; else over each run's own (wholeRunCaveat says so).
const minSameSteps = 3

// sameSteps are the step numbers both runs timed, from step from on.
func sameSteps(a, b map[int]steptimes.Step, from int) map[int]bool {
	out := map[int]bool{}
	for n := range a {
		if _, ok := b[n]; ok && n >= from {
			out[n] = true
		}
	}
	return out
}

// cpuWaitsKnown: every process of the run measured its main thread's
// wait for a CPU (Evidence.CPUWait).
func cpuWaitsKnown(run *runreport.Report) bool {
	if run == nil || len(run.Processes) == 0 {
		return false
	}
	for _, p := range run.Processes {
		if p.Evidence != nil && p.Evidence.CPUWait == nil {
			return false
		}
	}
	return true
}

// stepRange is the first and the last number of the compared steps, when
// there are count of them; [0, 0] when they are not the agent's (too few:
// the trace's steps are compared).
func stepRange(steps map[int]steptimes.Step, count int) [2]int {
	if len(steps) == 0 || len(steps) != count {
		return [2]int{}
	}
	r := [2]int{math.MaxInt, 0}
	for n := range steps {
		r[0], r[1] = min(r[0], n), max(r[1], n)
	}
	return r
}

// meanWaitUs is the compared steps' mean wait for a CPU, in µs.
func meanWaitUs(steps map[int]steptimes.Step) float64 {
	sum := 0.0
	for _, st := range steps {
		sum += st.CPUWaitS * 1e6
	}
	return sum / float64(max(len(steps), 1))
}

// loadShare: a pair's difference of which the steps' wait for a CPU
// makes up this share or more is the machine's load as much as the
// change (Pair.LoadDiffers).
const loadShare = 0.5

// loadDiffers says whether the difference between the two runs' mean
// steps is, for loadShare or more, the difference of their waits for a
// CPU, in the same direction: other processes took the CPUs in one run
// more than in the other (epoch_workers.py with a change that changed
// nothing, at a load average of 14 on 2 cores: 209 -> 76.6 ms a step,
// called 2.73x faster, while the steps waited 140 -> 31 ms a step).
func loadDiffers(p Pair) bool {
	d, w := p.MeanBaseUs-p.MeanNewUs, p.CPUWaitBaseUs-p.CPUWaitNewUs
	return p.CPUWaitKnown && p.MeanSignificant && d != 0 && w/d >= loadShare
}

// loadNote says that a pair's difference is mostly its runs' different
// waits for a CPU: the machine's drift, or, for a change to the threads
// that want the CPUs (waitChanges), the change's own effect as much.
func loadNote(p Pair, set map[string]string) string {
	note := fmt.Sprintf("the steps waited for a CPU %s a step as it is, %s changed", units.Duration(p.CPUWaitBaseUs), units.Duration(p.CPUWaitNewUs))
	for _, name := range waitChanges {
		if _, ok := set[name]; ok {
			return note + ": most of the difference, which the change acts on (the threads that want a CPU), and the machine's load moves too; --compare measures the machine's drift"
		}
	}
	return note + " (other processes, or the program's own threads): most of the difference; --compare measures the machine's drift"
}

// waitChanges change how many of the program's threads want a CPU: their
// effect is on the steps' wait for one (omp_passive: a Conv1d model beside
// two busy loops waited 56 -> 34 ms a step).
var waitChanges = []string{"threads", "omp_passive"}

// prefetchCaveat says when a change to num_workers was timed over no
// more steps than its workers load ahead (num_workers × prefetch_factor,
// 2 by default): those steps may have taken batches loaded during
// start-up and waited less than the steady state does (slow_dataset.py,
// 8 workers, 5 steps: 20x measured, 8x predicted). "" otherwise.
func prefetchCaveat(set map[string]string, steps int) string {
	if ahead, w := loadAhead(set); ahead > 0 && steps <= ahead {
		return fmt.Sprintf("the tried run's %d steps are no more than the %d batches its %d workers load ahead: they may have waited less than the steady state would; --verify-steps %d measures it", steps, ahead, w, 2*ahead)
	}
	return ""
}

// loadAhead is how many batches the workers of a num_workers change
// load ahead (num_workers × prefetch_factor, 2 by default), 0 for
// another change.
func loadAhead(set map[string]string) (ahead, workers int) {
	w, err := strconv.Atoi(set["num_workers"])
	if err != nil || w <= 0 {
		return 0, 0
	}
	per := 2
	if p, err := strconv.Atoi(set["prefetch_factor"]); err == nil && p > 0 {
		per = p
	}
	return w * per, w
}

// slowStep: a compared step over this many times its run's median is
// slow (slowCaveats).
const slowStep = 5

// slowCaveats say, for a pair compared over the same step numbers, when
// some steps took over slowStep times their run's median, with the
// ratio without them beside the one with them, which stays the
// measurement:
//   - slow in both runs: the program's own work at that step (an epoch's
//     end, a checkpoint), the same in both, which among few compared
//     steps weighs more than it does in the run and pulls the ratio
//     towards 1x (timm's ResNet-50 on an H200, 4 workers against 8 over
//     steps 17-36: a 1-second validation step at the epoch's end in both,
//     1.10x with it, 1.32x without);
//   - slow in one run only: such a step moves the mean of few steps, and
//     one run cannot tell a one-off (a collection of the start-up's
//     garbage, a first batch) from what the change removes (pytorch/
//     examples' vae on 2 CPUs, num_workers=1 against 0: a 160 ms garbage
//     collection at step 5 of the run as is, once in its whole run; 2.59x
//     faster on the mean over two pairs, 0.78x without it, the median
//     0.76-0.82x).
func slowCaveats(p Pair) []string {
	b, n := p.BaseStepsUs, p.NewStepsUs
	if len(b) != len(n) || p.BaseSteps != p.NewSteps || p.BaseSteps[1] == 0 {
		return nil
	}
	mb, mn := stats.Median(b), stats.Median(n)
	// the sums without the steps slow in both, and without those slow in one
	var sharedB, sharedN, loneB, loneN float64
	var both, inBase, inNew int
	for i := range b {
		slowB, slowN := b[i] > slowStep*mb, n[i] > slowStep*mn
		switch {
		case slowB && slowN:
			both++
		case slowB:
			inBase++
		case slowN:
			inNew++
		}
		if !slowB || !slowN {
			sharedB, sharedN = sharedB+b[i], sharedN+n[i]
		}
		if slowB == slowN {
			loneB, loneN = loneB+b[i], loneN+n[i]
		}
	}
	without := func(sumB, sumN float64, kept int) string {
		return fmt.Sprintf("without them %s -> %s a step, %.2fx", units.Duration(sumB/float64(kept)), units.Duration(sumN/float64(kept)), sumB/sumN)
	}
	var out []string
	if kept := len(b) - both; both > 0 && kept >= minSameSteps && sharedN > 0 {
		out = append(out, fmt.Sprintf("%d of the %d steps compared took over %dx their run's median in both runs (the program's own work there, such as an epoch's end or a checkpoint): %s",
			both, len(b), slowStep, without(sharedB, sharedN, kept)))
	}
	if kept := len(b) - inBase - inNew; kept < len(b) && kept >= minSameSteps && loneN > 0 {
		var where []string
		if inBase > 0 {
			where = append(where, fmt.Sprintf("%d in the run as it is", inBase))
		}
		if inNew > 0 {
			where = append(where, fmt.Sprintf("%d in the changed run", inNew))
		}
		out = append(out, fmt.Sprintf("of the %d steps compared, %s took over %dx their run's median, in that run only: a one-off (a garbage collection, a first batch) or what the change removes, which runs this short cannot tell apart (a longer --steps can): %s",
			len(b), strings.Join(where, " and "), slowStep, without(loneB, loneN, kept)))
	}
	return out
}

// lastStep is the last step the pair compared (its count where the step
// numbers are unknown).
func lastStep(p Pair) int {
	return max(p.NewSteps[1], len(p.NewStepsUs))
}

// wholeRunCaveat says, for a pair of run --verify, when the first run's
// compared steps reach past the tried run's by more than the tried run's
// span: a cost that recurs less often (an epoch's start, a checkpoint)
// can be in the first run's steps and never come in the tried run's, so
// the two measure different parts of the program ("" when they do not).
func wholeRunCaveat(p Pair) string {
	b, n := p.BaseSteps, p.NewSteps
	if b[1] == 0 || n[1] == 0 || b[1] <= n[1]+(n[1]-n[0]+1) {
		return ""
	}
	return fmt.Sprintf("compared: the first run's steps %d-%d (%d) with the tried run's %d-%d (%d): a cost that comes less often than every %d steps (an epoch's start, a checkpoint) would show in the first run's only; bottleneck try --steps N times the same steps in both runs",
		b[0], b[1], len(p.BaseStepsUs), n[0], n[1], len(p.NewStepsUs), n[1]-n[0]+1)
}

// deviceBehindUs is the run's wait for the device at the end of its
// timed steps, in microseconds: its slowest process's, as the compared
// steps are (0: none, or an agent before it).
func deviceBehindUs(run *runreport.Report) float64 {
	most := 0.0
	if run == nil {
		return most
	}
	for _, p := range run.Processes {
		if p.Evidence != nil && p.Evidence.DeviceBehindS != nil {
			most = max(most, *p.Evidence.DeviceBehindS*1e6)
		}
	}
	return most
}

// hostAhead says whether a wait for the device of behindUs is over
// hostAheadShare of the timed steps.
func hostAhead(behindUs float64, stepsUs []float64) bool {
	sum := 0.0
	for _, x := range stepsUs {
		sum += x
	}
	return behindUs > 0 && behindUs > hostAheadShare*sum
}

// applied are the changed run's records of where each change took effect,
// each once (the ranks of a launcher record the same).
func applied(dir string) []rundir.Change {
	out := []rundir.Change{}
	run, err := rundir.Read(dir)
	if err != nil {
		return out
	}
	for _, p := range run.Processes {
		if p.Evidence == nil {
			continue
		}
		for _, c := range p.Evidence.Changes {
			if !slices.ContainsFunc(out, func(o rundir.Change) bool {
				return o.Name == c.Name && o.Value == c.Value && o.Applied == c.Applied && o.Error == c.Error && slices.Equal(o.Sites, c.Sites)
			}) {
				out = append(out, c)
			}
		}
	}
	return out
}

// changedRules are the rules whose cause each change addresses.
var changedRules = map[string][]string{
	"num_workers": {"input.loader"}, "persistent_workers": {"input.loader", "input.worker-restarts"}, "prefetch_factor": {"input.loader"},
	"pin_memory":      {"copy.h2d", "input.loader"},
	"threads":         {"cpu.oversubscribed", "cpu.native"},
	"interop_threads": {"cpu.oversubscribed"},
	"cudnn_benchmark": {"gpu.cudnn-benchmark"},
	"tf32":            {"gpu.precision"},
	"fused_optimizer": {"host.optimizer"}, "foreach_optimizer": {"host.optimizer"},
	"gc_freeze": {"gc.pauses"}, "gc_threshold": {"gc.pauses"},
	"channels_last": {"cpu.native"}, "bf16_autocast": {"cpu.native"},
	"malloc_reuse": {"cpu.page-faults"}, "thp_alloc": {"cpu.page-faults"},
	"omp_passive": {"cpu.contended"},
}

// predicted is the first run's saving for the first of its findings
// whose cause a change addresses (nil: none of them was found).
func predicted(findings []diagnose.Finding, set map[string]string) *Prediction {
	for _, f := range findings {
		for name := range set {
			if slices.Contains(changedRules[name], f.Rule) {
				saving := f.SavingPct
				if v, ok := f.Try[name]; ok && v == set[name] && f.TrySavingPct != nil {
					saving = *f.TrySavingPct // the change tried is the finding's second
				}
				return &Prediction{Rule: f.Rule, SavingPct: saving, Speedup: 1 / (1 - min(saving, 99)/100), Method: f.SavingMethod}
			}
		}
	}
	return nil
}

// Write prints the result: each pair's measured change, where the
// changes took effect, and the prediction beside it.
func Write(w io.Writer, r *Result) {
	set := rundir.TriedWhat(r.Set, r.Args)
	numerics := ""
	if r.Numerics {
		numerics = " (changes numerics)"
	}
	for i, p := range r.Pairs {
		h := p.Headline
		label := set + numerics
		if len(r.Pairs) > 1 {
			label += fmt.Sprintf(", pair %d", i+1)
		}
		// the mean first: what the run takes, slow steps included; then
		// the median, the usual step
		fmt.Fprintf(w, "%s (tried): %s -> %s a step on average", textsafe.String(label), units.Duration(p.MeanBaseUs), units.Duration(p.MeanNewUs))
		switch {
		case !h.NoiseKnown:
			fmt.Fprintf(w, ", %.2fx (too few steps for an interval)", p.MeanSpeedup)
		case !p.MeanSignificant:
			fmt.Fprintf(w, ": no significant change (95%% interval %.2fx to %.2fx)", p.MeanLow, p.MeanHigh)
		case p.MeanSpeedup >= 1:
			fmt.Fprintf(w, ", %.2fx faster (95%% interval %.2fx to %.2fx)", p.MeanSpeedup, p.MeanLow, p.MeanHigh)
		default:
			fmt.Fprintf(w, ", %.2fx slower (95%% interval %.2fx to %.2fx)", 1/p.MeanSpeedup, 1/p.MeanHigh, 1/p.MeanLow)
		}
		fmt.Fprintf(w, "; median %s -> %s", units.Duration(h.BaseUs), units.Duration(h.NewUs))
		switch {
		case p.HostAhead:
			// the steps were timed on the host, which queued the device's
			// work ahead: only the wait at their end holds what is left
			fmt.Fprintf(w, ", host-side only: the device was behind by %s as it is, %s changed, at the end of the timed steps\n",
				units.Duration(p.DeviceBehindBaseUs), units.Duration(p.DeviceBehindNewUs))
		case h.NoiseKnown && !h.Significant:
			fmt.Fprintf(w, ", no significant change\n")
		default:
			fmt.Fprintf(w, ", %.2fx\n", p.Speedup)
		}
		if p.BaseVerdict != "" || p.NewVerdict != "" {
			fmt.Fprintf(w, "  verdict: %s as it is, %s changed\n", cmp.Or(p.BaseVerdict, "none"), cmp.Or(p.NewVerdict, "none"))
		}
		if p.LoadDiffers {
			fmt.Fprintf(w, "  %s\n", loadNote(p, r.Set))
		}
		if p.Work != nil {
			fmt.Fprintf(w, "  %s; compare that with the prediction\n", diff.WorkNote(p.Work))
		}
		for _, c := range append([]string{prefetchCaveat(r.Set, lastStep(p))}, slowCaveats(p)...) {
			if c != "" {
				fmt.Fprintf(w, "  %s\n", c)
			}
		}
	}
	switch p := r.Pooled; {
	case p != nil:
		fmt.Fprintf(w, "  over %d pairs: %.2fx (pairs %.2fx to %.2fx); the same runs repeated differ by up to %.0f%% (the machine's drift): ", len(r.Pairs), p.Speedup, p.Low, p.High, p.DriftPct)
		if p.BeyondDrift {
			fmt.Fprintln(w, "the change is beyond it")
		} else {
			fmt.Fprintln(w, "the change is within it, no change this machine can show")
		}
	case len(r.Pairs) == 1 && r.Pairs[0].MeanSignificant && math.Abs(math.Log(r.Pairs[0].MeanSpeedup)) < math.Log(1+smallChange):
		fmt.Fprintf(w, "  one pair: a change under %.0f%% may be the machine's drift between two runs, which one pair cannot measure (--compare measures it)\n", 100*smallChange)
	}
	if pr := r.Predicted; pr != nil {
		fmt.Fprintf(w, "  predicted by the first run (%s, %s): %.0f%% of the step saved, %.2fx\n", pr.Rule, cmp.Or(pr.Method, "-"), pr.SavingPct, pr.Speedup)
	} else if len(r.Pairs) > 0 && r.Pairs[0].BaseVerdict == "" {
		fmt.Fprintln(w, "  predicted: nothing: the first run ended before its window recorded a step (fewer steps than --steps and the window), so it has no diagnosis")
	} else {
		fmt.Fprintln(w, "  predicted: the first run's diagnosis named no cause these changes address")
	}
	took := false
	for _, c := range r.Applied {
		switch {
		case !c.Applied:
			fmt.Fprintf(w, "  %s=%s not applied: %s\n", c.Name, textsafe.String(c.Value), textsafe.String(cmp.Or(c.Error, "no record of it")))
		default:
			took = true
			for _, s := range c.Sites {
				fmt.Fprintf(w, "  %s=%s: %s\n", c.Name, textsafe.String(c.Value), textsafe.String(s))
			}
		}
	}
	if len(r.Applied) > 0 && !took && len(r.Args) == 0 {
		// a 1.11x "slower" for channels_last on a model without
		// convolutions was two runs of the same program
		fmt.Fprintln(w, "  no change took effect: both runs ran the program as it is, and their difference is the machine's")
	}
}
