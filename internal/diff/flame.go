package diff

// Diff flame graphs: both runs' call-stack trees (op stacks from the
// traces, Python sampler stacks from run directories) merged by stack
// path, each node holding both runs' time per step.

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/flame"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// PerStep is one call-stack tree (one trace or one process) and the
// number of steps it covers: its values divided by Steps are per step.
type PerStep struct {
	Tree  *flame.Tree
	Steps int
}

// FlameDiff is one merged flame graph.
type FlameDiff struct {
	Title string
	Root  *FlameNode
	// NoiseNs is the smallest change (ns per step) a node needs to count as
	// changed (see changedBeyondNoise).
	NoiseNs float64
}

// FlameNode is one stack path with both runs' time in it (its total,
// children included), in nanoseconds per step, averaged over the traces
// (ranks) or processes of each run.
type FlameNode struct {
	Name          string
	BaseNs, NewNs float64
	// SamplingVar is the variance of DeltaNs from sampling (sampled trees:
	// a count of n samples has a standard deviation of sqrt(n)); 0 for
	// measured times.
	SamplingVar float64
	Children    []*FlameNode
	index       map[string]*FlameNode
}

// DeltaNs is the node's change per step.
func (n *FlameNode) DeltaNs() float64 { return n.NewNs - n.BaseNs }

// Thresholds for a node to count as changed: its change must be at least
// noiseSharePct of the larger run's total, the same floor the tables use
// for listing an item (Options.MinSharePct), and at least the step time's
// own noise (half the width of the headline's interval: a part of the
// step cannot be told apart more finely than the whole), and noiseRelPct of the
// node's own larger value, so that a large node's jitter is not a change;
// for sampled stacks, also twice the sampling noise's standard deviation.
const (
	noiseSharePct = 1.0
	noiseRelPct   = 10.0
)

// Changed says whether n's change exceeds f's noise floor.
func (f *FlameDiff) Changed(n *FlameNode) bool {
	d := abs(n.DeltaNs())
	return d >= f.NoiseNs && d >= noiseRelPct/100*max(n.BaseNs, n.NewNs) && d >= 2*math.Sqrt(n.SamplingVar)
}

// mergeFlames merges both runs' trees; nil when neither has any time.
func mergeFlames(title string, base, next []PerStep, noisePct float64) *FlameDiff {
	root := &FlameNode{Name: "total"}
	add := func(sides []PerStep, isNew bool) {
		for _, s := range sides {
			if s.Tree == nil || s.Tree.Total() <= 0 {
				continue
			}
			scale := float64(s.Tree.PeriodNs) / float64(max(1, s.Steps)) / float64(len(sides))
			addNode(root, s.Tree.Root, scale, s.Tree.Unit == flame.UnitSamples, isNew)
		}
	}
	add(base, false)
	add(next, true)
	if root.BaseNs <= 0 && root.NewNs <= 0 {
		return nil
	}
	sortFlame(root)
	return &FlameDiff{Title: title, Root: root, NoiseNs: max(noiseSharePct, noisePct) / 100 * max(root.BaseNs, root.NewNs)}
}

func addNode(dst *FlameNode, src *flame.Node, scale float64, sampled, isNew bool) {
	v := float64(src.Total) * scale
	if sampled {
		dst.SamplingVar += float64(src.Total) * scale * scale
	}
	if isNew {
		dst.NewNs += v
	} else {
		dst.BaseNs += v
	}
	for _, c := range src.Children {
		d := dst.index[c.Name]
		if d == nil {
			if dst.index == nil {
				dst.index = map[string]*FlameNode{}
			}
			d = &FlameNode{Name: c.Name}
			dst.index[c.Name] = d
			dst.Children = append(dst.Children, d)
		}
		addNode(d, c, scale, sampled, isNew)
	}
}

// sortFlame orders children by name ("(other)" last), as flame graphs
// do, and drops the build indexes.
func sortFlame(n *FlameNode) {
	n.index = nil
	slices.SortFunc(n.Children, func(a, b *FlameNode) int {
		if (a.Name == flame.Other) != (b.Name == flame.Other) {
			if a.Name == flame.Other {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	for _, c := range n.Children {
		sortFlame(c)
	}
}

// Walk calls fn for every node below the root with its depth (1 for the
// root's children).
func (f *FlameDiff) Walk(fn func(n *FlameNode, depth int)) {
	var walk func(n *FlameNode, depth int)
	walk = func(n *FlameNode, depth int) {
		for _, c := range n.Children {
			fn(c, depth)
			walk(c, depth+1)
		}
	}
	walk(f.Root, 1)
}

// OpStacks are the traces' op call-stack trees for the diff flame graph:
// each trace's op stacks weighted by the device time they launched (host
// self time when none of the traces has device work), over the trace's
// profiler steps, and the weight used. Trees are cut to
// flame.DefaultMaxNodes.
func OpStacks(traces []*trace.Trace) ([]PerStep, flame.Weight) {
	weight := flame.HostTime
	for _, t := range traces {
		if flame.DeviceTotal(t) > 0 {
			weight = flame.DeviceTime
		}
	}
	ops := make([]PerStep, 0, len(traces))
	for _, t := range traces {
		tree := flame.FromTrace(t, flame.TraceOptions{Weight: weight})
		tree.Limit(flame.DefaultMaxNodes)
		ops = append(ops, PerStep{Tree: tree, Steps: profilerSteps(t)})
	}
	return ops, weight
}

// PyStacks are the run processes' Python main-thread stacks for the diff
// flame graph: the samples taken in the profiled window over the window's
// steps (the whole run's samples would mix in imports and set-up).
func PyStacks(runs []*rundir.Run) []PerStep {
	var py []PerStep
	for _, run := range runs {
		for _, p := range run.Processes {
			if p.Profile == nil || p.Evidence == nil {
				continue
			}
			steps := 0
			for _, st := range p.Evidence.StepSeries() {
				if st.InWindow {
					steps++
				}
			}
			if steps == 0 {
				continue
			}
			tree := flame.FromPyProfile(p.Profile, flame.PyOptions{Role: "main", Window: true})
			tree.Limit(flame.DefaultMaxNodes)
			py = append(py, PerStep{Tree: tree, Steps: steps})
		}
	}
	return py
}

// profilerSteps counts t's ProfilerStep#N annotations (at least 1).
func profilerSteps(t *trace.Trace) int {
	n := 0
	for i, k := range t.Events.Kind {
		if k == trace.KindUserAnnotation && strings.HasPrefix(t.Name(i), "ProfilerStep#") {
			n++
		}
	}
	return max(1, n)
}
