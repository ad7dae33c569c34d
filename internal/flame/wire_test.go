package flame

import "fmt"

// fromWire decodes a wire-format graph back into a tree, checking the
// structure a browser relies on: quadruples, name indexes in range,
// children inside their parent, totals at least the self value plus the
// children.
func fromWire(w *Wire) (*Tree, error) {
	if w.Version != 1 {
		return nil, fmt.Errorf("flame: wire version %d", w.Version)
	}
	t := New(w.Unit, w.PeriodNs)
	if len(w.Levels) == 0 {
		return t, nil
	}
	type placed struct {
		n    *Node
		x    int64
		kids int64 // sum of children's totals
	}
	var prev []placed
	for d, lv := range w.Levels {
		if len(lv)%4 != 0 {
			return nil, fmt.Errorf("flame: level %d: length %d is not a multiple of 4", d, len(lv))
		}
		var cur []placed
		var end int64
		pi := 0
		for i := 0; i < len(lv); i += 4 {
			x := end + lv[i]
			total, self, name := lv[i+1], lv[i+2], lv[i+3]
			if lv[i] < 0 || total < 0 || self < 0 || self > total {
				return nil, fmt.Errorf("flame: level %d node %d: bad values %v", d, i/4, lv[i:i+4])
			}
			if name < 0 || name >= int64(len(w.Names)) {
				return nil, fmt.Errorf("flame: level %d node %d: name index %d out of range", d, i/4, name)
			}
			n := &Node{Name: w.Names[name], Total: total, Self: self}
			end = x + total
			if d == 0 {
				if i > 0 {
					return nil, fmt.Errorf("flame: level 0 has more than one node")
				}
				t.Root = n
			} else {
				for pi < len(prev) && prev[pi].x+prev[pi].n.Total <= x && !(total == 0 && prev[pi].x+prev[pi].n.Total == x) {
					pi++
				}
				if pi == len(prev) || x < prev[pi].x || end > prev[pi].x+prev[pi].n.Total {
					return nil, fmt.Errorf("flame: level %d node %d: no parent holds [%d,%d)", d, i/4, x, end)
				}
				prev[pi].n.Children = append(prev[pi].n.Children, n)
				prev[pi].kids += total
			}
			cur = append(cur, placed{n: n, x: x})
		}
		for _, p := range prev {
			if p.kids+p.n.Self > p.n.Total {
				return nil, fmt.Errorf("flame: level %d: %q: children and self (%d) exceed total %d", d-1, p.n.Name, p.kids+p.n.Self, p.n.Total)
			}
		}
		prev = cur
	}
	t.countNodes()
	return t, nil
}
