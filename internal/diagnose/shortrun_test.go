package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// A run whose steps take under a second in all, less than the time before
// the first (pytorch/examples' regression: 259 steps in 46 ms, 1.2 s
// before them), says that no change to its steps saves more, and
// torch.compile, whose compile alone takes seconds, is not advised as a
// gain. Silent where bottleneck ended the program after its window, where
// the steps take longer, and where they outlast the start-up.
func TestShortRun(t *testing.T) {
	for _, c := range []struct {
		name             string
		firstS, st       float64
		stopped          bool
		short, noCompile bool
	}{
		{"regression", 1.22, 0.046, false, true, true},
		{"stopped after the window", 1.22, 0.046, true, false, false},
		{"steps of 2 s", 1.22, 2, false, false, true},
		{"steps of 5 s", 1.22, 5, false, false, false},
		{"a start-up shorter than the steps", 0.3, 0.5, false, false, true},
	} {
		run := &runevidence.RunEvidence{FirstStepS: c.firstS, StepsS: c.st, StoppedAfterProfile: c.stopped,
			Models: []rundir.ModelCall{{File: "/p/main.py", Line: 52, Class: "Linear", Module: "torch.nn.modules.linear"}}}
		d := Compute(cpuTrace(run))
		if got := strings.Contains(d.Verdict.Why, "here no change to the steps saves more than that"); got != c.short {
			t.Errorf("%s: short-run note %v, want %v: %q", c.name, got, c.short, d.Verdict.Why)
		}
		s := &state{p: Default, d: &Diagnosis{}, in: Analyses{Run: run}}
		got := s.compileChange("them")
		if strings.Contains(got, "but not in a run this short") != c.noCompile || strings.Contains(got, "(try it:") == c.noCompile {
			t.Errorf("%s: compile change %q, not advised %v", c.name, got, !c.noCompile)
		}
	}
}
