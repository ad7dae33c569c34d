package diagnose

import (
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
)

// sitePkgs is where a virtualenv installs torch.
const sitePkgs = "/venv/lib/python3.11/site-packages"

// An evaluation every N steps can fall in a long window: its step is an
// outlier, and the share the outliers hold above the median is not work
// in every step. Work in every step (no outlier) stays a finding.
func TestOffStepInOutlierSteps(t *testing.T) {
	var steps []steptimes.Step
	for i := 1; i <= 60; i++ {
		d := 0.0035
		if i == 50 {
			d = 0.035 // the evaluation's step
		}
		steps = append(steps, steptimes.Step{N: i, DurS: d, InWindow: true})
	}
	share := func(period *runevidence.PeriodicSteps) float64 {
		return runevidence.OutlierShare(steps, 0.0035, runevidence.OutlierSteps(steps, 0.0035, period))
	}
	if got := share(nil); got < 0.13 || got > 0.14 {
		t.Fatalf("outlier share %.3f, want (35-3.5)/(59*3.5+35) ms = 0.134", got)
	}
	// the same outlier made by a wait for a CPU (another job on the
	// machine) is no work of the program's
	steps[49].CPUWaitS = 0.031
	if got := share(nil); got != 0 {
		t.Fatalf("outlier share %.3f of a step that waited for a CPU, want 0", got)
	}
	// an outlier that waited in part: its waits are sampled at its lines
	// too, so its wall time above the median is what it holds
	steps[49].CPUWaitS = 0.010
	if got := share(nil); got < 0.13 || got > 0.14 {
		t.Fatalf("outlier share %.3f of an outlier that waited 10 ms, want 0.134", got)
	}
	// a step under twice the median is an outlier only where it falls
	// on the period the run's other steps showed (a checkpoint every 10
	// steps that took its window step to 1.8x)
	steps[49].DurS, steps[49].CPUWaitS = 0.0063, 0
	if got := share(nil); got != 0 {
		t.Fatalf("outlier share %.3f of a step at 1.8x the median, no period, want 0", got)
	}
	every10 := &runevidence.PeriodicSteps{Every: 10, Steps: []int{20, 30, 40}}
	if got := share(every10); got < 0.013 || got > 0.014 {
		t.Fatalf("outlier share %.4f of a step at 1.8x the median on the period, want (6.3-3.5)/(59*3.5+6.3) ms = 0.0133", got)
	}
	if got := share(&runevidence.PeriodicSteps{Every: 7, Steps: []int{21, 28}}); got != 0 {
		t.Fatalf("outlier share %.4f of a step at 1.8x the median off the period, want 0", got)
	}
	steps[49].DurS, steps[49].CPUWaitS = 0.035, 0
	for _, c := range []struct {
		outliers, window float64
		want             bool
		leftOut          bool // the window's share already leaves the outliers' samples out
	}{
		{0.134, 0.08, false, false},
		{0.134, 0.08, true, true},
		{0, 0.08, true, false},
		// CI: an evaluation every 50 steps held 15% of a 121-step window's
		// few samples, its two outlier steps 9% of the time: most of it
		// is in the outliers, though 6% is left
		{0.09, 0.15, false, false},
		{0.03, 0.15, true, false},
	} {
		s := &state{p: Default, step: 1000, steps: 1, share: map[Class]float64{Host: 0.5, CPUCompute: 0.5}, d: &Diagnosis{},
			in: Analyses{Run: &runevidence.RunEvidence{WindowOutlierShare: c.outliers}},
			py: &runevidence.PythonEvidence{OutliersLeftOut: c.leftOut, OffStepShare: 0.08, OffStepWindowShare: c.window, OffStep: []runevidence.OffStepLine{{Line: runevidence.Line{File: "/home/u/train.py", Line: 25, Pct: 8}, Kind: runevidence.OffStepEval}}}}
		s.findings()
		got := slices.ContainsFunc(s.d.Findings, func(f Finding) bool { return f.Rule == "host.off-step" })
		if got != c.want {
			t.Errorf("outlier share %v of a window share %v: off-step finding %v, want %v", c.outliers, c.window, got, c.want)
		}
	}
}

// host.python's change defers to host.off-step when work that does not
// belong in the step is half its Python or more (scikit-learn's metrics
// on every batch), and keeps its own change when that work is smaller.
func TestPythonDefersToOffStep(t *testing.T) {
	for _, c := range []struct {
		off    float64
		defers bool
	}{{0.3, true}, {0.1, false}} {
		line := runevidence.OffStepLine{Line: runevidence.Line{File: "/home/u/tabular.py", Line: 23, Func: "<module>", Pct: 100 * c.off}, Kind: runevidence.OffStepMetrics}
		py := &runevidence.PythonEvidence{Samples: 500, HotSamples: 400, OffStepShare: c.off, OffStepWindowShare: c.off, OffStep: []runevidence.OffStepLine{line}}
		d := Compute(cpuTrace(&runevidence.RunEvidence{Python: py}))
		f := findingOf(d, "host.python")
		if f == nil || findingOf(d, "host.off-step") == nil {
			t.Fatalf("off %.0f%%: want host.python and host.off-step: %+v", 100*c.off, d.Findings)
		}
		if got := strings.HasPrefix(f.Change, "work that does not belong in the step is most of it (metric computation at tabular.py:23"); got != c.defers {
			t.Errorf("off %.0f%%: host.python's change %q", 100*c.off, f.Change)
		}
	}
}
