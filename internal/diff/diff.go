// Package diff compares two runs (run directories or traces) that were
// already analysed: how much the step time changed and whether that is
// more than run-to-run noise, whether the verdict changed, and where the
// difference comes from, ranked by contribution (docs/diff.md). It reads
// reports, never traces or flags; internal/cli/diff loads the inputs.
package diff

import (
	"cmp"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/flame"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/runreport"
)

// Schema names the JSON form of a Result; bump on incompatible changes.
const Schema = "bottleneck.diff/v1"

// Side is one of the two runs being compared.
type Side struct {
	// Label is how the user named it (the path given).
	Label  string
	Report *report.Report
	// Run is the agent's record when the input is a run directory (nil
	// for traces): per-step times of the whole run, environment, Python
	// hot lines, implicit-sync sites.
	Run *runreport.Report
	// OpStacks (one per trace) and PyStacks (one per process of a run
	// directory) feed the diff flame graphs of the HTML page.
	OpStacks, PyStacks []PerStep
	// OpWeight is what OpStacks measure (device or host time).
	OpWeight flame.Weight
	// Lines is the main-thread time per Python line of a run directory
	// (PyLines; nil for traces).
	Lines *LineTimes
	// OnlySteps, when set, are the agent's steps compared (by number):
	// the same steps as the other side's, where one run timed more.
	OnlySteps map[int]bool
}

// Options tune what is listed.
type Options struct {
	// Top is how many kernels and operators are listed (0: 10).
	Top int
	// MinSharePct: items whose per-step change is below this share of the
	// base step are not listed (0: 1%).
	MinSharePct float64
}

// Result is the comparison, in the order it is printed.
type Result struct {
	Schema   string      `json:"schema"`
	Base     SideSummary `json:"base"`
	New      SideSummary `json:"new"`
	Headline Headline    `json:"headline"`
	// Warnings: devices differ, inputs read with problems, too few steps.
	Warnings []string `json:"warnings,omitempty"`
	// Work is set when the two runs' compared steps did different work,
	// by the agent's counts of their models' calls (a step is then not
	// the same unit in both: the time of a call compares).
	Work *rundir.StepWork `json:"work,omitempty"`
	// Breakdown is the per-category change of the mean step (from the
	// traces), largest first.
	Breakdown []Delta `json:"breakdown"`
	// Kernels and Ops are matched across the runs; largest change first.
	Kernels []ItemDelta `json:"kernels"`
	Ops     []ItemDelta `json:"operators"`
	// Lines are the Python lines whose time per step changed beyond the
	// noise (run directories), largest change first.
	Lines []LineDelta `json:"lines"`
	// Changes are the other measured differences: launches, syncs and
	// their sites, tensor cores and precision, memory peak,
	// communication, diagnosis findings of one run only.
	Changes []Change `json:"changes"`
	// Env lists environment settings that differ (run directories only).
	Env []EnvDiff `json:"environment,omitempty"`
	// Metrics is the summary the --fail-if expressions read
	// (docs/diff.md, "CI gate").
	Metrics map[string]Metric `json:"metrics"`
	// Gate is the outcome of each --fail-if rule (see Rule).
	Gate []GateOutcome `json:"gate,omitempty"`
	// Flames are the diff flame graphs (op and Python stacks) the HTML
	// page draws; not part of the JSON.
	Flames []*FlameDiff `json:"-"`
}

// SideSummary describes one side as read.
type SideSummary struct {
	Label string `json:"label"`
	// Kind is "run directory" or "traces".
	Kind    string   `json:"kind"`
	Traces  int      `json:"traces"`
	Devices []string `json:"devices"`
	// StepSource says where the step times come from: the agent's timing
	// of every step of the run, or the traces' steps.
	StepSource string  `json:"step_source"`
	Steps      int     `json:"steps"`
	MedianUs   float64 `json:"step_median_us"`
	// StepTimesUs are the step times compared, in run order.
	StepTimesUs []float64 `json:"step_times_us"`
	Verdict     string    `json:"verdict"`
	// VerdictDetail is the verdict's one-line reason.
	VerdictDetail string `json:"verdict_detail,omitempty"`
	// TraceStepUs is the traces' mean step (the breakdown's total), the
	// reference of the contributions below.
	TraceStepUs float64 `json:"trace_step_us"`
}

