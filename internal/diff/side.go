package diff

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/runreport"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
)

// sideData is what one side contributes to the comparison, per step and
// averaged over its traces (ranks).
type sideData struct {
	side    *Side
	summary SideSummary
	// samples are the step times (µs) the headline compares; steps are
	// the agent's steps they come from (nil: the traces' steps).
	samples []float64
	steps   map[int]steptimes.Step
	// categories is the mean step's breakdown, averaged over the traces.
	categories [breakdown.NumCategories]float64
	// traces are the trace reports with a breakdown, and stepsOf the
	// number of steps their operator and kernel tables cover.
	traces  []*report.TraceReport
	stepsOf []int
	// facts are the other per-step figures (see changes).
	facts facts
	// lines: the main-thread time per Python line (nil for traces).
	lines *LineTimes
	// allSteps: the window check left out every step of a trace, so its
	// complete steps are used anyway (see warnings).
	allSteps bool
}

func summarise(s *Side) *sideData {
	d := &sideData{side: s, summary: SideSummary{Label: s.Label, Kind: "traces", Devices: []string{}}}
	if s.Run != nil {
		d.summary.Kind = "run directory"
	}
	r := s.Report
	d.summary.Traces = len(r.Traces)
	seen := map[string]bool{}
	for _, in := range r.Inputs {
		for _, dev := range in.Devices {
			if !seen[dev.Name] {
				seen[dev.Name] = true
				d.summary.Devices = append(d.summary.Devices, dev.Name)
			}
		}
	}
	slices.Sort(d.summary.Devices)
	for i := range r.Traces {
		t := &r.Traces[i]
		cats, total, ok := meanStep(t.Breakdown)
		if !ok {
			continue
		}
		d.traces = append(d.traces, t)
		d.stepsOf = append(d.stepsOf, tableSteps(t))
		for c := range cats {
			d.categories[c] += cats[c]
		}
		d.summary.TraceStepUs += total
		if t.Breakdown.AveragedSteps == 0 {
			d.allSteps = true
		}
	}
	if n := float64(len(d.traces)); n > 0 {
		for c := range d.categories {
			d.categories[c] /= n
		}
		d.summary.TraceStepUs /= n
	}
	d.summary.Verdict, d.summary.VerdictDetail = verdictOf(r)
	steps := onlySteps(AgentSteps(s.Run), s.OnlySteps)
	if d.samples = stepDursUs(steps); len(d.samples) >= 3 {
		d.steps = steps
		d.summary.StepSource = "agent (every step of the run outside the profiled window and the warm-up)"
	} else {
		d.samples = traceSteps(d.traces)
		d.summary.StepSource = "trace steps (those the window check kept)"
	}
	d.summary.Steps = len(d.samples)
	d.summary.StepTimesUs = d.samples
	d.facts = factsOf(d)
	d.lines = s.Lines
	d.summary.MedianUs = stats.Median(d.samples)
	return d
}

// meanStep is the breakdown's average step per category and in total,
// or, when the window check left out every step, the average of the
// complete steps: a comparison of two such captures still says
// something, with a warning.
func meanStep(b *breakdown.Result) (cats [breakdown.NumCategories]float64, total float64, ok bool) {
	if b == nil {
		return cats, 0, false
	}
	if b.AveragedSteps > 0 {
		for c := range cats {
			cats[c] = b.Average.Get(breakdown.Category(c))
		}
		return cats, b.Average.TotalUs, true
	}
	n := 0
	for _, st := range b.Steps {
		if st.Incomplete {
			continue
		}
		n++
		for c := range cats {
			cats[c] += st.Get(breakdown.Category(c))
		}
		total += st.TotalUs
	}
	if n == 0 {
		return cats, 0, false
	}
	for c := range cats {
		cats[c] /= float64(n)
	}
	return cats, total / float64(n), true
}

// tableSteps is how many steps the operator and kernel tables of t
// cover: the ProfilerStep annotations the operator table holds; without
// them the window check's range, else every step.
func tableSteps(t *report.TraceReport) int {
	if t.Ops != nil {
		n := 0
		for _, row := range t.Ops.Rows {
			if strings.HasPrefix(row.Name, "ProfilerStep#") {
				n += row.Calls
			}
		}
		if n > 0 {
			return n
		}
	}
	if t.Ops != nil && t.Ops.Steps > 0 {
		return t.Ops.Steps
	}
	return max(1, len(t.Breakdown.Steps))
}

// verdictOf is the run's verdict: across ranks when there are several.
func verdictOf(r *report.Report) (class, detail string) {
	if r.Diagnosis != nil {
		return string(r.Diagnosis.Verdict.Primary), r.Diagnosis.Verdict.Detail
	}
	for _, t := range r.Traces {
		if t.Diagnosis != nil {
			return string(t.Diagnosis.Verdict.Primary), t.Diagnosis.Verdict.Detail
		}
	}
	return "", ""
}

