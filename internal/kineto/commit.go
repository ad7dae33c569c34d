package kineto

import (
	"maps"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// phUnreadable marks a "ph" that is present but empty or not a string:
// such an event is skipped (an absent "ph" is read as a complete event).
const phUnreadable = 1

// commit turns the parsed fields into an event, flow, metadata entry or
// open "B" slice.
func (r *reader) commit() {
	f := &r.ev
	t := r.t
	r.events++
	key := trace.TrackKey{Pid: f.pid, Tid: f.tid, PidLabel: f.pidLabel, TidLabel: f.tidLabel}

	switch f.ph {
	case 'M':
		r.metaEvent(key)
		return
	case 's', 'f', 't':
		if !f.hasTs {
			r.eventProblem("flow event without ts", "skipped")
			return
		}
		if f.ts < -maxAbsTs || f.ts > maxAbsTs {
			r.eventProblem("implausible timestamp (beyond the year 2096)", "flow event skipped")
			return
		}
		track := r.track(key)
		if r.analysesOnly {
			t.UnkeptFlows++
			return
		}
		t.AddFlow(trace.Flow{ID: f.id, Cat: f.cat, Phase: f.ph, Track: track, Ts: f.ts})
		return
	case 'X', 'B', 'E', 'i', 'I', 'C':
	case '0': // empty object, already reported
		return
	case phUnreadable:
		r.eventProblem("unreadable event phase", "ph empty or not a string; skipped")
		return
	case 0:
		if !f.hasTs || !f.hasName {
			r.eventProblem("event without ph", "skipped")
			return
		}
		r.eventProblem("event without ph", "read as a complete event")
		f.ph = 'X'
	default:
		r.eventProblem("unsupported event phase", "ph "+string(f.ph)+" skipped")
		return
	}
	if !f.hasTs {
		r.eventProblem("event without ts", "skipped")
		return
	}
	if f.ts < -maxAbsTs || f.ts > maxAbsTs {
		r.eventProblem("implausible timestamp (beyond the year 2096)", "skipped")
		return
	}

	rec := trace.EventRecord{
		Name: f.name, Cat: f.cat, Start: f.ts, Dur: f.dur,
		ExternalID: f.ext, Correlation: f.corr, SeqNum: -1,
	}
	if !r.analysesOnly { // only exports write these back
		rec.SeqNum, rec.PyID, rec.PyParent = f.seq, f.pyID, f.pyParent
	}
	rec.Kind = r.kind(f)
	if rec.Kind == trace.KindMemory {
		r.liftMemory(f)
	} else {
		r.restoreMemoryKeys(f)
	}
	switch f.ph {
	case 'X':
		if !f.hasDur {
			r.eventProblem("complete event without dur", "read with zero duration")
		}
	case 'i', 'I', 'C':
		rec.Dur = 0
	}
	if rec.Dur < 0 || rec.Dur > maxDur {
		r.eventProblem("implausible duration (negative or over a day)", "read with zero duration")
		rec.Dur = 0
	}

	rec.Track = r.track(key)
	if rec.Kind.OnDevice() {
		dev, stream := int(f.pid), f.tid
		if f.hasDevice {
			dev = int(f.device)
		}
		if f.hasStrm {
			stream = f.stream
		}
		// a negative number is no device (a pid label's hash): the track
		// keeps none, as the merge of parallel segments does (AppendTables)
		if dev >= 0 {
			tr := &t.Tracks[rec.Track]
			tr.Device, tr.Stream = dev, stream
		}
	}

	switch f.ph {
	case 'B': // its args are stored with the E's, when the slice is complete
		r.open[rec.Track] = append(r.open[rec.Track], openSlice{rec: rec, off: f.off, args: slices.Clone(r.args)})
		return
	case 'E':
		stack := r.open[rec.Track]
		if len(stack) == 0 {
			r.eventProblem("end event without begin", "skipped")
			return
		}
		o := stack[len(stack)-1]
		r.open[rec.Track] = stack[:len(stack)-1]
		if rec.Start < o.rec.Start { // a negative duration would break every analysis downstream
			r.eventProblem("end event before its begin", "slice skipped")
			return
		}
		o.rec.Dur = rec.Start - o.rec.Start
		o.rec.Args, o.rec.ArgVals = t.InternArgs(append(o.args, r.args...)) // args on E are merged into the slice
		t.AddEvent(&o.rec)
		return
	}
	rec.Args, rec.ArgVals = t.InternArgs(r.args)
	e := t.AddEvent(&rec)
	if rec.Kind == trace.KindMemory {
		f.mem.Event = int32(e)
		t.AddMemory(f.mem)
	}
}

// kind classifies the event.
func (r *reader) kind(f *fields) trace.Kind {
	switch f.ph {
	case 'C':
		return trace.KindCounter
	case 'i', 'I':
		if r.t.Str(f.name) == "[memory]" {
			return trace.KindMemory
		}
		return trace.KindInstant
	}
	if !f.hasCat {
		if k, ok := legacyKind(r.t.Str(f.pidLabel)); ok {
			r.t.Meta.Legacy = true
			return k
		}
		return trace.KindOther
	}
	k, ok := r.kinds[f.cat]
	if !ok {
		k = kindOf(r.t.Str(f.cat))
		r.kinds[f.cat] = k
	}
	if k == trace.KindInstant { // a slice in an instant category (ph was checked above)
		return trace.KindOther
	}
	return k
}

// liftMemory takes the device of a [memory] event; its allocator fields
// (different on every event) were already lifted out of the argument set.
func (r *reader) liftMemory(f *fields) {
	for _, a := range r.args {
		n, _ := a.Val.Int()
		switch a.Key {
		case trace.KeyDeviceType:
			f.mem.DeviceType = int8(n)
		case trace.KeyDeviceID:
			f.mem.DeviceID = int8(n)
		}
	}
}

var memKeyNames = [4]string{"Addr", "Bytes", "Total Allocated", "Total Reserved"}

// restoreMemoryKeys puts allocator-named args back for events that are not
// [memory] events.
func (r *reader) restoreMemoryKeys(f *fields) {
	if f.memKeys == 0 {
		return
	}
	vals := [4]int64{f.mem.Addr, f.mem.Bytes, f.mem.TotalAllocated, f.mem.TotalReserved}
	for i, name := range memKeyNames {
		if f.memKeys&(1<<i) != 0 {
			r.args = append(r.args, trace.Arg{Key: r.t.InternString(name), Val: trace.IntValue(vals[i])})
		}
	}
}

// metaEvent records process and thread names.
func (r *reader) metaEvent(key trace.TrackKey) {
	f := &r.ev
	if !f.hasMetaName {
		return
	}
	name := r.t.Str(f.metaName)
	switch r.t.Str(f.name) {
	case "process_name":
		r.procName[trace.TrackKey{Pid: key.Pid, PidLabel: key.PidLabel}] = name
	case "thread_name":
		r.thrName[key] = name
	}
}

// finish closes what the events left open and links the model.
func (r *reader) finish() {
	t := r.t
	for _, track := range slices.Sorted(maps.Keys(r.open)) { // in order: the first offset reported must not depend on map order
		for _, o := range r.open[track] {
			t.Problems.Add(o.off, "begin event without end", "skipped")
		}
	}
	for i := range t.Tracks {
		tr := &t.Tracks[i]
		k := trace.TrackKey{Pid: tr.Pid, Tid: tr.Tid}
		k.PidLabel, _ = t.Lookup(tr.PidLabel)
		k.TidLabel, _ = t.Lookup(tr.TidLabel)
		tr.ThreadName = r.thrName[k]
		k.Tid, k.TidLabel = 0, 0
		tr.ProcessName = r.procName[k]
	}
	t.BytesRead = r.offset()
	if r.parsed != nil {
		go r.parsed(t)
	}
	t.Link()
}

// eventProblem records a problem at the start of the event being committed.
func (r *reader) eventProblem(what, detail string) {
	r.t.Problems.Add(r.ev.off, what, detail)
}