// Headline is the verdict of the comparison.
type Headline struct {
	BaseUs   float64 `json:"base_median_us"`
	NewUs    float64 `json:"new_median_us"`
	DeltaUs  float64 `json:"delta_us"`
	DeltaPct float64 `json:"delta_pct"`
	// LowPct..HighPct is the 95% interval of DeltaPct from the per-step
	// variance of both sides (bootstrap of the medians); NoiseKnown is
	// false when a side has fewer than 3 steps.
	LowPct     float64 `json:"interval_low_pct"`
	HighPct    float64 `json:"interval_high_pct"`
	NoiseKnown bool    `json:"noise_known"`
	// Significant: the interval excludes zero (with NoiseKnown).
	Significant bool `json:"significant"`
	// ThroughputPct is the change of steps per second.
	ThroughputPct  float64 `json:"throughput_pct"`
	VerdictChanged bool    `json:"verdict_changed"`
	// Summary is the one-line statement printed first.
	Summary string `json:"summary"`
	// Causes name the largest contributions when the change is
	// significant: the Python line that moved most in the change's
	// direction, then the kernel or operator (else the breakdown
	// category); Cause is the first of them.
	Cause  string   `json:"cause,omitempty"`
	Causes []string `json:"causes,omitempty"`
	// SameWork: the change is significant but both runs did the same
	// work (see sameWork).
	SameWork bool `json:"same_work,omitempty"`
}

// Delta is one step-breakdown category's change, µs per step.
type Delta struct {
	Category string  `json:"category"`
	BaseUs   float64 `json:"base_us"`
	NewUs    float64 `json:"new_us"`
	DeltaUs  float64 `json:"delta_us"`
	BasePct  float64 `json:"base_pct"` // of its side's step
	NewPct   float64 `json:"new_pct"`
	// SharePct is DeltaUs as a share of the traces' step-time change.
	SharePct float64 `json:"share_of_change_pct"`
}

// Match says how a kernel or operator of one run was paired with the
// other's.
type Match string

const (
	Exact      Match = "exact"      // same name
	Normalised Match = "normalised" // same name once template arguments, hashes and numbering are removed
	SameOp     Match = "same-op"    // kernels launched by the same operator (a different kernel for the same work)
	Added      Match = "new"
	Vanished   Match = "vanished"
)

// ItemDelta is one kernel or operator (or a matched group of them).
type ItemDelta struct {
	Name string `json:"name"`
	// BaseNames/NewNames are the original names when they differ from
	// Name (normalised or same-op matches).
	BaseNames []string `json:"base_names,omitempty"`
	NewNames  []string `json:"new_names,omitempty"`
	Match     Match    `json:"match"`
	// Per step (mean over the traces' steps and ranks).
	BaseUs    float64 `json:"base_us_per_step"`
	NewUs     float64 `json:"new_us_per_step"`
	DeltaUs   float64 `json:"delta_us_per_step"`
	BaseCalls float64 `json:"base_calls_per_step"`
	NewCalls  float64 `json:"new_calls_per_step"`
	SharePct  float64 `json:"share_of_change_pct"`
	// Time says which time is compared: "device" (kernel or operator
	// device time) or "host" (operator self time on the CPU).
	Time string `json:"time"`
	// BaseShapes/NewShapes: operator input shapes (largest first) when
	// they differ between the runs.
	BaseShapes []string `json:"base_shapes,omitempty"`
	NewShapes  []string `json:"new_shapes,omitempty"`
	// BaseKernelPct/NewKernelPct (kernels): the share of its run's kernel
	// time, the figure to compare across different devices.
	BaseKernelPct float64 `json:"base_kernel_time_pct,omitempty"`
	NewKernelPct  float64 `json:"new_kernel_time_pct,omitempty"`
	// Op is the operator that launched most of a kernel's time.
	Op string `json:"op,omitempty"`
}

// Change is one other measured difference.
type Change struct {
	// What is the metric, Base and New its formatted values.
	What string `json:"what"`
	Base string `json:"base"`
	New  string `json:"new"`
	// Note explains or locates it (sync sites, Python lines).
	Note string `json:"note,omitempty"`
}

// EnvDiff is one environment setting that differs.
type EnvDiff struct {
	Key  string `json:"key"`
	Base string `json:"base"`
	New  string `json:"new"`
}

// Metric is one value of the summary the CI gate reads.
type Metric struct {
	Base float64 `json:"base"`
	New  float64 `json:"new"`
	// DeltaPct is the relative change (0 when Base is 0).
	DeltaPct float64 `json:"delta_pct"`
	// Significant is set for step_time and throughput only: the change
	// exceeds the noise (see Headline).
	Significant *bool `json:"significant,omitempty"`
}

