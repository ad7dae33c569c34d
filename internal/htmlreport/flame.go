package htmlreport

// Flame graphs: the Python sampler's stacks and the trace's op call stacks
// (host self time, and device time under the launching op), built and cut
// to a node limit by internal/flame and shipped in its wire format.

import (
	"github.com/bottleneck-dev/bottleneck/internal/flame"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// FlameGraph is one flame graph for the page.
type FlameGraph struct {
	Title string `json:"title"`
	// Nodes is the node count before the limit; Merged how many nodes were
	// folded into "(other)" nodes to meet it.
	Nodes  int         `json:"nodes"`
	Merged int         `json:"merged"`
	Wire   *flame.Wire `json:"wire"`
}

// maxFlameNodes bounds each flame graph.
const maxFlameNodes = flame.DefaultMaxNodes

func graph(title string, t *flame.Tree) *FlameGraph {
	if t == nil || t.Total() <= 0 {
		return nil
	}
	g := &FlameGraph{Title: title, Nodes: t.Nodes()}
	g.Merged = t.Limit(maxFlameNodes)
	g.Wire = t.ToWire()
	return g
}

// PythonFlame is the flame graph of a Python profile, one root per thread.
func PythonFlame(p *pyprofile.Profile) *FlameGraph {
	if p == nil {
		return nil
	}
	return graph("Python stacks (sampled)", flame.FromPyProfile(p, flame.PyOptions{Group: flame.GroupThread}))
}

// OpsFlames are the flame graphs of t's op call stacks: host self time
// per thread, and device time under the op that launched it.
func OpsFlames(t *trace.Trace) []*FlameGraph {
	var out []*FlameGraph
	if g := graph("Op call stacks: host time", flame.FromTrace(t, flame.TraceOptions{Weight: flame.HostTime, Threads: true})); g != nil {
		out = append(out, g)
	}
	if g := graph("Op call stacks: device time", flame.FromTrace(t, flame.TraceOptions{Weight: flame.DeviceTime})); g != nil {
		out = append(out, g)
	}
	return out
}
