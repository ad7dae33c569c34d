package trace

import "math/bits"

// Subset numbers some of the events in event order. A bit an event says
// which events are in it, and a count per 64 events gives an event's
// number in constant time: 0.19 bytes an event, up to its last member,
// where a list of members or a column of numbers costs 4 bytes a member
// or an event.
type Subset struct {
	has    []uint64 // bit i%64 of has[i/64]: event i is in the subset
	before []uint32 // members before has[w]
	n      int
}

// NewSubset numbers the events whose kind in accepts.
func NewSubset(kinds []Kind, in func(Kind) bool) Subset {
	var want [numKinds + 1]bool // any invalid kind at numKinds
	for k := range want {
		want[k] = in(Kind(k))
	}
	var s Subset
	s.has = make([]uint64, 0, (len(kinds)+63)/64)
	s.before = make([]uint32, 0, cap(s.has))
	for i, k := range kinds {
		if want[min(k, numKinds)] {
			s.add(i)
		}
	}
	return s
}

// Len is the number of members.
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

// add makes event i, after every member so far, a member.
func (s *Subset) add(i int) {
	w := i / 64
	for len(s.has) <= w {
		s.has = append(s.has, 0)
		s.before = append(s.before, uint32(s.n))
	}
	s.has[w] |= 1 << (i % 64)
	s.n++
}

// members yields the members, ascending, with their numbers.
func (s *Subset) members(yield func(e int32, k int) bool) {
	k := 0
	for w, word := range s.has {
		for ; word != 0; word &= word - 1 {
			if !yield(int32(w*64+bits.TrailingZeros64(word)), k) {
				return
			}
			k++
		}
	}
}

func (s *Subset) clear() { s.has, s.before, s.n = s.has[:0], s.before[:0], 0 }

// valid reports whether the members lie below n and are counted right.
func (s *Subset) valid(n int) bool {
	words := (n + 63) / 64
	if len(s.has) > words || len(s.before) != len(s.has) {
		return false
	}
	if r := n % 64; r != 0 && len(s.has) == words && s.has[words-1]>>r != 0 {
		return false // a member past the last event
	}
	k := 0
	for w, word := range s.has {
		if s.before[w] != uint32(k) {
			return false
		}
		k += bits.OnesCount64(word)
	}
	return k == s.n
}

// of reports whether the members are exactly the events of kinds that in
// accepts.
func (s *Subset) of(kinds []Kind, in func(Kind) bool) bool {
	if !s.valid(len(kinds)) {
		return false
	}
	for i, k := range kinds {
		if in(k) != (s.Index(i) >= 0) {
			return false
		}
	}
	return true
}