// Compare compares base with new.
func Compare(base, new *Side, o Options) *Result {
	if o.Top <= 0 {
		o.Top = 10
	}
	if o.MinSharePct <= 0 {
		o.MinSharePct = 1
	}
	b, n := summarise(base), summarise(new)
	r := &Result{Schema: Schema, Base: b.summary, New: n.summary, Metrics: map[string]Metric{}}
	r.Headline = headline(b, n)
	r.Warnings = append(r.Warnings, warnings(b, n)...)
	if r.Work = stepWork(b.steps, n.steps); r.Work != nil { // nil unless both are the agent's steps
		r.Warnings = append(r.Warnings, WorkNote(r.Work))
	}
	traceDelta := n.summary.TraceStepUs - b.summary.TraceStepUs
	minUs := b.summary.TraceStepUs * o.MinSharePct / 100
	r.Breakdown = breakdownDeltas(b, n, traceDelta)
	r.Kernels = top(matchKernels(b, n, traceDelta), o.Top, minUs)
	r.Ops = top(matchOps(b, n, traceDelta), o.Top, minUs)
	r.Lines = lineDeltas(b, n, r.Headline)
	r.Changes = changes(b, n)
	r.Env = envDiffs(base.Run, new.Run)
	r.Headline.Causes = causes(r)
	if len(r.Headline.Causes) > 0 {
		r.Headline.Cause = r.Headline.Causes[0]
	}
	if r.Headline.Significant && len(r.Env) == 0 && len(r.Lines) == 0 && sameWork(r) {
		r.Headline.SameWork = true
		r.Warnings = append(r.Warnings, "the work is the same (the same operators and kernels, input shapes and call counts): "+
			"the change comes from the machine (load, clocks, contention) rather than the code; re-run both on a quiet machine")
	}
	r.Metrics = metrics(r, b, n)
	noisePct := 0.0
	if r.Headline.NoiseKnown {
		noisePct = (r.Headline.HighPct - r.Headline.LowPct) / 2
	}
	flames := []*FlameDiff{mergeFlames("Python stacks, main thread, profiled window (sampled, time per step)", base.PyStacks, new.PyStacks, noisePct)}
	if base.OpWeight == new.OpWeight { // else one side has no device work: the trees measure different things
		title := "Op call stacks, device time per step (the kernel is the leaf)"
		if base.OpWeight == flame.HostTime {
			title = "Op call stacks, host self time per step"
		}
		flames = append([]*FlameDiff{mergeFlames(title, base.OpStacks, new.OpStacks, noisePct)}, flames...)
	}
	for _, f := range flames {
		if f != nil {
			r.Flames = append(r.Flames, f)
		}
	}
	return r
}

// sameWork says that no listed kernel or operator is new, vanished,
// called a different number of times or with other input shapes: the
// runs did the same work, and a step-time change is the machine's.
func sameWork(r *Result) bool {
	for _, list := range [][]ItemDelta{r.Kernels, r.Ops} {
		for _, it := range list {
			callsMoved := abs(it.NewCalls-it.BaseCalls) >= max(1, countChange*max(it.BaseCalls, it.NewCalls))
			if it.Match != Exact || callsMoved || len(it.BaseShapes) > 0 || len(it.NewShapes) > 0 {
				return false
			}
		}
	}
	return true
}

// top keeps the n largest changes: at least minUs per step, or new and
// vanished items, or a call count per step changed by at least one call
// and 10% (changed launch counts) whatever their time.
func top(items []ItemDelta, n int, minUs float64) []ItemDelta {
	items = slices.DeleteFunc(items, func(it ItemDelta) bool {
		callsMoved := abs(it.NewCalls-it.BaseCalls) >= max(1, countChange*max(it.BaseCalls, it.NewCalls))
		return abs(it.DeltaUs) < minUs && it.Match != Added && it.Match != Vanished && !callsMoved
	})
	slices.SortStableFunc(items, func(a, b ItemDelta) int {
		return cmp.Or(cmp.Compare(abs(b.DeltaUs), abs(a.DeltaUs)), cmp.Compare(a.Name, b.Name))
	})
	if len(items) > n {
		items = items[:n]
	}
	if items == nil {
		items = []ItemDelta{}
	}
	return items
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// pct is the relative change from a to b in percent (0 when a is 0).
func pct(a, b float64) float64 {
	if a == 0 {
		return 0
	}
	return 100 * (b - a) / a
}
