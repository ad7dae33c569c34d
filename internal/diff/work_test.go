package diff

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// The neural style transfer's run and the one --verify made under bf16
// autocast: their L-BFGS steps evaluated the model 20 and 2-6 times, and
// the comparison says so, with the time of a call.
func TestCompareWarnsOfDifferentWork(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "rundir")
	ios, _, _, _ := iostreams.Test()
	b, _, err := LoadSteps(ios, filepath.Join(dir, "cpu_neural_style"))
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := LoadSteps(ios, filepath.Join(dir, "cpu_neural_style-tried-1"))
	if err != nil {
		t.Fatal(err)
	}
	r := Compare(b, n, Options{})
	if r.Work == nil || r.Work.Speedup < 1.5 || r.Work.Speedup > 2.1 {
		t.Fatalf("work %+v, want a call ~1.8x faster", r.Work)
	}
	found := false
	for _, w := range r.Warnings {
		found = found || strings.HasPrefix(w, "the steps did different work: 20.0 calls of the model on one sample a step as it is")
	}
	if !found {
		t.Errorf("warnings %q", r.Warnings)
	}
	// a run against itself did the same work
	if r := Compare(b, b, Options{}); r.Work != nil {
		t.Errorf("a run against itself: work %+v", *r.Work)
	}
}

func TestStepWork(t *testing.T) {
	steps := func(durS float64, items, calls []int) map[int]steptimes.Step {
		m := map[int]steptimes.Step{}
		for i := range items {
			m[i+1] = steptimes.Step{N: i + 1, DurS: durS * float64(max(items[i], calls[i], 1)), Items: items[i], Calls: calls[i]}
		}
		return m
	}
	none := []int{0, 0, 0, 0}
	for _, c := range []struct {
		name      string
		base, new map[int]steptimes.Step
		unit      string // "" for none
		speedup   float64
	}{
		{"items, fewer a step and each faster", steps(0.048, []int{20, 20, 20, 20}, none), steps(0.027, []int{2, 7, 3, 9}, none), "calls of the model on one sample", 0.048 / 0.027},
		// outermost calls counted on one step in every few: each run's
		// mean step (37.5 and 17.5 ms) over its mean calls (12 and 4)
		{"calls counted on some steps", steps(0.010, none, []int{0, 12, 0, 0}), steps(0.010, none, []int{4, 0, 0, 0}), "outermost module calls", (37.5 / 12) / (17.5 / 4)},
		// silent: the same work a step, however the step's time moved
		{"same items", steps(0.048, []int{20, 20, 20, 20}, none), steps(0.010, []int{19, 20, 21, 20}, none), "", 0},
		{"items on some steps only", steps(0.048, []int{20, 0, 20, 20}, none), steps(0.027, []int{2, 7, 3, 9}, none), "", 0},
		{"nothing counted", steps(0.048, none, none), steps(0.027, none, none), "", 0},
	} {
		w := stepWork(c.base, c.new)
		switch {
		case c.unit == "" && w != nil:
			t.Errorf("%s: %+v, want none", c.name, *w)
		case c.unit != "" && w == nil:
			t.Errorf("%s: none, want %s", c.name, c.unit)
		case w != nil && (w.Unit != c.unit || w.Speedup < c.speedup*0.99 || w.Speedup > c.speedup*1.01):
			t.Errorf("%s: %+v, want %s at %.3fx", c.name, *w, c.unit, c.speedup)
		}
	}
}
