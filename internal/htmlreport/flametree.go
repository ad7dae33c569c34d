package htmlreport

// A call tree with a node limit and its wire format, after pyroscope's: a
// names table and, per depth level, a flat integer array of 4-tuples
// (x offset from the end of the previous node on the level, total, self,
// name index). A browser draws a level by walking its array once; no
// object per node is ever built.
//
// TODO(flame): replace with internal/flame once it lands; the wire format
// is the one the front-end reads (web/src/flame.js).

import (
	"sort"
)

// Wire is a flame graph in the compact wire format.
type Wire struct {
	Names  []string  `json:"names"`
	Levels [][]int64 `json:"levels"`
	Total  int64     `json:"total"`
	// Nodes is the node count before the limit; Kept after.
	Nodes int `json:"nodes"`
	Kept  int `json:"kept"`
}

type tree struct {
	parent []int32
	name   []int32
	self   []int64
	kids   map[uint64]int32
	names  []string
	nameID map[string]int32
}

func newTree() *tree {
	t := &tree{kids: map[uint64]int32{}, nameID: map[string]int32{}}
	t.parent = append(t.parent, -1)
	t.name = append(t.name, t.intern("all"))
	t.self = append(t.self, 0)
	return t
}

func (t *tree) intern(s string) int32 {
	if id, ok := t.nameID[s]; ok {
		return id
	}
	id := int32(len(t.names))
	t.names = append(t.names, s)
	t.nameID[s] = id
	return id
}

// child returns the node for name under parent, creating it.
func (t *tree) child(parent int32, name string) int32 {
	nm := t.intern(name)
	key := uint64(parent)<<32 | uint64(uint32(nm))
	if id, ok := t.kids[key]; ok {
		return id
	}
	id := int32(len(t.parent))
	t.parent = append(t.parent, parent)
	t.name = append(t.name, nm)
	t.self = append(t.self, 0)
	t.kids[key] = id
	return id
}

func (t *tree) addSelf(node int32, w int64) { t.self[node] += w }

// add adds a stack (root first) with weight w.
func (t *tree) add(stack []string, w int64) {
	n := int32(0)
	for _, f := range stack {
		n = t.child(n, f)
	}
	t.self[n] += w
}

// wire encodes the tree, keeping at most limit nodes: the lightest nodes
// are folded into their parent's self weight.
func (t *tree) wire(limit int) *Wire {
	n := len(t.parent)
	total := make([]int64, n)
	copy(total, t.self)
	for i := n - 1; i > 0; i-- { // children are created after parents
		total[t.parent[i]] += total[i]
	}
	keep := make([]bool, n)
	kept := n
	if n > limit {
		ord := make([]int, n)
		for i := range ord {
			ord[i] = i
		}
		sort.SliceStable(ord, func(a, b int) bool { return total[ord[a]] > total[ord[b]] })
		for _, i := range ord[:limit] {
			keep[i] = true
		}
		kept = 0
		for i := 0; i < n; i++ { // a kept node needs a kept parent
			if i > 0 && !keep[t.parent[i]] {
				keep[i] = false
			}
			if keep[i] {
				kept++
			}
		}
	} else {
		for i := range keep {
			keep[i] = true
		}
	}
	self := make([]int64, n)
	copy(self, t.self)
	for i := n - 1; i > 0; i-- {
		if !keep[i] {
			// Fold the whole dropped subtree into the nearest kept ancestor.
			p := t.parent[i]
			if keep[p] {
				self[p] += total[i]
			}
		}
	}
	children := make([][]int32, n)
	for i := 1; i < n; i++ {
		if keep[i] {
			p := t.parent[i]
			children[p] = append(children[p], int32(i))
		}
	}
	w := &Wire{Total: total[0], Nodes: n, Kept: kept}
	// Renumber names to those used, in first-use order.
	nameMap := map[int32]int64{}
	nameOf := func(i int32) int64 {
		nm := t.name[i]
		if id, ok := nameMap[nm]; ok {
			return id
		}
		id := int64(len(w.Names))
		w.Names = append(w.Names, t.names[nm])
		nameMap[nm] = id
		return id
	}
	type item struct {
		node int32
		x    int64
	}
	level := []item{{0, 0}}
	for len(level) > 0 {
		var arr []int64
		var next []item
		prevEnd := int64(0)
		for _, it := range level {
			arr = append(arr, it.x-prevEnd, total[it.node], self[it.node], nameOf(it.node))
			prevEnd = it.x + total[it.node]
			kids := children[it.node]
			sort.Slice(kids, func(a, b int) bool { return t.names[t.name[kids[a]]] < t.names[t.name[kids[b]]] })
			x := it.x
			for _, k := range kids {
				next = append(next, item{k, x})
				x += total[k]
			}
		}
		w.Levels = append(w.Levels, arr)
		level = next
	}
	return w
}
