package trace

import "math/bits"

// links holds the Launch and Op links of the events that can have them,
// runtime and driver calls and device events (linkable). Dense, the two
// columns cost 8 bytes an event and held None on every other event: 97%
// of a trace of Python frames, 80% of the generator's default shape. Here
// a bit per event says which events are kept, a count per 64 events gives
// an event's place among them in constant time, and a kept event costs 8
// bytes.
type links struct {
	has    []uint64 // bit i%64 of has[i/64]: event i is kept
	before []uint32 // kept events before has[w]
	launch []int32  // per kept event, in event order
	op     []int32
}

// linkable reports whether events of kind k keep Launch and Op links.
func linkable(k Kind) bool { return k.IsLaunch() || k.OnDevice() }

// newLinks keeps links, all None, for the linkable events among kinds.
func newLinks(kinds []Kind) links {
	words := (len(kinds) + 63) / 64
	l := links{has: make([]uint64, words), before: make([]uint32, words)}
	n := 0
	for i, k := range kinds {
		if i%64 == 0 {
			l.before[i/64] = uint32(n)
		}
		if linkable(k) {
			l.has[i/64] |= 1 << (i % 64)
			n++
		}
	}
	l.launch, l.op = fill(n), fill(n)
	return l
}

// slot returns event i's place among the kept events, or -1 when it has
// none (also before Link).
func (l *links) slot(i int) int {
	w := uint(i) / 64
	if w >= uint(len(l.has)) {
		return -1
	}
	word, bit := l.has[w], uint64(1)<<(uint(i)%64)
	if word&bit == 0 {
		return -1
	}
	return int(l.before[w]) + bits.OnesCount64(word&(bit-1))
}

// valid reports whether l keeps one pair of links for each linkable event
// of kinds, and only for them.
func (l *links) valid(kinds []Kind) bool {
	words := (len(kinds) + 63) / 64
	if len(l.has) != words || len(l.before) != words || len(l.launch) != len(l.op) {
		return false
	}
	if r := len(kinds) % 64; r != 0 && l.has[words-1]>>r != 0 {
		return false // an event past the last
	}
	n := 0
	for i, k := range kinds {
		if i%64 == 0 && l.before[i/64] != uint32(n) {
			return false
		}
		if linkable(k) != (l.has[i/64]&(1<<(i%64)) != 0) {
			return false
		}
		if linkable(k) {
			n++
		}
	}
	return n == len(l.launch)
}

// Launch returns the runtime or driver call that launched device event i
// (the one with its correlation id); None for other events, or when there
// is none.
func (e *Events) Launch(i int) int32 {
	if s := e.links.slot(i); s >= 0 {
		return e.links.launch[s]
	}
	return None
}

// Op returns the operator that issued runtime call or device event i;
// None for other events, or when there is none.
func (e *Events) Op(i int) int32 {
	if s := e.links.slot(i); s >= 0 {
		return e.links.op[s]
	}
	return None
}

func (e *Events) setLaunch(i int, l int32) { e.links.launch[e.links.slot(i)] = l }

func (e *Events) setOp(i int, op int32) { e.links.op[e.links.slot(i)] = op }
