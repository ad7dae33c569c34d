package trace

import "slices"

// Merge is what AppendTables leaves to CopyEvents: src's events, to be
// copied into the room made for them at Base.
//
// Design note: the parallel reader (internal/kineto/parallel.go) merges
// its segments in file order, one after the other. Mapping a segment's
// strings, argument sets and tracks must be done in that order, but it is
// the small part; copying and mapping the event columns, the large part,
// runs on other goroutines while the next segments are mapped.
type Merge struct {
	src    *Trace
	dst    Events  // the room for src's events in t's columns
	Strs   []StrID // src's string ids mapped to t's
	args   []ArgSetID
	tracks []TrackID
	Base   int    // where src's events go in t's columns
	vals   uint32 // where src's per-launch values went in t's
}

// AppendTables and CopyEvents add src, read from a later part of the same
// file, to t, as if t's reader had read it: src's strings, argument sets
// and tracks are mapped to t's ids (tracks through index, as TrackFor
// keeps it), and its events, flows, memory records and problems follow
// t's. Readers call them before Link; src's links are not copied.
//
// AppendTables does the part that depends on what t already holds: it
// maps src's strings (Merge.Strs, for reader state keyed by them),
// argument sets and tracks, appends its flows, memory records, problems
// and per-launch values, and makes room at the end of t's event columns
// for src's events, which the returned Merge's CopyEvents copies there;
// until then they hold nothing valid.
//
// CopyEvents of several merges may run concurrently, with each other and
// with later AppendTables calls, as long as no column grows meanwhile:
// before an AppendTables for which HasRoom is false (and before anything
// else adds events or reserves), every CopyEvents must have returned.
func (t *Trace) AppendTables(src *Trace, index map[TrackKey]TrackID) *Merge {
	m := &Merge{src: src, Strs: make([]StrID, src.NumStrings()), Base: t.Events.Len()}
	strs := m.Strs
	for i := range strs {
		strs[i] = t.InternString(src.Str(StrID(i)))
	}

	m.args = make([]ArgSetID, src.ArgSets.Len()+1)
	var buf []Arg
	for id := 1; id < len(m.args); id++ {
		buf = buf[:0]
		for _, a := range src.ArgSets.get(ArgSetID(id)) {
			a.Key = strs[a.Key]
			if s, ok := a.Val.StrID(); ok { // lifted values are numbers: never remapped
				a.Val.Bits = uint64(strs[s])
			}
			buf = append(buf, a)
		}
		m.args[id] = t.internSet(buf)
	}

	m.tracks = make([]TrackID, len(src.Tracks))
	for i := range src.Tracks {
		st := &src.Tracks[i]
		key := TrackKey{Pid: st.Pid, Tid: st.Tid, PidLabel: t.InternString(st.PidLabel), TidLabel: t.InternString(st.TidLabel)}
		m.tracks[i] = t.TrackFor(key, index)
		if st.Device >= 0 { // the last device event's device and stream win, as when read in one pass
			tr := &t.Tracks[m.tracks[i]]
			tr.Device, tr.Stream = st.Device, st.Stream
		}
	}

	m.vals = uint32(len(t.argVals))
	m.dst = t.Events.extend(src.Events.Len())
	t.argVals = append(roomFor(t.argVals, len(src.argVals), t.Events.Len(), cap(t.Events.Kind)), src.argVals...)
	t.Events.reserveSparse(&src.Events)
	t.Events.cats.appendFrom(&src.Events, strs, m.Base)
	for e, v := range src.Events.ArgVals.All() {
		t.Events.ArgVals.add(m.Base+int(e), v+m.vals)
	}
	t.Events.ExternalID.appendFrom(&src.Events.ExternalID, m.Base) // sparse: in order, here
	t.Events.Correlation.appendFrom(&src.Events.Correlation, m.Base)
	t.Events.SeqNum.appendFrom(&src.Events.SeqNum, m.Base)
	t.Events.Py.appendFrom(&src.Events.Py, m.Base)

	t.UnkeptFlows += src.UnkeptFlows
	for _, f := range src.Flows {
		f.Cat, f.Track = strs[f.Cat], m.tracks[f.Track]
		t.Flows = append(t.Flows, f)
	}
	for _, mr := range src.Memory {
		mr.Event += int32(m.Base)
		t.Memory = append(t.Memory, mr)
	}
	t.Problems.AddAll(&src.Problems)
	t.Meta.Legacy = t.Meta.Legacy || src.Meta.Legacy
	return m
}

// CopyEvents copies src's events into the room AppendTables made.
func (m *Merge) CopyEvents() {
	e, se := &m.dst, &m.src.Events
	copy(e.Kind, se.Kind)
	copy(e.Start, se.Start)
	copy(e.Dur, se.Dur)
	for i := range se.Kind {
		e.Name[i] = m.Strs[se.Name[i]]
		e.Track[i] = m.tracks[se.Track[i]]
		e.Args[i] = m.args[se.Args[i]]
	}
}

// HasRoom reports whether n more events fit the event columns without
// growing them (see AppendTables).
func (e *Events) HasRoom(n int) bool {
	return e.Len()+n <= min(cap(e.Kind), cap(e.Name), cap(e.Track), cap(e.Start), cap(e.Dur), cap(e.Args))
}

// extend lengthens the columns by n events, to be set by CopyEvents, and
// returns their room: columns of n that share the storage (the copies
// write there while the next extend changes the columns themselves).
func (e *Events) extend(n int) Events {
	var room Events
	e.Kind, room.Kind = grow(e.Kind, n)
	e.Name, room.Name = grow(e.Name, n)
	e.Track, room.Track = grow(e.Track, n)
	e.Start, room.Start = grow(e.Start, n)
	e.Dur, room.Dur = grow(e.Dur, n)
	e.Args, room.Args = grow(e.Args, n)
	return room
}

// reserveSparse makes room in the sparse columns for src's values, once
// the event columns are extended by src's events. A column that must grow
// is sized for as many events as the event columns hold, as dense as it is
// with src's values: the event columns are reserved ahead for the whole
// input, and growing by append's steps instead allocated five times the
// final column of Python ids (57 MB on 209 MB of tiny events).
func (e *Events) reserveSparse(src *Events) {
	n, c := e.Len(), cap(e.Kind)
	e.ArgVals.reserveFor(src.ArgVals.Len(), n, c)
	e.ExternalID.reserveFor(&src.ExternalID, n, c)
	e.Correlation.reserveFor(&src.Correlation, n, c)
	e.SeqNum.reserveFor(&src.SeqNum, n, c)
	e.Py.narrow.reserveFor(src.Py.narrow.Len(), n, c)
	e.Py.wide.reserveFor(src.Py.wide.Len(), n, c)
}

// grow lengthens s by n values and returns it and the n new values.
func grow[T any](s []T, n int) (all, room []T) {
	l := len(s)
	s = slices.Grow(s, n)[:l+n]
	return s, s[l : l+n : l+n]
}
