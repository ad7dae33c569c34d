// Package flame is the flame-graph data model: a tree of call stacks with
// a value per node, built from a Python sampler profile (FromPyProfile) or
// from a trace's op call stacks (FromTrace), cut to a node limit (Limit) so
// that a million-node input stays drawable, and written as folded stacks
// (WriteFolded, flamegraph.pl's input) or as a compact wire format for
// browsers (ToWire / WriteWire; the tests read it back and check its
// structure).
//
// Design note: the tree is built by Add(stack, value) with a child index
// per node, so building costs one map lookup per frame. Values are int64 in
// Tree.Unit ("nanoseconds" for traces, "samples" for the Python sampler;
// Tree.PeriodNs converts samples to time). A node's Total is its Self plus
// its children's Totals; this invariant holds after every operation,
// including Limit, which folds the smallest subtrees of a node into one
// "(other)" leaf carrying their whole total.
//
// # Wire format
//
// The wire format is pyroscope's "flamebearer" layout: a table of names and
// one flat integer array per level (depth) of the tree, four integers per
// node, so that a browser can draw it without building objects per node:
//
//	{
//	  "version": 1,
//	  "unit": "nanoseconds",      // or "samples"
//	  "period_ns": 1,             // nanoseconds per unit (the sampling interval for "samples")
//	  "total": 123456,            // the root's total (the width of the graph)
//	  "max_self": 789,            // the largest self value (for colour scales)
//	  "names": ["total", "main", ...],
//	  "levels": [
//	    [0, 123456, 0, 0],                  // level 0: the root
//	    [0, 100000, 5, 1,   0, 23456, 0, 2], // level 1: two nodes
//	    ...
//	  ]
//	}
//
// Each node in a level is the quadruple [x_delta, total, self, name_index].
// x_delta is the node's left edge minus the right edge (left + total) of the
// previous node in the same level (0 for the first node means x = 0), so
// the absolute left edge x is recovered by summing x_delta and total of
// the preceding quadruples of that level. Nodes in a level are ordered by
// x; a node's parent is the node in the level above whose [x, x+total)
// range holds it. Children are ordered by name, "(other)" last.
package flame

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// Other is the name of the node that holds merged small subtrees.
const Other = "(other)"

// Units.
const (
	UnitNanoseconds = "nanoseconds"
	UnitSamples     = "samples"
)

// DefaultMaxNodes is a node limit that browsers draw comfortably.
const DefaultMaxNodes = 8192

// Node is one frame in one call path.
type Node struct {
	Name     string
	Self     int64 // value in this frame itself
	Total    int64 // Self + children's totals
	Children []*Node

	index map[string]*Node // children by name, while building
}

// Tree is a flame graph.
type Tree struct {
	Root *Node // named "total"
	Unit string
	// PeriodNs is nanoseconds per unit: 1 for nanoseconds, the sampling
	// interval for samples.
	PeriodNs int64
	nodes    int
}

// New returns an empty tree.
func New(unit string, periodNs int64) *Tree {
	if periodNs <= 0 {
		periodNs = 1
	}
	return &Tree{Root: &Node{Name: "total"}, Unit: unit, PeriodNs: periodNs, nodes: 1}
}

// Add adds value to the stack (root first). A zero or negative value is
// ignored; an empty stack adds to the root's self.
func (t *Tree) Add(stack []string, value int64) {
	if value <= 0 {
		return
	}
	n := t.Root
	n.Total += value
	for _, name := range stack {
		c := child(t, n, name)
		c.Total += value
		n = c
	}
	n.Self += value
}

// child returns n's child named name, adding it to t when n has none.
func child(t *Tree, n *Node, name string) *Node {
	c := n.index[name]
	if c == nil {
		if n.index == nil {
			n.index = make(map[string]*Node, 4)
			for _, old := range n.Children {
				n.index[old.Name] = old
			}
		}
		c = &Node{Name: name}
		n.index[name] = c
		n.Children = append(n.Children, c)
		t.nodes++
	}
	return c
}

