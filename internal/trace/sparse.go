package trace

import (
	"iter"
	"slices"
)

// Sparse is a column of values that most events lack (ids lifted out of
// the args): the events that carry one, ascending, and their values.
// Dense, such a column costs its value's size for every event; here 4
// bytes more for each event that has one. At is a binary search; a
// reader of every value walks the pairs.
type Sparse[V any] struct {
	Events []int32
	Values []V
}

// PyIDs are a python_function event's "Python id" and "Python parent id"
// (0 when absent).
type PyIDs struct{ ID, Parent int64 }

// PyColumn is the sparse column of python_function events' ids. PyTorch
// counts them from 0, so they fit 32 bits: such a pair is kept in 8 bytes,
// not 16 (with a stack, most events of a trace can be Python frames); a
// pair that does not fit is kept whole, apart.
type PyColumn struct {
	narrow Sparse[pyNarrow]
	wide   Sparse[PyIDs]
}

type pyNarrow struct{ ID, Parent uint32 }

func narrowPy(v PyIDs) (pyNarrow, bool) {
	n := pyNarrow{uint32(v.ID), uint32(v.Parent)}
	return n, int64(n.ID) == v.ID && int64(n.Parent) == v.Parent
}

// At returns event i's ids and whether it has them.
func (c *PyColumn) At(i int) (PyIDs, bool) {
	if n, ok := c.narrow.At(i); ok {
		return PyIDs{int64(n.ID), int64(n.Parent)}, true
	}
	return c.wide.At(i)
}

// Len is the number of events with ids.
func (c *PyColumn) Len() int { return c.narrow.Len() + c.wide.Len() }

// All yields the events with ids and their ids, ascending.
func (c *PyColumn) All() iter.Seq2[int32, PyIDs] {
	return func(yield func(int32, PyIDs) bool) {
		n, w := &c.narrow, &c.wide
		j, k := 0, 0
		for j < n.Len() || k < w.Len() {
			var e int32
			var v PyIDs
			if k == w.Len() || j < n.Len() && n.Events[j] < w.Events[k] {
				e, v = n.Events[j], PyIDs{int64(n.Values[j].ID), int64(n.Values[j].Parent)}
				j++
			} else {
				e, v = w.Events[k], w.Values[k]
				k++
			}
			if !yield(e, v) {
				return
			}
		}
	}
}

// add gives event i, after every event with ids so far, ids v.
func (c *PyColumn) add(i int, v PyIDs) {
	if n, ok := narrowPy(v); ok {
		c.narrow.add(i, n)
	} else {
		c.wide.add(i, v)
	}
}

func (c *PyColumn) appendFrom(src *PyColumn, base int) {
	c.narrow.appendFrom(&src.narrow, base)
	c.wide.appendFrom(&src.wide, base)
}

func (c *PyColumn) clear() { c.narrow.clear(); c.wide.clear() }

// valid reports whether both parts are valid below n and no event is in both.
func (c *PyColumn) valid(n int) bool {
	if !c.narrow.valid(n) || !c.wide.valid(n) {
		return false
	}
	for _, e := range c.wide.Events {
		if _, ok := c.narrow.At(int(e)); ok {
			return false
		}
	}
	return true
}

// At returns event i's value and whether it has one.
func (s *Sparse[V]) At(i int) (V, bool) {
	j, ok := slices.BinarySearch(s.Events, int32(i))
	if !ok {
		var zero V
		return zero, false
	}
	return s.Values[j], true
}

// Get returns event i's value, the zero value when it has none.
func (s *Sparse[V]) Get(i int) V {
	v, _ := s.At(i)
	return v
}

// Len is the number of events with a value.
func (s *Sparse[V]) Len() int { return len(s.Events) }

// add gives event i, after every event with a value so far, value v.
func (s *Sparse[V]) add(i int, v V) {
	s.Events = append(s.Events, int32(i))
	s.Values = append(s.Values, v)
}

// appendFrom adds src's values, for events numbered from base on.
func (s *Sparse[V]) appendFrom(src *Sparse[V], base int) {
	for j, e := range src.Events {
		s.add(base+int(e), src.Values[j])
	}
}

// reserveFor makes room for add more values; when the column must grow, it
// is sized for c events as dense as it is over n events with them.
func (s *Sparse[V]) reserveFor(add, n, c int) {
	if need := len(s.Events) + add; need > cap(s.Events) {
		size := max(need, int(int64(need)*int64(c)/int64(max(n, 1))))
		s.Events, s.Values = reserve(s.Events, size), reserve(s.Values, size)
	}
}

func (s *Sparse[V]) clear() { s.Events, s.Values = s.Events[:0], s.Values[:0] }

// valid reports whether the events ascend below n, one value each.
func (s *Sparse[V]) valid(n int) bool {
	if len(s.Events) != len(s.Values) {
		return false
	}
	for j, e := range s.Events {
		if e < 0 || int(e) >= n || j > 0 && e <= s.Events[j-1] {
			return false
		}
	}
	return true
}
