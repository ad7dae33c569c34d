package trace

import (
	"math"
	"slices"
	"testing"
)

// Python ids that do not fit 32 bits are kept whole, apart from the narrow
// ones, and read back in event order with the narrow ones; a segment's
// column appended at a base keeps both.
func TestPyColumnKeepsWideIDs(t *testing.T) {
	want := map[int]PyIDs{
		0: {1, 0},
		2: {math.MaxUint32, 7},
		3: {math.MaxUint32 + 1, 3},
		5: {4, -1},
		8: {5, 4},
	}
	var c PyColumn
	for _, i := range []int{0, 2, 3, 5, 8} {
		c.add(i, want[i])
	}
	var all PyColumn
	all.add(0, PyIDs{9, 9})
	all.appendFrom(&c, 10)
	if !all.valid(20) || all.Len() != 6 || all.wide.Len() != 2 {
		t.Fatalf("valid %v, len %d, wide %d; want true, 6, 2", all.valid(20), all.Len(), all.wide.Len())
	}
	prev := int32(-1)
	for e, v := range all.All() {
		if e <= prev {
			t.Fatalf("event %d after %d", e, prev)
		}
		prev = e
		if e == 0 {
			continue
		}
		if w := want[int(e)-10]; v != w {
			t.Errorf("All: event %d = %v, want %v", e, v, w)
		}
		if got, ok := all.At(int(e)); !ok || got != want[int(e)-10] {
			t.Errorf("At(%d) = %v, %v; want %v", e, got, ok, want[int(e)-10])
		}
	}
	if _, ok := all.At(11); ok {
		t.Error("At(11): an event without ids has some")
	}
}

// Ids that do not fit 32 bits (negative ones too) are kept whole, apart
// from the narrow ones, and read back in event order with them.
func TestIDColumnKeepsWideIDs(t *testing.T) {
	want := map[int]int64{0: 1, 2: math.MaxUint32, 3: math.MaxUint32 + 1, 5: -4, 8: 5}
	var c IDColumn
	for _, i := range []int{0, 2, 3, 5, 8} {
		c.add(i, want[i])
	}
	var all IDColumn
	all.add(0, 9)
	all.appendFrom(&c, 10)
	if !all.valid(20) || all.Len() != 6 || all.wide.Len() != 2 {
		t.Fatalf("valid %v, len %d, wide %d; want true, 6, 2", all.valid(20), all.Len(), all.wide.Len())
	}
	var got []int32
	for e, v := range all.All() {
		got = append(got, e)
		if e > 0 && v != want[int(e)-10] {
			t.Errorf("All: event %d = %d, want %d", e, v, want[int(e)-10])
		}
		if id, ok := all.At(int(e)); !ok || id != v {
			t.Errorf("At(%d) = %d, %v; want %d", e, id, ok, v)
		}
	}
	if !slices.Equal(got, []int32{0, 10, 12, 13, 15, 18}) {
		t.Errorf("All yields events %v", got)
	}
	if all.Get(11) != 0 {
		t.Error("Get(11): an event without an id has one")
	}
}

// Only events whose argument set lifts per-launch values keep an offset,
// also when a record's ArgVals is left 0 after other events stored some.
func TestArgValsOnlyWhereLifted(t *testing.T) {
	tr := New("x")
	tk := tr.TrackFor(TrackKey{Pid: 1, Tid: 1}, map[TrackKey]TrackID{})
	args, vals := tr.InternArgs([]Arg{{Key: KeyBytes, Val: IntValue(7)}})
	tr.AddEvent(&EventRecord{Kind: KindMemcpy, Track: tk, Dur: 1, Args: args, ArgVals: vals, SeqNum: -1})
	tr.AddEvent(&EventRecord{Kind: KindCPUOp, Track: tk, Dur: 1, SeqNum: -1})
	args, vals = tr.InternArgs([]Arg{{Key: KeyRegisters, Val: IntValue(32)}, {Key: KeyBytes, Val: IntValue(9)}})
	tr.AddEvent(&EventRecord{Kind: KindMemcpy, Track: tk, Dur: 1, Args: args, ArgVals: vals, SeqNum: -1})
	var got []int32
	for e := range tr.Events.ArgVals.All() {
		got = append(got, e)
	}
	if !slices.Equal(got, []int32{0, 2}) {
		t.Errorf("events with offsets %v, want [0 2]", got)
	}
	for i, want := range map[int]int64{0: 7, 2: 9} {
		if n, ok := tr.ArgInt(i, KeyBytes); !ok || n != want {
			t.Errorf("event %d: bytes %d, %v; want %d", i, n, ok, want)
		}
	}
}

// A merged segment's ids that overflow a sparse column grow it for the
// event columns' capacity at the segment's density, not one step at a time.
func TestAppendTablesReservesSparse(t *testing.T) {
	seg := New("seg")
	tk := seg.TrackFor(TrackKey{Pid: 1, Tid: 1}, map[TrackKey]TrackID{})
	for i := range 10 {
		r := EventRecord{Kind: KindPythonFunction, Track: tk, Dur: 1, SeqNum: -1}
		if i%2 == 0 {
			r.PyID = int64(i + 1)
		}
		seg.AddEvent(&r)
	}
	all := New("all")
	all.Reserve(1000, 0, 0)
	all.AppendTables(seg, map[TrackKey]TrackID{}).CopyEvents()
	if got := cap(all.Events.Py.narrow.values); got < 500 {
		t.Errorf("Python id column room %d after 5 of 10 events, want 500 (half of 1000)", got)
	}
	if !all.Events.Py.valid(all.Events.Len()) || all.Events.Py.Len() != 5 {
		t.Errorf("Python ids: valid %v, %d; want true, 5", all.Events.Py.valid(all.Events.Len()), all.Events.Py.Len())
	}
}

// A sparse column reads back what was added, across words of 64 events,
// and is invalid when its values, counts or events are off.
func TestSparseKeepsEventsAndValues(t *testing.T) {
	events := []int32{0, 3, 63, 64, 65, 200, 511}
	var s Sparse[int64]
	for _, e := range events {
		s.add(int(e), int64(e)*10)
	}
	for i := range 600 {
		v, ok := s.At(i)
		if want := slices.Contains(events, int32(i)); ok != want || ok && v != int64(i)*10 {
			t.Fatalf("At(%d) = %d, %v", i, v, ok)
		}
	}
	var got []int32
	for e, v := range s.All() {
		if v != int64(e)*10 {
			t.Errorf("All: event %d value %d", e, v)
		}
		got = append(got, e)
	}
	if !slices.Equal(got, events) || !s.valid(512) || s.valid(511) {
		t.Errorf("All %v; valid below 512 %v, below 511 %v; want %v, true, false", got, s.valid(512), s.valid(511), events)
	}
	for name, corrupt := range map[string]func(s *Sparse[int64]){
		"a value short": func(s *Sparse[int64]) { s.values = s.values[1:] },
		"miscounted":    func(s *Sparse[int64]) { s.carry.before[1]++ },
		"count off":     func(s *Sparse[int64]) { s.carry.n++ },
	} {
		c := Sparse[int64]{carry: Subset{has: slices.Clone(s.carry.has), before: slices.Clone(s.carry.before), n: s.carry.n}, values: slices.Clone(s.values)}
		corrupt(&c)
		if c.valid(512) {
			t.Errorf("%s: reported valid", name)
		}
	}
}
