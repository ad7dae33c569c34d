package trace

import "slices"

// Sparse is an id column that few events carry (Python ids, sequence
// numbers): the events that carry a value, ascending, and their values.
// Dense, such a column costs 8 bytes for every event; here 12 for each
// event that has a value. At is a binary search; a reader of every value
// walks the pairs.
type Sparse struct {
	Events []int32
	Values []int64
}

// At returns event i's value and whether it has one.
func (s *Sparse) At(i int) (int64, bool) {
	j, ok := slices.BinarySearch(s.Events, int32(i))
	if !ok {
		return 0, false
	}
	return s.Values[j], true
}

// Len is the number of events with a value.
func (s *Sparse) Len() int { return len(s.Events) }

// add gives event i, after every event with a value so far, value v.
func (s *Sparse) add(i int, v int64) {
	s.Events = append(s.Events, int32(i))
	s.Values = append(s.Values, v)
}

// appendFrom adds src's values, for events numbered from base on.
func (s *Sparse) appendFrom(src *Sparse, base int) {
	for j, e := range src.Events {
		s.add(base+int(e), src.Values[j])
	}
}

func (s *Sparse) clear() { s.Events, s.Values = s.Events[:0], s.Values[:0] }

// valid reports whether the events ascend below n, one value each.
func (s *Sparse) valid(n int) bool {
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