// Total is the root's total.
func (t *Tree) Total() int64 { return t.Root.Total }

// Nodes is the number of nodes, the root included.
func (t *Tree) Nodes() int { return t.nodes }

// countNodes recounts t.nodes after the tree was built or cut without Add
// (Limit; the tests' fromWire).
func (t *Tree) countNodes() {
	t.nodes = 0
	var cnt func(n *Node)
	cnt = func(n *Node) {
		t.nodes++
		for _, c := range n.Children {
			cnt(c)
		}
	}
	cnt(t.Root)
}

// Depth is the number of levels, the root's included.
func (t *Tree) Depth() int {
	var d func(n *Node) int
	d = func(n *Node) int {
		m := 0
		for _, c := range n.Children {
			m = max(m, d(c))
		}
		return m + 1
	}
	return d(t.Root)
}

// sortChildren orders every node's children by name, Other last, and
// drops the build indexes.
func (t *Tree) sortChildren() {
	var walk func(n *Node)
	walk = func(n *Node) {
		n.index = nil
		slices.SortFunc(n.Children, func(a, b *Node) int {
			if (a.Name == Other) != (b.Name == Other) {
				if a.Name == Other {
					return 1
				}
				return -1
			}
			return strings.Compare(a.Name, b.Name)
		})
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(t.Root)
}

type nodeHeap []*Node

func (h nodeHeap) Len() int { return len(h) }
func (h nodeHeap) Less(i, j int) bool {
	if h[i].Total != h[j].Total {
		return h[i].Total > h[j].Total
	}
	return h[i].Name < h[j].Name
}
func (h nodeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *nodeHeap) Push(x any)   { *h = append(*h, x.(*Node)) }
func (h *nodeHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}

// Limit cuts the tree to at most maxNodes nodes (the root and the "(other)"
// nodes included; at least 2). Nodes are kept largest total first, a node
// only with its parent; the children of a kept node that are not kept are
// merged into one "(other)" leaf holding their totals, so every total is
// preserved. Returns the number of nodes merged away.
func (t *Tree) Limit(maxNodes int) int {
	maxNodes = max(maxNodes, 2)
	if t.nodes <= maxNodes {
		t.sortChildren()
		return 0
	}
	before := t.nodes
	kept := map[*Node]bool{t.Root: true}
	remaining := map[*Node]int{}
	parent := map[*Node]*Node{}
	others := 0
	count := 1
	h := &nodeHeap{}
	if len(t.Root.Children) > 0 {
		remaining[t.Root] = len(t.Root.Children)
		others = 1
		for _, c := range t.Root.Children {
			parent[c] = t.Root
			heap.Push(h, c)
		}
	}
	for h.Len() > 0 {
		n := heap.Pop(h).(*Node)
		p := parent[n]
		nextOthers := others
		if remaining[p] == 1 {
			nextOthers--
		}
		if len(n.Children) > 0 {
			nextOthers++
		}
		if count+1+nextOthers > maxNodes {
			break
		}
		kept[n] = true
		count++
		remaining[p]--
		others = nextOthers
		if len(n.Children) > 0 {
			remaining[n] = len(n.Children)
			for _, c := range n.Children {
				parent[c] = n
				heap.Push(h, c)
			}
		}
	}
	var rebuild func(n *Node)
	rebuild = func(n *Node) {
		n.index = nil
		var keep []*Node
		var merged int64
		for _, c := range n.Children {
			if kept[c] {
				keep = append(keep, c)
				rebuild(c)
			} else {
				merged += c.Total
			}
		}
		if merged > 0 {
			// A kept child named Other (a second Limit) absorbs the rest.
			var o *Node
			for _, c := range keep {
				if c.Name == Other {
					o = c
				}
			}
			if o == nil {
				o = &Node{Name: Other}
				keep = append(keep, o)
			}
			o.Self += merged
			o.Total += merged
		}
		n.Children = keep
	}
	rebuild(t.Root)
	t.countNodes()
	t.sortChildren()
	return before - t.nodes
}

// Walk calls fn for every node with a non-zero self value, with the stack
// from the root's first child down to the node (the root itself is not in
// the stack), in name order. The stack slice is reused between calls.
func (t *Tree) Walk(fn func(stack []string, self int64)) {
	t.sortChildren()
	var stack []string
	var walk func(n *Node)
	walk = func(n *Node) {
		if n.Self > 0 {
			fn(stack, n.Self)
		}
		for _, c := range n.Children {
			stack = append(stack, c.Name)
			walk(c)
			stack = stack[:len(stack)-1]
		}
	}
	walk(t.Root)
}

// FoldedName makes a frame name safe for folded stacks: ';' separates
// frames and a line ends a record, so they are replaced; other control
// characters become '?' and invalid UTF-8 U+FFFD (textsafe.Text), so an
// untrusted name cannot drive the terminal the stacks are printed on.
func FoldedName(s string) string {
	if strings.ContainsAny(s, ";\n\r") {
		s = strings.NewReplacer(";", ":", "\n", " ", "\r", " ").Replace(s)
	}
	return textsafe.Text(s)
}

// WriteFolded writes the tree as folded stacks ("a;b;c 123" per line), the
// input of flamegraph.pl, inferno and speedscope's importer. Values are in
// the tree's unit. A root self value (stackless time) is written as a
// one-frame stack "(root)".
func (t *Tree) WriteFolded(w io.Writer) error {
	bw := bufio.NewWriter(w)
	var line []byte
	t.Walk(func(stack []string, self int64) {
		line = line[:0]
		if len(stack) == 0 {
			line = append(line, "(root)"...)
		}
		for i, f := range stack {
			if i > 0 {
				line = append(line, ';')
			}
			line = append(line, FoldedName(f)...)
		}
		line = append(line, ' ')
		line = strconv.AppendInt(line, self, 10)
		line = append(line, '\n')
		bw.Write(line)
	})
	return bw.Flush()
}

// Wire is the browser wire format (see the package doc).
type Wire struct {
	Version  int       `json:"version"`
	Unit     string    `json:"unit"`
	PeriodNs int64     `json:"period_ns"`
	Total    int64     `json:"total"`
	MaxSelf  int64     `json:"max_self"`
	Names    []string  `json:"names"`
	Levels   [][]int64 `json:"levels"`
}

// ToWire encodes the tree.
func (t *Tree) ToWire() *Wire {
	t.sortChildren()
	w := &Wire{Version: 1, Unit: t.Unit, PeriodNs: t.PeriodNs, Total: t.Root.Total, Names: []string{}, Levels: [][]int64{}}
	nameIdx := map[string]int64{}
	var ends []int64 // right edge of the last node per level
	var walk func(n *Node, depth int, x int64)
	walk = func(n *Node, depth int, x int64) {
		if depth == len(w.Levels) {
			w.Levels = append(w.Levels, nil)
			ends = append(ends, 0)
		}
		id, ok := nameIdx[n.Name]
		if !ok {
			id = int64(len(w.Names))
			nameIdx[n.Name] = id
			w.Names = append(w.Names, n.Name)
		}
		w.Levels[depth] = append(w.Levels[depth], x-ends[depth], n.Total, n.Self, id)
		ends[depth] = x + n.Total
		w.MaxSelf = max(w.MaxSelf, n.Self)
		cx := x
		for _, c := range n.Children {
			walk(c, depth+1, cx)
			cx += c.Total
		}
	}
	walk(t.Root, 0, 0)
	return w
}

// WriteWire writes the tree's wire format as JSON.
func (t *Tree) WriteWire(w io.Writer) error {
	return json.NewEncoder(w).Encode(t.ToWire())
}
