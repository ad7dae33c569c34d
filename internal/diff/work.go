package diff

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// workDiffers is the ratio of two runs' calls a step (either way) from
// which their steps did different work (Result.Work). pytorch/tutorials'
// neural style transfer, under bf16 autocast: its L-BFGS steps evaluated
// the model 2-11 times instead of 20, so its steps ran 6.6x faster where
// a call of the model ran 1.8x faster.
const workDiffers = 1.2

// stepWork compares the work of two runs' compared steps, in calls of the
// program's models (rundir.StepWork): nil where the agent did not count
// them or the runs did about the same. Where it counted the calls of the
// models called on one sample on every step (steptimes.Step.Items), each
// step's time is divided by its own calls; else, from the outermost
// module calls of the steps it counted (one in every few), each run's
// mean step by its mean calls a step.
func stepWork(b, n map[int]steptimes.Step) *rundir.StepWork {
	if len(b) == 0 || len(n) == 0 {
		return nil
	}
	var w *rundir.StepWork
	if bi, ni := perItemUs(b), perItemUs(n); bi != nil && ni != nil {
		w = &rundir.StepWork{Unit: "calls of the model on one sample", BasePerStep: meanOf(b, stepItems), NewPerStep: meanOf(n, stepItems),
			BaseUs: mean(bi), NewUs: mean(ni)}
		if low, high := MeanRatioInterval(bi, ni); low > -100 && high > -100 {
			w.Low, w.High = 1/(1+high/100), 1/(1+low/100)
			w.Significant = w.Low > 1 || w.High < 1
		}
	} else {
		bc, nc := meanOf(b, stepCalls), meanOf(n, stepCalls)
		if bc == 0 || nc == 0 {
			return nil
		}
		w = &rundir.StepWork{Unit: "outermost module calls", BasePerStep: bc, NewPerStep: nc,
			BaseUs: meanOf(b, stepDurUs) / bc, NewUs: meanOf(n, stepDurUs) / nc}
	}
	if w.BasePerStep == 0 || w.NewPerStep == 0 || math.Abs(math.Log(w.BasePerStep/w.NewPerStep)) < math.Log(workDiffers) || w.NewUs <= 0 {
		return nil
	}
	w.Speedup = w.BaseUs / w.NewUs
	return w
}

// perItemUs is each step's time over its calls on one sample, in step
// order, in µs; nil unless every step counted some.
func perItemUs(steps map[int]steptimes.Step) []float64 {
	if len(steps) == 0 {
		return nil
	}
	out := make([]float64, 0, len(steps))
	for _, k := range slices.Sorted(maps.Keys(steps)) {
		st := steps[k]
		if st.Items <= 0 {
			return nil
		}
		out = append(out, st.DurS*1e6/float64(st.Items))
	}
	return out
}

func stepItems(st steptimes.Step) (float64, bool) { return float64(st.Items), st.Items > 0 }
func stepCalls(st steptimes.Step) (float64, bool) { return float64(st.Calls), st.Calls > 0 }
func stepDurUs(st steptimes.Step) (float64, bool) { return st.DurS * 1e6, true }

// meanOf is the mean of what of the steps it is known for (0: none).
func meanOf(steps map[int]steptimes.Step, what func(steptimes.Step) (float64, bool)) float64 {
	sum, n := 0.0, 0
	for _, st := range steps {
		if v, ok := what(st); ok {
			sum, n = sum+v, n+1
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// WorkNote says how the two runs' steps differed in work and what a call
// took in each.
func WorkNote(w *rundir.StepWork) string {
	s := fmt.Sprintf("the steps did different work: %.1f %s a step as it is, %.1f changed, so a step is not the same unit in the two runs "+
		"(an optimizer that evaluates its closure until its line search ends, an episode as long as its policy keeps going): a call took %s -> %s",
		w.BasePerStep, w.Unit, w.NewPerStep, units.Duration(w.BaseUs), units.Duration(w.NewUs))
	switch {
	case w.Low <= 0:
		s += fmt.Sprintf(", %.2fx", w.Speedup)
	case !w.Significant:
		s += fmt.Sprintf(": no significant change (95%% interval %.2fx to %.2fx)", w.Low, w.High)
	case w.Speedup >= 1:
		s += fmt.Sprintf(", %.2fx faster (95%% interval %.2fx to %.2fx)", w.Speedup, w.Low, w.High)
	default:
		s += fmt.Sprintf(", %.2fx slower (95%% interval %.2fx to %.2fx)", 1/w.Speedup, 1/w.High, 1/w.Low)
	}
	return s
}
