package trace

import "math/bits"

// Subset numbers the events of some kinds in event order. A bit an event
// says which events are in it, and a count per 64 events gives an event's
// number in constant time: 0.19 bytes an event, where a column of numbers
// costs 4 (most events of a trace of Python frames are in no subset that
// analyses number).
type Subset struct {
	has    []uint64 // bit i%64 of has[i/64]: event i is in the subset
	before []uint32 // events in the subset before has[w]
	n      int
}

// NewSubset numbers the events whose kind in accepts.
func NewSubset(kinds []Kind, in func(Kind) bool) Subset {
	var want [numKinds + 1]bool // any invalid kind at numKinds
	for k := range want {
		want[k] = in(Kind(k))
	}
	words := (len(kinds) + 63) / 64
	s := Subset{has: make([]uint64, words), before: make([]uint32, words)}
	for i, k := range kinds {
		if i%64 == 0 {
			s.before[i/64] = uint32(s.n)
		}
		if want[min(k, numKinds)] {
			s.has[i/64] |= 1 << (i % 64)
			s.n++
		}
	}
	return s
}

// Len is the number of events in the subset.
func (s *Subset) Len() int { return s.n }

// Index returns event i's number in the subset, or -1 when it is not in it
// (also for an event past the last).
func (s *Subset) Index(i int) int {
	w := uint(i) / 64
	if w >= uint(len(s.has)) {
		return -1
	}
	word, bit := s.has[w], uint64(1)<<(uint(i)%64)
	if word&bit == 0 {
		return -1
	}
	return int(s.before[w]) + bits.OnesCount64(word&(bit-1))
}

// valid reports whether s holds exactly the events of kinds that in
// accepts, counted right.
func (s *Subset) valid(kinds []Kind, in func(Kind) bool) bool {
	words := (len(kinds) + 63) / 64
	if len(s.has) != words || len(s.before) != words {
		return false
	}
	if r := len(kinds) % 64; r != 0 && s.has[words-1]>>r != 0 {
		return false // an event past the last
	}
	n := 0
	for i, k := range kinds {
		if i%64 == 0 && s.before[i/64] != uint32(n) {
			return false
		}
		if in(k) != (s.has[i/64]&(1<<(i%64)) != 0) {
			return false
		}
		if in(k) {
			n++
		}
	}
	return n == s.n
}
