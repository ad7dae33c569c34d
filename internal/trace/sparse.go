package trace

import (
	"iter"
	"math/bits"
)

// Sparse is a column of values that most events lack (ids lifted out of
// the args): a Subset of the events that carry one, and their values in
// event order. Dense, such a column costs its value's size for every
// event; here the value for each event that has one, and 0.19 bytes an
// event up to the last that has one (a list of those events cost 4 bytes
// each: most events of a trace of Python frames carry Python ids).
type Sparse[V any] struct {
	carry  Subset
	values []V
}

// At returns event i's value and whether it has one.
func (s *Sparse[V]) At(i int) (V, bool) {
	if k := s.carry.Index(i); k >= 0 {
		return s.values[k], true
	}
	var zero V
	return zero, false
}

// Get returns event i's value, the zero value when it has none.
func (s *Sparse[V]) Get(i int) V {
	v, _ := s.At(i)
	return v
}

// Len is the number of events with a value.
func (s *Sparse[V]) Len() int { return len(s.values) }

// All yields the events with a value and their values, ascending.
func (s *Sparse[V]) All() iter.Seq2[int32, V] {
	return func(yield func(int32, V) bool) {
		for e, k := range s.carry.members {
			if !yield(e, s.values[k]) {
				return
			}
		}
	}
}

// add gives event i, after every event with a value so far, value v.
func (s *Sparse[V]) add(i int, v V) {
	s.carry.add(i)
	s.values = append(s.values, v)
}

// push is add for a column filled event by event, with room for c
// events in all (roomFor).
func (s *Sparse[V]) push(i int, v V, c int) {
	s.values = roomFor(s.values, 1, i+1, c)
	s.add(i, v)
}

// appendFrom adds src's values, for events numbered from base on.
func (s *Sparse[V]) appendFrom(src *Sparse[V], base int) {
	for e, v := range src.All() {
		s.add(base+int(e), v)
	}
}

// reserveFor makes room for add more values; when the column must grow, it
// is sized for c events as dense as it is over n events with them.
func (s *Sparse[V]) reserveFor(add, n, c int) {
	if need := len(s.values) + add; need > cap(s.values) {
		s.values = reserve(s.values, max(need, int(int64(need)*int64(c)/int64(max(n, 1)))))
		if words := (c + 63) / 64; words > cap(s.carry.has) {
			s.carry.has, s.carry.before = reserve(s.carry.has, words), reserve(s.carry.before, words)
		}
	}
}

func (s *Sparse[V]) clear() { s.carry.clear(); s.values = s.values[:0] }

// valid reports whether the events lie below n, one value each.
func (s *Sparse[V]) valid(n int) bool { return s.carry.valid(n) && len(s.values) == s.carry.Len() }

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
		if c.wide.Len() == 0 { // the usual case: no merge
			for e, n := range c.narrow.All() {
				if !yield(e, PyIDs{int64(n.ID), int64(n.Parent)}) {
					return
				}
			}
			return
		}
		merged(&c.narrow.carry, &c.wide.carry, c.At, yield)
	}
}

// merged yields the events of two disjoint subsets, ascending, with their
// values as at finds them.
func merged[V any](a, b *Subset, at func(int) (V, bool), yield func(int32, V) bool) {
	for i := range max(len(a.has), len(b.has)) {
		var word uint64
		if i < len(a.has) {
			word = a.has[i]
		}
		if i < len(b.has) {
			word |= b.has[i]
		}
		for ; word != 0; word &= word - 1 {
			e := int32(i*64 + bits.TrailingZeros64(word))
			v, _ := at(int(e))
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

// push is add for a column filled event by event (Sparse.push).
func (c *PyColumn) push(i int, v PyIDs, room int) {
	if n, ok := narrowPy(v); ok {
		c.narrow.push(i, n, room)
	} else {
		c.wide.push(i, v, room)
	}
}

func (c *PyColumn) appendFrom(src *PyColumn, base int) {
	c.narrow.appendFrom(&src.narrow, base)
	c.wide.appendFrom(&src.wide, base)
}

func (c *PyColumn) clear() { c.narrow.clear(); c.wide.clear() }

// valid reports whether both parts are valid below n and no event is in both.
func (c *PyColumn) valid(n int) bool { return validSplit(&c.narrow, &c.wide, n) }

// validSplit reports whether a column's narrow and wide parts are valid
// below n and no event is in both.
func validSplit[N, W any](narrow *Sparse[N], wide *Sparse[W], n int) bool {
	if !narrow.valid(n) || !wide.valid(n) {
		return false
	}
	for e := range wide.All() {
		if _, ok := narrow.At(int(e)); ok {
			return false
		}
	}
	return true
}

// IDColumn is a sparse column of ids (External id, correlation, sequence
// number). Profilers count them from small numbers, so an id that fits 32
// bits is kept in 4 bytes, not 8 (1 MB less on 100 MB of op events); one
// that does not is kept whole, apart.
type IDColumn struct {
	narrow Sparse[uint32]
	wide   Sparse[int64]
}

// At returns event i's id and whether it has one.
func (c *IDColumn) At(i int) (int64, bool) {
	if n, ok := c.narrow.At(i); ok {
		return int64(n), true
	}
	return c.wide.At(i)
}

// Get returns event i's id, 0 when it has none.
func (c *IDColumn) Get(i int) int64 {
	v, _ := c.At(i)
	return v
}

// Len is the number of events with an id.
func (c *IDColumn) Len() int { return c.narrow.Len() + c.wide.Len() }

// All yields the events with an id and their ids, ascending.
func (c *IDColumn) All() iter.Seq2[int32, int64] {
	return func(yield func(int32, int64) bool) {
		if c.wide.Len() == 0 { // the usual case: no merge
			for e, n := range c.narrow.All() {
				if !yield(e, int64(n)) {
					return
				}
			}
			return
		}
		merged(&c.narrow.carry, &c.wide.carry, c.At, yield)
	}
}

// add gives event i, after every event with an id so far, id v.
func (c *IDColumn) add(i int, v int64) {
	if n := uint32(v); int64(n) == v {
		c.narrow.add(i, n)
	} else {
		c.wide.add(i, v)
	}
}

// push is add for a column filled event by event (Sparse.push).
func (c *IDColumn) push(i int, v int64, room int) {
	if n := uint32(v); int64(n) == v {
		c.narrow.push(i, n, room)
	} else {
		c.wide.push(i, v, room)
	}
}

func (c *IDColumn) appendFrom(src *IDColumn, base int) {
	c.narrow.appendFrom(&src.narrow, base)
	c.wide.appendFrom(&src.wide, base)
}

// reserveFor makes room for src's ids (Sparse.reserveFor).
func (c *IDColumn) reserveFor(src *IDColumn, n, cp int) {
	c.narrow.reserveFor(src.narrow.Len(), n, cp)
	c.wide.reserveFor(src.wide.Len(), n, cp)
}

func (c *IDColumn) clear() { c.narrow.clear(); c.wide.clear() }

// valid reports whether both parts are valid below n and no event is in both.
func (c *IDColumn) valid(n int) bool { return validSplit(&c.narrow, &c.wide, n) }
