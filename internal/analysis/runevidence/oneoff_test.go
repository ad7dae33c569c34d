package runevidence

import (
	"math"
	"slices"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
)

// One-off work is the slow steps' time above the median and the time
// after the loop (diffusers' sample images: a 65 s step and 58 s after 48
// steps of 110 ms); not start-up's steps, the window's (the profiler
// lengthens them), a step slow by its waits for a CPU, nor periodic
// work's steps (run.periodic's), whose time after the loop still counts.
func TestOneOff(t *testing.T) {
	mk := func(durs map[int]float64, cpuWait map[int]float64) []steptimes.Step {
		var out []steptimes.Step
		at := 4.0
		for n := 1; n <= 48; n++ {
			d := 0.110
			if x, ok := durs[n]; ok {
				d = x
			}
			out = append(out, steptimes.Step{N: n, StartS: at, DurS: d, InWindow: n >= 8 && n <= 12, CPUWaitS: cpuWait[n]})
			at += d
		}
		return out
	}
	for _, c := range []struct {
		name     string
		steps    []steptimes.Step
		periodic *PeriodicSteps
		runS     float64
		slow     []int
		slowS    float64
		afterS   float64
	}{
		{"a slow step and after the loop", mk(map[int]float64{16: 64.9}, nil), nil, 132, []int{16}, 64.79, 132 - (4 + 47*0.110 + 64.9)},
		{"start-up, the window, a busy machine", mk(map[int]float64{2: 30, 10: 5, 20: 3}, map[int]float64{20: 2.9}), nil, 50, nil, 0, 50 - (4 + 45*0.110 + 38)},
		{"periodic work's steps", mk(map[int]float64{16: 5, 32: 5, 48: 5}, nil), &PeriodicSteps{Every: 16}, 30, nil, 0, 30 - (4 + 45*0.110 + 15)},
	} {
		o := oneOff(c.steps, 0.110, c.periodic, c.runS)
		if o == nil || !slices.Equal(o.SlowSteps, c.slow) || math.Abs(o.SlowS-c.slowS) > 1e-6 || math.Abs(o.AfterS-c.afterS) > 1e-6 || math.Abs(o.UsualS-48*0.110) > 1e-9 {
			t.Errorf("%s: %+v, want slow %v (%.2f s), after %.2f s", c.name, o, c.slow, c.slowS, c.afterS)
		}
	}
	// nothing beyond the steps, or no median: none
	if o := oneOff(mk(nil, nil), 0.110, nil, 4+48*0.110); o != nil {
		t.Errorf("steady steps to the end: %+v", o)
	}
	if o := oneOff(mk(nil, nil), 0, nil, 100); o != nil {
		t.Errorf("no median: %+v", o)
	}
}
