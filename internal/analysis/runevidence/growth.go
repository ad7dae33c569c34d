package runevidence

import (
	"math"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// InputGrowth is a forward-step program whose step module got a larger
// input at its latest step than at its first: the shapes of the tensor
// argument that grew most.
type InputGrowth struct {
	FirstStep int     `json:"first_step"`
	LastStep  int     `json:"last_step"`
	First     []int64 `json:"first_shape"`
	Last      []int64 `json:"last_shape"`
}

// GrowthOfInputs finds the tensor argument whose elements grew most from the
// first step to the latest, when they grew at least growFactor-fold with
// the same number of dimensions (nil otherwise).
func GrowthOfInputs(in *rundir.StepInputs) *InputGrowth {
	if in == nil || in.First == nil || in.Last == nil || in.Last.Step <= in.First.Step {
		return nil
	}
	var best *InputGrowth
	bestRatio := growFactor
	for i := range min(len(in.First.Shapes), len(in.Last.Shapes)) {
		a, b := in.First.Shapes[i], in.Last.Shapes[i]
		if len(a) != len(b) || Numel(a) <= 0 {
			continue
		}
		if r := float64(Numel(b)) / float64(Numel(a)); r >= bestRatio {
			best, bestRatio = &InputGrowth{FirstStep: in.First.Step, LastStep: in.Last.Step, First: a, Last: b}, r
		}
	}
	return best
}

// StepGrowth is a run whose steps get slower as it goes on: the medians
// of the first and last quarter of the steps after start-up, the line
// through all of them, and the R² of the line through the medians of
// eight equal blocks of them.
type StepGrowth struct {
	FirstMedianS float64 `json:"first_median_s"`
	LastMedianS  float64 `json:"last_median_s"`
	// FirstSteps and LastSteps: the step numbers the quarters span.
	FirstSteps [2]int  `json:"first_steps"`
	LastSteps  [2]int  `json:"last_steps"`
	SlopeS     float64 `json:"slope_s_per_step"`
	R2         float64 `json:"r2"`
	// ExcessS: what the growth adds to the mean step over those steps:
	// their mean less the first quarter's median.
	ExcessS float64 `json:"excess_s"`
	// FirstWaitS and LastWaitS: the quarters' median time a step waited
	// for a CPU (0 where the agent did not measure it).
	FirstWaitS float64 `json:"first_cpu_wait_s,omitempty"`
	LastWaitS  float64 `json:"last_cpu_wait_s,omitempty"`
	// Stages: where the steps jump up when they grow in a few stages, not
	// step by step (stages): the first step of each stage after the first.
	Stages []int `json:"stages,omitempty"`
	// FirstItems and LastItems: the quarters' median calls a step of the
	// models called on one sample (0 where the agent did not count them).
	FirstItems float64 `json:"first_items,omitempty"`
	LastItems  float64 `json:"last_items,omitempty"`
	// FirstCalls and LastCalls: the quarters' median outermost module
	// calls a step, over the steps the agent counted them on (0: too few
	// counted); MoreCalls: they grew and the time per call did not, so
	// the steps do more of the same work (an adaptive ODE solver taking
	// more steps), not work growing with what the run keeps.
	FirstCalls float64 `json:"first_calls,omitempty"`
	LastCalls  float64 `json:"last_calls,omitempty"`
	MoreCalls  bool    `json:"more_calls,omitempty"`
}

// Outermost module calls: at least minCallSteps counted steps in each of
// the first and last quarters; the calls grow when their median grows
// at least callGrowth-fold, and the time per call stays flat when its
// median grows less than perCallFlat-fold.
const (
	minCallSteps = 2
	callGrowth   = 1.25
	perCallFlat  = 1.25
)

// moreCalls fills g's calls from the counted steps: the quarters' median
// calls and whether the growth is theirs.
func moreCalls(g *StepGrowth, steps []steptimes.Step) {
	quarter := func(span [2]int) (calls, perCall []float64) {
		for _, st := range steps {
			if st.N >= span[0] && st.N <= span[1] && st.Calls > 0 && st.DurS > 0 {
				calls, perCall = append(calls, float64(st.Calls)), append(perCall, st.DurS/float64(st.Calls))
			}
		}
		return calls, perCall
	}
	c0, p0 := quarter(g.FirstSteps)
	c1, p1 := quarter(g.LastSteps)
	if len(c0) < minCallSteps || len(c1) < minCallSteps {
		return
	}
	g.FirstCalls, g.LastCalls = median(c0), median(c1)
	g.MoreCalls = g.LastCalls >= callGrowth*g.FirstCalls && median(p1) < perCallFlat*median(p0)
}

// RunGrowth tells a program whose steps get slower (own) from a machine
// that got busier (busier): steps that grow only by the time they wait
// for a CPU (other processes took the CPUs as the run went on: a test
// suite, a second job) do the same work. Steps that grow only by the
// time they wait for a DataLoader are neither: a prefetch queue filled
// before the loop drains and the steps then wait for data, which the
// run's DataLoader share says (input.loader), not growing work. All
// nil: no growth. firstRecorded is the first step
// the profiler recorded (its warm-up steps before it are in the window
// too); 0: the window's first step. moreItems: steps that grow because
// each does more items (a model called on one sample more times a step:
// an RL episode lasting longer as its policy learns), their time per
// item not growing; then own is nil.
func RunGrowth(steps []steptimes.Step, firstRecorded int) (own, busier, moreItems *StepGrowth) {
	steps = deflateWindow(steps, firstRecorded)
	g := Growth(steps)
	if g == nil {
		return nil, nil, nil
	}
	working := slices.Clone(steps)
	for i := range working {
		working[i].DurS -= working[i].LoaderWaitS
	}
	if Growth(working) == nil {
		return nil, nil, nil
	}
	for i := range working {
		working[i].DurS -= working[i].CPUWaitS
	}
	if g.LastWaitS > 0 && Growth(working) == nil {
		return nil, g, nil
	}
	if perItem, ok := perItem(working); ok {
		g.FirstItems, g.LastItems = quarterItems(working, g.FirstSteps), quarterItems(working, g.LastSteps)
		if Growth(perItem) == nil {
			return nil, nil, g
		}
	}
	moreCalls(g, working)
	// the stages of the work itself: a busy spell's waits make jumps of
	// their own
	var ns []int
	var ys []float64
	for _, st := range working {
		if st.N > startupSteps && st.DurS > 0 {
			ns, ys = append(ns, st.N), append(ys, st.DurS)
		}
	}
	g.Stages = stages(ns, ys)
	return g, nil, nil
}

// perItem is steps with each step's time divided by its items, when every
// step after start-up has them counted.
func perItem(steps []steptimes.Step) ([]steptimes.Step, bool) {
	out := slices.Clone(steps)
	for i, st := range out {
		if st.N <= startupSteps || st.DurS <= 0 {
			continue
		}
		if st.Items <= 0 {
			return nil, false
		}
		out[i].DurS /= float64(st.Items)
	}
	return out, true
}

// quarterItems is the median items a step of the steps numbered span[0]
// to span[1].
func quarterItems(steps []steptimes.Step, span [2]int) float64 {
	var xs []float64
	for _, st := range steps {
		if st.N >= span[0] && st.N <= span[1] && st.Items > 0 {
			xs = append(xs, float64(st.Items))
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return median(xs)
}

// OneSampleInputs is the latest input of a step module whose every
// tensor argument had a first dimension of 1 at its first and its latest
// step (nil otherwise): a model called on one sample (one image, one
// sequence, one token of one sequence) per step.
func OneSampleInputs(in *rundir.StepInputs) *rundir.StepInput {
	if in == nil || in.First == nil || in.Last == nil {
		return nil
	}
	one := func(st *rundir.StepInput) bool {
		return len(st.Shapes) > 0 && !slices.ContainsFunc(st.Shapes, func(s []int64) bool { return len(s) == 0 || s[0] != 1 })
	}
	if !one(in.First) || !one(in.Last) {
		return nil
	}
	return in.Last
}

func Numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// The steps grow when the last quarter's median is at least growFactor
// times the first's, each quarter's median at least growQuarter times the
// one before (a step up once leaves two quarters level), and a line
// through the medians of eight blocks explains at least growR2 of their
// variance: a trend. Block medians, not the steps themselves: a loaded
// machine's noise would hide a trend (a growing loop on a busy machine
// here: R² 0.49 over its steps, 0.88 over the block medians).
const (
	growFactor  = 1.5
	growQuarter = 1.05
	growR2      = 0.7
	growSteps   = 24
)

// deflateWindow scales the recorded steps down by the profiler's
// inflation, when they are slower: the median of a few recorded steps
// against that of the steps just before the recording (neighbours, so a
// real growth through the window is kept). A window lengthened over short
// steps can hold the run's later three quarters: a 30-step loop of tiny
// ops recorded at steps 8-29, 2-5x slower under the profiler, read as
// steps that "get slower as the run goes on". The profiler's warm-up steps
// are not inflated, and its first recorded steps only in part: that loop's
// steps took 6-7 ms before the window and in its warm-up, 11.0, 11.5 and
// 15.7 ms in the first three recorded, 20-25 ms in the rest; the few are
// the three after those where the window holds six or more.
func deflateWindow(steps []steptimes.Step, firstRecorded int) []steptimes.Step {
	const k = 3
	first := slices.IndexFunc(steps, func(st steptimes.Step) bool { return st.InWindow })
	if first < 0 {
		return steps
	}
	if firstRecorded <= 0 {
		firstRecorded = steps[first].N
	}
	recorded := func(st steptimes.Step) bool { return st.InWindow && st.N >= firstRecorded }
	var before, in []float64 // the steps before the recording (its warm-up's too), the first window's recorded
	for _, st := range steps {
		if st.N >= firstRecorded && !st.InWindow {
			break // the first window ended
		}
		if st.DurS <= 0 || st.N <= startupSteps {
			continue
		}
		if st.N < firstRecorded {
			before = append(before, st.DurS)
		} else {
			in = append(in, st.DurS)
		}
	}
	if len(before) > k {
		before = before[len(before)-k:]
	}
	if len(in) >= 2*k {
		in = in[k:]
	}
	in = in[:min(k, len(in))]
	mb, mi := median(before), median(in)
	if mi <= mb || mb <= 0 {
		return steps
	}
	steps = slices.Clone(steps)
	for i := range steps {
		if recorded(steps[i]) {
			steps[i].DurS *= mb / mi
		}
	}
	return steps
}

// Growth finds a run whose steps keep getting slower (nil when they
// do not): work that grows with what the run has kept (torch.cat onto a
// kept tensor, a list searched whole every step).
func Growth(steps []steptimes.Step) *StepGrowth {
	var xs, ys, waits []float64
	var ns []int
	for _, st := range steps {
		// the window's steps too, deflated (deflateWindow): a window
		// lengthened over short steps can hold half the run
		if st.N > startupSteps && st.DurS > 0 {
			xs, ys, ns = append(xs, float64(st.N)), append(ys, st.DurS), append(ns, st.N)
			waits = append(waits, st.CPUWaitS)
		}
	}
	if len(ys) < growSteps {
		return nil
	}
	q := len(ys) / 4
	var meds [4]float64
	for i := range meds {
		meds[i] = median(slices.Clone(ys[i*q : (i+1)*q]))
		if i > 0 && meds[i] < growQuarter*meds[i-1] {
			return nil
		}
	}
	var bx, by []float64
	for k, i := len(ys)/8, 0; i < 8; i++ {
		bx, by = append(bx, median(slices.Clone(xs[i*k:(i+1)*k]))), append(by, median(slices.Clone(ys[i*k:(i+1)*k])))
	}
	_, _, r2 := fitLine(bx, by)
	_, b, _ := fitLine(xs, ys)
	if meds[3] < growFactor*meds[0] || r2 < growR2 {
		return nil
	}
	var sum float64
	for _, y := range ys {
		sum += y
	}
	return &StepGrowth{FirstMedianS: meds[0], LastMedianS: meds[3], FirstSteps: [2]int{ns[0], ns[q-1]}, LastSteps: [2]int{ns[3*q], ns[4*q-1]},
		SlopeS: b, R2: r2, ExcessS: sum/float64(len(ys)) - meds[0],
		FirstWaitS: median(waits[:q]), LastWaitS: median(waits[3*q : 4*q])}
}

// stages finds where steps (numbered ns, lasting ys) jump up when they
// grow in stages (nil otherwise): the first step of each later stage,
// the first in the two blocks around a jump over the geometric mean of
// their medians.
func stages(ns []int, ys []float64) []int {
	k := len(ys) / stageBlocks
	if k < 2 {
		return nil
	}
	meds := make([]float64, stageBlocks)
	for i := range meds {
		meds[i] = median(slices.Clone(ys[i*k : (i+1)*k]))
		if meds[i] <= 0 {
			return nil
		}
	}
	var jumps []int
	var jumped float64
	for i := 1; i < stageBlocks; i++ {
		if r := meds[i] / meds[i-1]; r > stageFlat {
			jumps, jumped = append(jumps, i), jumped+math.Log(r)
		}
	}
	total := math.Log(meds[stageBlocks-1] / meds[0])
	if len(jumps) == 0 || len(jumps) > maxStages || total <= 0 || jumped < stageShare*total {
		return nil
	}
	var at []int
	for _, b := range jumps {
		mid := math.Sqrt(meds[b-1] * meds[b])
		for i := (b - 1) * k; i < (b+1)*k; i++ {
			if ys[i] > mid {
				at = append(at, ns[i])
				break
			}
		}
	}
	return at
}

// Growth in stages: the medians of stageBlocks equal blocks of the steps
// rise by at most stageFlat from one block to the next except at up to
// maxStages jumps, and those jumps hold at least stageShare of the rise
// (in logarithms) from the first block to the last. Work that grows with
// what the run keeps rises a little every block; a schedule rises at its
// stages and stays level between them (progressive resizing from 16 to
// 24, 32 and 48 pixels: three jumps).
const (
	stageBlocks = 16
	stageFlat   = 1.15
	maxStages   = 3
	stageShare  = 0.9
)
