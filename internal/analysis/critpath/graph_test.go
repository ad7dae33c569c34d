package critpath

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// An edge added again between the same nodes updates the first in place,
// as networkx does: its position, the last one's values.
func TestMergeUpdatesInPlace(t *testing.T) {
	g := &graph{nodes: make([]node, 4), seen: make([]bool, 4)}
	for i := range g.nodes {
		g.nodes[i].ts = int64(10 * i)
	}
	g.add(2, 3, edgeOp, false, trace.None)
	g.add(0, 1, edgeOp, false, 7)
	g.add(1, 2, edgeDep, false, trace.None)
	g.add(0, 1, edgeKK, false, 9)
	g.add(0, 1, edgeSync, false, 11)
	g.merge()
	want := []edge{
		{u: 2, v: 3, attr: trace.None, typ: edgeOp, weight: 10},
		{u: 0, v: 1, attr: 11, typ: edgeSync},
		{u: 1, v: 2, attr: trace.None, typ: edgeDep},
	}
	if len(g.edges) != len(want) {
		t.Fatalf("edges %v, want %v", g.edges, want)
	}
	for i, e := range want {
		if g.edges[i] != e {
			t.Errorf("edge %d: %+v, want %+v", i, g.edges[i], e)
		}
		if j, ok := g.edgeBetween(e.u, e.v); !ok || j != int32(i) {
			t.Errorf("edgeBetween(%d, %d) = %d, %v; want %d", e.u, e.v, j, ok, i)
		}
	}
	if _, ok := g.edgeBetween(1, 0); ok {
		t.Error("edgeBetween found an edge never added")
	}
}

// edgeBetween returns the index of the edge from node u to node v, which
// merge leaves at most one of.
func (g *graph) edgeBetween(u, v int32) (int32, bool) {
	for i, e := range g.edges {
		if e.u == u && e.v == v {
			return int32(i), true
		}
	}
	return 0, false
}