// AgentSteps are the steps the agent timed outside the profiled window
// (the profiler inflates the steps it records) and after the warm-up
// `run` reports (steptimes.Summary.Warmup), by number; with several
// processes, a step is its slowest rank's.
func AgentSteps(run *runreport.Report) map[int]steptimes.Step {
	steps := map[int]steptimes.Step{}
	if run == nil {
		return steps
	}
	for _, p := range run.Processes {
		if p.Evidence == nil {
			continue
		}
		var warmup []int
		if p.StepSeries != nil {
			warmup = p.StepSeries.Warmup
		}
		for _, st := range p.Evidence.StepSeries() {
			if st.InWindow || st.DurS <= 0 || slices.Contains(warmup, st.N) {
				continue
			}
			if old, ok := steps[st.N]; !ok || st.DurS > old.DurS {
				steps[st.N] = st
			}
		}
	}
	return steps
}

// stepDursUs are the steps' durations in µs, in step order.
func stepDursUs(steps map[int]steptimes.Step) []float64 {
	byStep := map[int]float64{}
	for n, st := range steps {
		byStep[n] = st.DurS * 1e6
	}
	return sortedValues(byStep)
}

// onlySteps keeps the steps in only, when it is set.
func onlySteps(steps map[int]steptimes.Step, only map[int]bool) map[int]steptimes.Step {
	if only != nil {
		maps.DeleteFunc(steps, func(n int, _ steptimes.Step) bool { return !only[n] })
	}
	return steps
}

// traceSteps are the traces' step totals that the breakdown averaged
// (complete steps the window check kept); across ranks, a step's time is
// its slowest rank's.
func traceSteps(traces []*report.TraceReport) []float64 {
	byStep := map[int]float64{}
	for _, t := range traces {
		for i, st := range t.Breakdown.Steps {
			if st.Incomplete || (st.Excluded && t.Breakdown.AveragedSteps > 0) {
				continue
			}
			key := i
			if n, err := strconv.Atoi(st.Name); err == nil {
				key = n
			}
			byStep[key] = max(byStep[key], st.TotalUs)
		}
	}
	return sortedValues(byStep)
}

// drifting are the processes of a run whose step time drifted (the
// last quarter's median step against the first quarter's, as `run`
// reports it), with the drift in percent.
func drifting(run *runreport.Report) map[string]float64 {
	out := map[string]float64{}
	if run == nil {
		return out
	}
	for _, p := range run.Processes {
		if p.StepSeries != nil && abs(p.StepSeries.DriftPct) >= steptimes.DriftPct {
			out[p.Tag] = p.StepSeries.DriftPct
		}
	}
	return out
}

func sortedValues(m map[int]float64) []float64 {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]float64, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}

func warnings(b, n *sideData) []string {
	var w []string
	if len(b.summary.Devices) > 0 && len(n.summary.Devices) > 0 && !slices.Equal(b.summary.Devices, n.summary.Devices) {
		w = append(w, fmt.Sprintf("the runs used different devices (%s vs %s): time differences mix the device and the code; "+
			"compare the shares of the step (breakdown percentages) rather than absolute times",
			joinQuoted(b.summary.Devices), joinQuoted(n.summary.Devices)))
	}
	for _, d := range []*sideData{b, n} {
		if len(d.samples) < 3 {
			w = append(w, fmt.Sprintf("%s: only %d step(s) timed: the noise of the step time cannot be estimated", report.Printable(d.summary.Label), len(d.samples)))
		}
		if drifts := drifting(d.side.Run); len(drifts) > 0 {
			var parts []string
			for _, tag := range slices.Sorted(maps.Keys(drifts)) {
				parts = append(parts, fmt.Sprintf("%s %+.0f%%", report.Printable(tag), drifts[tag]))
			}
			w = append(w, fmt.Sprintf("%s: the step time drifted within the run (last quarter's median step against the first quarter's: %s): "+
				"the machine's load or clocks changed, and the interval may understate the noise between runs",
				report.Printable(d.summary.Label), strings.Join(parts, ", ")))
		}
		if d.allSteps {
			w = append(w, fmt.Sprintf("%s: the window check left out every step (not steady state, see `bottleneck analyze`); its steps are compared anyway", report.Printable(d.summary.Label)))
		}
		if len(d.traces) == 0 {
			w = append(w, fmt.Sprintf("%s: no trace with a step breakdown: the sources of the change cannot be measured", report.Printable(d.summary.Label)))
		}
		for _, in := range d.side.Report.Inputs {
			if len(in.Problems) > 0 {
				p := in.Problems[0]
				more := ""
				if len(in.Problems) > 1 {
					more = fmt.Sprintf(" and %d more problem(s)", len(in.Problems)-1)
				}
				w = append(w, fmt.Sprintf("%s: %s was read with problems: %s at byte %d%s (see `bottleneck analyze`)", report.Printable(d.summary.Label),
					report.Printable(in.Path), report.Printable(p.What), p.Offset, more))
			}
		}
		for _, f := range d.side.Report.Failures {
			w = append(w, fmt.Sprintf("%s: %s could not be read: %s", report.Printable(d.summary.Label), report.Printable(f.Path), report.Printable(f.Error)))
		}
	}
	return w
}

func joinQuoted(names []string) string {
	out := ""
	for i, s := range names {
		if i > 0 {
			out += ", "
		}
		out += report.Printable(s)
	}
	return out
}
