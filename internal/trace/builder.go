package trace

import "unsafe"

// New returns an empty trace for path with the well-known strings interned.
func New(path string) *Trace {
	t := &Trace{
		Path:     path,
		Rank:     -1,
		strs:     newStrTable(),
		argIndex: make(map[uint64]ArgSetID, 1024),
	}
	t.internWellKnown()
	return t
}

func (t *Trace) internWellKnown() {
	for _, s := range wellKnown {
		t.InternString(s)
	}
}

// Recycle empties t for a reader to fill anew, as New would return it,
// but keeping the storage of its columns and tables, the strings' bytes
// included: a parallel reader's segments are small traces, and fresh
// tables for each cost page faults and garbage (on a trace of distinct
// op names, the strings' bytes most of it). Strings Str handed out
// before are overwritten: the caller must have copied those it keeps.
func (t *Trace) Recycle() {
	clear(t.argIndex)
	clear(t.Tracks) // their strings
	*t = Trace{
		Path: t.Path, Rank: -1, strs: t.strs, Events: t.Events,
		ArgSets: ArgSets{off: t.ArgSets.off[:0], args: t.ArgSets.args[:0]}, argVals: t.argVals[:0],
		Tracks: t.Tracks[:0], Flows: t.Flows[:0], Memory: t.Memory[:0], argIndex: t.argIndex,
	}
	t.strs.recycle()
	t.Events.clear()
	t.internWellKnown()
}

// Intern returns the id of the string with bytes b, adding it if new.
func (t *Trace) Intern(b []byte) StrID {
	return t.strs.intern(unsafe.String(unsafe.SliceData(b), len(b))) // copied if new
}

// InternString returns the id of s, adding it if new.
func (t *Trace) InternString(s string) StrID { return t.strs.intern(s) }

// EventRecord is one event as a reader hands it to AddEvent.
type EventRecord struct {
	Kind        Kind
	Name, Cat   StrID
	Track       TrackID
	Start, Dur  int64
	Args        ArgSetID
	ArgVals     uint32 // as InternArgs returns it for Args
	ExternalID  int64
	Correlation int64
	SeqNum      int64 // -1 when absent
	PyID        int64
	PyParent    int64
}

// AddEvent appends an event and returns its index.
func (t *Trace) AddEvent(r *EventRecord) int {
	e := &t.Events
	e.Kind = append(e.Kind, r.Kind)
	e.Name = append(e.Name, r.Name)
	e.Track = append(e.Track, r.Track)
	e.Start = append(e.Start, r.Start)
	e.Dur = append(e.Dur, r.Dur)
	e.Args = append(e.Args, r.Args)
	i, c := len(e.Kind)-1, cap(e.Kind)
	e.cats.add(i, r.Kind, r.Cat)
	if int(r.ArgVals) < len(t.argVals) && t.ArgSets.lifted(r.Args) > 0 { // InternArgs stored values for it
		e.ArgVals.push(i, r.ArgVals, c)
	}
	if r.ExternalID != 0 {
		e.ExternalID.push(i, r.ExternalID, c)
	}
	if r.Correlation != 0 {
		e.Correlation.push(i, r.Correlation, c)
	}
	if r.SeqNum != -1 {
		e.SeqNum.push(i, r.SeqNum, c)
	}
	if r.PyID != 0 || r.PyParent != 0 {
		e.Py.push(i, PyIDs{r.PyID, r.PyParent}, c)
	}
	return i
}

// AddFlow appends a flow end to t.Flows, which a reader adding events
// one by one grows as the sparse columns grow (roomFor).
func (t *Trace) AddFlow(f Flow) {
	t.Flows = append(roomFor(t.Flows, 1, t.Events.Len()+1, cap(t.Events.Kind)), f)
}

// AddMemory appends a memory record to t.Memory, grown as AddFlow grows
// the flows.
func (t *Trace) AddMemory(m MemoryRecord) {
	t.Memory = append(roomFor(t.Memory, 1, t.Events.Len(), cap(t.Events.Kind)), m)
}

// TrackKey identifies a track by the pid and tid the trace gave it. Label
// fields hold string ids when the trace used strings.
type TrackKey struct {
	Pid, Tid           int64
	PidLabel, TidLabel StrID
}

// TrackFor returns the track for key, creating it if new.
func (t *Trace) TrackFor(key TrackKey, index map[TrackKey]TrackID) TrackID {
	if id, ok := index[key]; ok {
		return id
	}
	id := TrackID(len(t.Tracks))
	t.Tracks = append(t.Tracks, Track{
		Pid: key.Pid, Tid: key.Tid,
		PidLabel: t.Str(key.PidLabel), TidLabel: t.Str(key.TidLabel),
		Device: -1, Stream: -1,
	})
	index[key] = id
	return id
}

// Reserve sizes the event columns for n events, and the flow and memory
// tables for the numbers given, so reading a large file does not copy them
// again and again as they grow. (AppendTables sizes the sparse columns
// after the event columns.)
func (t *Trace) Reserve(n, flows, memory int) {
	if flows > cap(t.Flows) {
		t.Flows = reserve(t.Flows, flows)
	}
	if memory > cap(t.Memory) {
		t.Memory = reserve(t.Memory, memory)
	}
	e := &t.Events
	if n <= cap(e.Kind) {
		return
	}
	e.Kind = reserve(e.Kind, n)
	e.Name = reserve(e.Name, n)
	e.Track = reserve(e.Track, n)
	e.Start = reserve(e.Start, n)
	e.Dur = reserve(e.Dur, n)
	e.Args = reserve(e.Args, n)
}

// NumArgVals is the number of per-launch argument values stored.
func (t *Trace) NumArgVals() int { return len(t.argVals) }

// ReserveArgVals makes room for n per-launch argument values in all.
func (t *Trace) ReserveArgVals(n int) {
	if n > cap(t.argVals) {
		t.argVals = reserve(t.argVals, n)
	}
}

// ReserveStrings sizes the string table for n strings, so that interning
// up to n strings never rebuilds its index nor grows its references.
func (t *Trace) ReserveStrings(n int) { t.strs.reserve(n) }

// roomFor returns s with room for k more values, s being a column of
// values of some events filled event by event, with events read so far
// (the one the values are for included) and room for c events in all:
// one of 64 values or more that must grow is sized for c events as
// dense as it is, a quarter larger at least. Grown by append's steps, a
// parallel reader's segment columns allocated five times their size.
func roomFor[T any](s []T, k, events, c int) []T {
	n := len(s)
	if n+k <= cap(s) || n < 64 {
		return s
	}
	return reserve(s, max(n+n/4, n+k, int(int64(n+k)*int64(max(c, events))/int64(max(events, 1)))))
}

func reserve[T any](s []T, n int) []T {
	out := make([]T, len(s), n)
	copy(out, s)
	return out
}
