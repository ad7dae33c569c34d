package runevidence

import "github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"

// OneOffWork is the run's time outside its usual steps once they began:
// steps over twice the run's median step that are no periodic work's
// (their time above the median, less their waits for a CPU and for a
// DataLoader), and the time from the last step's end to the program's.
// diffusers' train_unconditional.py on a small UNet generated sample
// images with 1000 denoising steps after its first epoch and after its
// last: a 65 s step and 58 s after the loop, against 48 steps of 110 ms.
type OneOffWork struct {
	// SlowSteps are the slow steps' numbers, SlowS their time above the
	// median step.
	SlowSteps []int   `json:"slow_steps,omitempty"`
	SlowS     float64 `json:"slow_s,omitempty"`
	// AfterS: from the end of the last step the agent timed to the end of
	// the program.
	AfterS float64 `json:"after_s,omitempty"`
	// UsualS: the steps' time at the median step (the median times their
	// count).
	UsualS float64 `json:"usual_s"`
}

// TotalS is the one-off work's time: the slow steps' excess and the time
// after the loop.
func (o *OneOffWork) TotalS() float64 { return o.SlowS + o.AfterS }

// oneOff measures OneOffWork from the run's steps, their median outside
// the window (runMedian), its periodic steps (left to run.periodic) and
// the program's run time since the agent started; nil without a median.
// The first startupSteps and the window's steps are left out of the slow
// ones: start-up (compilation, allocator growth) is run.startup's and the
// profiler lengthens the window's.
func oneOff(steps []steptimes.Step, medianS float64, periodic *PeriodicSteps, runS float64) *OneOffWork {
	if medianS <= 0 || len(steps) == 0 {
		return nil
	}
	o := &OneOffWork{UsualS: medianS * float64(len(steps))}
	if periodic == nil {
		for _, st := range steps {
			if excess := st.DurS - st.CPUWaitS - st.LoaderWaitS - medianS; st.N > startupSteps && !st.InWindow && excess > medianS {
				o.SlowSteps, o.SlowS = append(o.SlowSteps, st.N), o.SlowS+excess
			}
		}
	}
	last := steps[len(steps)-1]
	o.AfterS = max(0, runS-(last.StartS+last.DurS))
	if o.TotalS() <= 0 {
		return nil
	}
	return o
}
