package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
)

func TestStepMedians(t *testing.T) {
	step := func(n int, d float64, in bool) steptimes.Step { return steptimes.Step{N: n, DurS: d, InWindow: in} }
	// steps 1-3 are start-up; 4-7 before the window, 8-10 in it, 11-13 after
	times := []steptimes.Step{step(1, 5, false), step(2, 0.2, false), step(3, 0.2, false),
		step(4, 0.1, false), step(5, 0.12, false), step(6, 0.1, false), step(7, 0.11, false),
		step(8, 0.3, true), step(9, 0.35, true), step(10, 0.3, true),
		step(11, 0.2, false), step(12, 0.21, false), step(13, 0.19, false)}
	if out, in := stepMedians(times); out != 0.2 || in != 0.3 {
		t.Errorf("medians outside, inside the window = %v, %v, want 0.2 (the slower side), 0.3", out, in)
	}
	if out, _ := stepMedians(times[:5]); out != 0 {
		t.Errorf("with two steps after start-up: %v, want 0", out)
	}
}

// The profiler-inflation note fires when the window's steps are much
// slower than the steps without the profiler, and stays silent otherwise;
// it blames the profiler only when the recorded ops per step can explain
// the slowdown. A window as slow as the steps next to it but slower than
// the run's median fell in a slow stretch.
func TestProfilerInflation(t *testing.T) {
	br := &breakdown.Result{AveragedSteps: 3, Average: breakdown.Costs{CPUExecUs: 90e3, OtherUs: 10e3, TotalUs: 100e3},
		Steps: []breakdown.Step{{Name: "4"}, {Name: "5"}, {Name: "6"}}}
	w := &window.Result{SteadyState: true, Used: []string{"4", "5", "6"}, MedianUs: 100e3}
	for _, c := range []struct {
		outside, run float64 // the slower of the medians before and after the window; the run's median
		calls        int     // recorded ops over the 3 steps
		want         string
	}{
		{0.05, 0.05, 3 * 5000, "per-op overhead (5000 ops per step)"},
		{0.05, 0.05, 3 * 20, "something else slowed the window"},
		{0.09, 0.09, 3 * 5000, ""},
		{0, 0, 3 * 5000, ""},
		// the steps before the window were as slow as it (a slow stretch):
		// the run's median still says the window is not the usual step
		{0.09, 0.05, 3 * 20, "the window fell in a slow stretch"},
		{0.09, 0.08, 3 * 20, ""},
	} {
		d := Compute(Analyses{Events: 1000, Window: w, Breakdown: br, Ops: &optable.OpTable{Calls: c.calls},
			Run: &RunEvidence{WindowStepS: 0.1, WindowMedianS: 0.1, OutsideStepS: c.outside, RunMedianStepS: c.run}})
		text := strings.Join(d.Window.Notes, "\n")
		fired := strings.Contains(text, "the recorded steps take")
		if fired != (c.want != "") || d.Window.SteadyState == fired || !strings.Contains(text, c.want) {
			t.Errorf("outside step %v s, run median %v s, %d ops: steady %v, notes %q, want %q", c.outside, c.run, c.calls, d.Window.SteadyState, text, c.want)
		}
	}
}
