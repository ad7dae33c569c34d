package diff

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/flame"
)

func tree(stacks map[string]int64) *flame.Tree {
	t := flame.New(flame.UnitNanoseconds, 1)
	for s, v := range stacks {
		t.Add(strings.Split(s, ";"), v)
	}
	return t
}

// Stacks merge by path, per step and averaged over a side's traces; a
// vanished stack keeps its width and is drawn as shrunk.
func TestMergeFlames(t *testing.T) {
	base := []PerStep{{Tree: tree(map[string]int64{"step;mm": 4000, "step;relu": 1000, "step;gone": 2000}), Steps: 2}}
	next := []PerStep{
		{Tree: tree(map[string]int64{"step;mm": 16000, "step;relu": 2000}), Steps: 4},
		{Tree: tree(map[string]int64{"step;mm": 8000, "step;relu": 1000}), Steps: 2},
	}
	f := mergeFlames("ops", base, next, 0)
	got := map[string]*FlameNode{}
	f.Walk(func(n *FlameNode, _ int) { got[n.Name] = n })
	if mm := got["mm"]; mm.BaseNs != 2000 || mm.NewNs != 4000 || !f.Changed(mm) {
		t.Errorf("mm %+v: want 2000 -> 4000 ns per step, changed", mm)
	}
	if relu := got["relu"]; relu.BaseNs != 500 || relu.NewNs != 500 || f.Changed(relu) {
		t.Errorf("relu %+v: want 500 ns per step on both sides, unchanged", relu)
	}
	if gone := got["gone"]; gone.BaseNs != 1000 || gone.NewNs != 0 || !f.Changed(gone) {
		t.Errorf("gone %+v: want 1000 -> 0, changed", gone)
	}
	svg := drawFlame(f)
	if svg.Grown != 2 || svg.Shrunk != 1 { // step and mm grew, gone shrank
		t.Errorf("grown %d shrunk %d, want 2 and 1", svg.Grown, svg.Shrunk)
	}
	var gone *flameRect
	for i := range svg.Rects {
		if strings.HasPrefix(svg.Rects[i].Hover, "gone\n") {
			gone = &svg.Rects[i]
		}
	}
	if gone == nil || gone.W < 1 || !strings.HasPrefix(gone.Fill, "hsl(215,") {
		t.Errorf("vanished frame %+v: want a visible blue rectangle", gone)
	}
	if mergeFlames("none", nil, nil, 0) != nil {
		t.Error("a flame graph without any time")
	}
}

// A sampled stack's change must exceed its sampling noise: a few samples
// against none is no change (three samples: within 2 standard deviations).
func TestFlameSamplingNoise(t *testing.T) {
	sampled := func(stacks map[string]int64) []PerStep {
		tr := flame.New(flame.UnitSamples, 1e6)
		for s, v := range stacks {
			tr.Add(strings.Split(s, ";"), v)
		}
		return []PerStep{{Tree: tr, Steps: 1}}
	}
	f := mergeFlames("py", sampled(map[string]int64{"main;a": 10, "main;b": 3}), sampled(map[string]int64{"main;a": 10, "main;c": 3}), 0)
	f.Walk(func(n *FlameNode, _ int) {
		if f.Changed(n) {
			t.Errorf("%q (%.0f -> %.0f ns) marked as changed by a few samples", n.Name, n.BaseNs, n.NewNs)
		}
	})
	f = mergeFlames("py", sampled(map[string]int64{"main;a": 100}), sampled(map[string]int64{"main;a": 200}), 0)
	f.Walk(func(n *FlameNode, _ int) {
		if !f.Changed(n) {
			t.Errorf("%q (%.0f -> %.0f ns) doubled but not marked", n.Name, n.BaseNs, n.NewNs)
		}
	})
}
