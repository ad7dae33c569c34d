package trace

// Append adds src, read from a later part of the same file, to t, as if t's
// reader had read it: src's strings, argument sets and tracks are mapped to
// t's ids (tracks through index, as TrackFor keeps it), and its events,
// flows, memory records and problems follow t's. Readers call it before
// Link; src's links are not copied. It returns the mapping of src's string
// ids, for reader state keyed by them.
func (t *Trace) Append(src *Trace, index map[TrackKey]TrackID) []StrID {
	strs := make([]StrID, len(src.Strings))
	for i, s := range src.Strings {
		strs[i] = t.InternString(s)
	}

	args := make([]ArgSetID, src.ArgSets.Len()+1)
	var buf []Arg
	for id := 1; id < len(args); id++ {
		buf = buf[:0]
		for _, a := range src.ArgSets.get(ArgSetID(id)) {
			a.Key = strs[a.Key]
			if s, ok := a.Val.StrID(); ok { // lifted values are numbers: never remapped
				a.Val.Bits = uint64(strs[s])
			}
			buf = append(buf, a)
		}
		args[id] = t.internSet(buf)
	}

	tracks := make([]TrackID, len(src.Tracks))
	for i := range src.Tracks {
		st := &src.Tracks[i]
		key := TrackKey{Pid: st.Pid, Tid: st.Tid, PidLabel: t.InternString(st.PidLabel), TidLabel: t.InternString(st.TidLabel)}
		tracks[i] = t.TrackFor(key, index)
		if st.Device >= 0 { // the last device event's device and stream win, as when read in one pass
			tr := &t.Tracks[tracks[i]]
			tr.Device, tr.Stream = st.Device, st.Stream
		}
	}

	base := int32(t.Events.Len())
	e, se := &t.Events, &src.Events
	e.Kind = append(e.Kind, se.Kind...)
	e.Start = append(e.Start, se.Start...)
	e.Dur = append(e.Dur, se.Dur...)
	e.ExternalID = append(e.ExternalID, se.ExternalID...)
	e.Correlation = append(e.Correlation, se.Correlation...)
	e.SeqNum = append(e.SeqNum, se.SeqNum...)
	e.PyID = append(e.PyID, se.PyID...)
	e.PyParent = append(e.PyParent, se.PyParent...)
	vals := uint32(len(t.argVals))
	t.argVals = append(t.argVals, src.argVals...)
	for i := range se.Kind {
		e.Name = append(e.Name, strs[se.Name[i]])
		e.Cat = append(e.Cat, strs[se.Cat[i]])
		e.Track = append(e.Track, tracks[se.Track[i]])
		e.Args = append(e.Args, args[se.Args[i]])
		e.ArgVals = append(e.ArgVals, se.ArgVals[i]+vals)
	}

	for _, f := range src.Flows {
		f.Cat, f.Track = strs[f.Cat], tracks[f.Track]
		t.Flows = append(t.Flows, f)
	}
	for _, m := range src.Memory {
		m.Event += base
		t.Memory = append(t.Memory, m)
	}
	t.Problems.AddAll(&src.Problems)
	t.Meta.Legacy = t.Meta.Legacy || src.Meta.Legacy
	return strs
}
