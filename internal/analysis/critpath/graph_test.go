package critpath

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// An edge added again between the same nodes updates the first in place,
// as networkx does: its position, the last one's values.
func TestMergeUpdatesInPlace(t *testing.T) {
	g := timedGraph(0, 10, 20, 30)
	g.add(2, 3, edgeOp, false, trace.None)
	g.add(0, 1, edgeOp, false, 7)
	g.add(1, 2, edgeDep, false, trace.None)
	g.add(0, 1, edgeKK, false, 9)
	g.add(0, 1, edgeSync, false, 11)
	g.merge()
	want := []edge{
		{u: 2, v: 3, attr: trace.None, typ: edgeOp},
		{u: 0, v: 1, attr: 11, typ: edgeSync},
		{u: 1, v: 2, attr: trace.None, typ: edgeDep},
	}
	weights := []int64{10, 0, 0} // the sync edge's values replaced the op edge's 10
	if len(g.edges) != len(want) {
		t.Fatalf("edges %v, want %v", g.edges, want)
	}
	for i, e := range want {
		if g.edges[i] != e {
			t.Errorf("edge %d: %+v, want %+v", i, g.edges[i], e)
		}
		if w := g.weight(&g.edges[i]); w != weights[i] {
			t.Errorf("edge %d weighs %d, want %d", i, w, weights[i])
		}
		if j, ok := g.edgeBetween(e.u, e.v); !ok || j != int32(i) {
			t.Errorf("edgeBetween(%d, %d) = %d, %v; want %d", e.u, e.v, j, ok, i)
		}
	}
	if _, ok := g.edgeBetween(1, 0); ok {
		t.Error("edgeBetween found an edge never added")
	}
}

// timedGraph returns a graph without edges whose nodes are the starts of
// events at times ts.
func timedGraph(ts ...int64) *graph {
	g := &graph{events: &trace.Events{Start: ts, Dur: make([]int64, len(ts))}, seen: make([]bool, len(ts))}
	for i := range ts {
		g.nodes = append(g.nodes, startNode(int32(i)))
	}
	return g
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

// An edge weighs the time between its nodes, zero when added as weighing
// zero and when its end comes first (counted as a negative weight).
func TestEdgeWeight(t *testing.T) {
	g := timedGraph(100, 250, 40)
	for _, c := range []struct {
		u, v int32
		typ  uint8
		zero bool
		want int64
	}{{0, 1, edgeOp, false, 150}, {0, 1, edgeKK, true, 0}, {0, 2, edgeLaunch, false, 0}, {0, 1, edgeDep, false, 0}} {
		i := g.add(c.u, c.v, c.typ, c.zero, trace.None)
		if w := g.weight(&g.edges[i]); w != c.want {
			t.Errorf("%d -> %d (type %d, zero %v) weighs %d, want %d", c.u, c.v, c.typ, c.zero, w, c.want)
		}
	}
	if g.negW != 1 {
		t.Errorf("%d negative weights, want 1", g.negW)
	}
}
