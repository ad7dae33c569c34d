package whatif

// eventIndex maps event indices to values >= 0. Go maps looked up once
// per launch, task and host call were a fifth of Build's time on small
// real traces; over a range of indices no wider than a few times the
// keys (always, for a trace of up to 64k events) it is a slice instead,
// and otherwise a map, so memory stays bounded by the keys on a trace of
// millions of events.
type eventIndex struct {
	lo    int32
	dense []int32 // value+1 at e-lo; 0: absent
	m     map[int32]int32
}

// newEventIndex makes an index for n keys in [lo, hi].
func newEventIndex(lo, hi int32, n int) eventIndex {
	if span := int64(hi) - int64(lo) + 1; n > 0 && span <= max(8*int64(n), 1<<16) {
		return eventIndex{lo: lo, dense: make([]int32, span)}
	}
	return eventIndex{m: make(map[int32]int32, n)}
}

func (x *eventIndex) set(e, v int32) {
	if x.m != nil {
		x.m[e] = v
		return
	}
	x.dense[e-x.lo] = v + 1 // a key outside [lo, hi] is the caller's bug: it panics
}

func (x *eventIndex) get(e int32) (int32, bool) {
	if x.m != nil {
		v, ok := x.m[e]
		return v, ok
	}
	i := int64(e) - int64(x.lo)
	if i < 0 || i >= int64(len(x.dense)) {
		return 0, false
	}
	if v := x.dense[i]; v != 0 {
		return v - 1, true
	}
	return 0, false
}

// has reports whether e is a key.
func (x *eventIndex) has(e int32) bool {
	_, ok := x.get(e)
	return ok
}

// value is e's value, 0 when e is no key (as a map's lookup).
func (x *eventIndex) value(e int32) int32 {
	v, _ := x.get(e)
	return v
}
