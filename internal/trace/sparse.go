package trace

import "slices"

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

func (s *Sparse[V]) reserve(n int) {
	if n > cap(s.Events) {
		s.Events, s.Values = reserve(s.Events, n), reserve(s.Values, n)
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
