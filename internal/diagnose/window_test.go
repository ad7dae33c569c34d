package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
)

func TestOutsideStep(t *testing.T) {
	times := [][]any{{1.0, 0.0, 5.0, false}, {2.0, 5.0, 0.2, false}, {3.0, 5.2, 0.1, false},
		{4.0, 5.3, 0.1, false}, {5.0, 5.4, 0.12, false}, {6.0, 5.5, 0.3, true}, {7.0, 5.8, 0.11, false}}
	if got := outsideStep(times); got != 0.11 {
		t.Errorf("median outside the window after warm-up = %v, want 0.11", got)
	}
	if got := outsideStep(times[:5]); got != 0 {
		t.Errorf("with two steps after warm-up: %v, want 0", got)
	}
}

// The profiler-inflation note fires when the window's steps are much
// slower than the steps without the profiler, and stays silent otherwise.
func TestProfilerInflation(t *testing.T) {
	br := &breakdown.Result{AveragedSteps: 3, Average: breakdown.Costs{CPUExecUs: 90e3, OtherUs: 10e3, TotalUs: 100e3},
		Steps: []breakdown.Step{{Name: "4"}, {Name: "5"}, {Name: "6"}}}
	w := &window.Result{SteadyState: true, Used: []string{"4", "5", "6"}, MedianUs: 100e3}
	for _, c := range []struct {
		outside float64
		fires   bool
	}{{0.05, true}, {0.09, false}, {0, false}} {
		d := Compute(Analyses{Events: 1000, Window: w, Breakdown: br, Run: &RunEvidence{WindowStepS: 0.1, OutsideStepS: c.outside}})
		text := strings.Join(d.Window.Notes, "\n")
		if fired := strings.Contains(text, "inflates op times"); fired != c.fires || d.Window.SteadyState == c.fires {
			t.Errorf("outside step %v s against 0.1 s in the window: note %v (steady %v), want %v\n%s", c.outside, fired, d.Window.SteadyState, c.fires, text)
		}
	}
}
