package tracegen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
)

// Replicate writes a real trace grown to about targetBytes by repeating its
// events: the shape of a long profile of the same program, which the
// generator did not invent. src is the uncompressed JSON of a Kineto (or
// Chrome) trace, an object with "traceEvents" or a bare array of events.
//
// Copy k of the events has its "ts" shifted by k times the source's span
// (plus a gap), its link ids ("id" and "bind_id" of flows, and the
// correlation, External id, Record function id, Sequence number and Python
// ids in args) numbered on from the copy before it, so that links stay
// inside a copy and each kind of id stays as dense as a profiler numbers
// it, and its ProfilerStep#N numbered on from the last copy's steps.
// Everything else, the layout between and inside events included, is the
// source's, byte for byte; metadata events ("ph": "M") are written once. The copies keep the source's pids: a profiler writes
// one process per rank, and a copy under a new pid would read as another
// process of the same rank rather than as more steps.
func Replicate(w io.Writer, src []byte, targetBytes int64) (ReplicaStats, error) {
	r, err := parseReplica(src)
	if err != nil {
		return ReplicaStats{}, err
	}
	cw := &countWriter{w: w}
	st := ReplicaStats{SourceEvents: len(r.events)}
	st.Copies = r.copies(targetBytes)
	buf := make([]byte, 0, 1<<16)
	flush := func(force bool) error {
		if len(buf) < 1<<16 && !force {
			return nil
		}
		_, err := cw.Write(buf)
		buf = buf[:0]
		return err
	}
	buf = append(buf, src[:r.first]...)
	n := int64(0)
	for k := 0; k < st.Copies; k++ {
		shift := r.copyShift(int64(k))
		for i := range r.events {
			e := &r.events[i]
			if k > 0 && e.meta {
				continue
			}
			if n > 0 {
				buf = append(buf, r.sep...)
			}
			n++
			buf = e.appendCopy(buf, src, shift)
			if err := flush(false); err != nil {
				return st, err
			}
		}
	}
	buf = append(buf, src[r.last:]...)
	if err := flush(true); err != nil {
		return st, err
	}
	st.Events, st.Bytes = n, cw.n
	return st, nil
}

// ReplicaStats says what Replicate wrote.
type ReplicaStats struct {
	Bytes        int64 // uncompressed JSON bytes written
	Events       int64 // entries of traceEvents written
	SourceEvents int   // entries of the source's traceEvents
	Copies       int   // how many times the source's events were written
}

// replica is the source parsed once: where its events lie and what each
// copy must rewrite in them.
type replica struct {
	events      []replicaEvent
	first, last int                // src[:first] comes before the first event, src[last:] after the last
	tail        int                // len(src[last:])
	sep         []byte             // what separates two events in the source
	span        int64              // whole µs from the first event's start to the last end, plus a gap
	idStride    [numIDGroups]int64 // how many ids of each group the source's cover
	stepStride  int64              // how many step numbers the source's ProfilerStep#N cover
	copyBytes   int64              // bytes of one copy without metadata events
}

type replicaEvent struct {
	start, end int
	meta       bool
	edits      []replicaEdit // in source order
}

type editKind uint8

const (
	editTime editKind = iota // a number of µs: shifted by the copy's span
	editID                   // an integer link id: offset by the copy's ids
	editStep                 // a "ProfilerStep#N" string: numbered on
)

type replicaEdit struct {
	start, end int // the value's bytes in src
	kind       editKind
	group      idGroup // editID: which ids it numbers
	num        int64   // editID, editStep: the value read
}

// An idGroup is a set of ids numbered together.
type idGroup uint8

const (
	groupFlow idGroup = iota // a flow's start and end share it
	groupCorrelation
	groupExternal
	groupRecordFunction
	groupSequence
	groupPython
	numIDGroups
)

// linkIDs are the args whose integer values tie events together.
var linkIDs = map[string]idGroup{
	"correlation": groupCorrelation, "External id": groupExternal,
	"Record function id": groupRecordFunction, "Sequence number": groupSequence,
	"Python id": groupPython, "Python parent id": groupPython,
}

// copyShift is what copy k adds to each kind of edit.
type copyShift struct {
	time, step int64
	id         [numIDGroups]int64
}

func (r *replica) copyShift(k int64) copyShift {
	s := copyShift{time: k * r.span, step: k * r.stepStride}
	for g, stride := range r.idStride {
		s.id[g] = k * stride
	}
	return s
}

func (r *replica) copies(target int64) int {
	fixed := int64(r.first + r.tail) // the head, the tail and the metadata
	for _, e := range r.events {
		if e.meta {
			fixed += int64(e.end-e.start) + int64(len(r.sep))
		}
	}
	if r.copyBytes <= 0 {
		return 1
	}
	n := math.Round(float64(target-fixed) / float64(r.copyBytes))
	return int(max(1, min(n, 1<<20)))
}

func (e *replicaEvent) appendCopy(dst, src []byte, s copyShift) []byte {
	if s == (copyShift{}) {
		return append(dst, src[e.start:e.end]...)
	}
	at := e.start
	for _, ed := range e.edits {
		dst = append(dst, src[at:ed.start]...)
		v := src[ed.start:ed.end]
		switch ed.kind {
		case editTime:
			dst = appendShiftedTime(dst, v, s.time)
		case editID:
			dst = strconv.AppendInt(dst, ed.num+s.id[ed.group], 10)
		case editStep:
			dst = append(dst, `"ProfilerStep#`...)
			dst = strconv.AppendInt(dst, ed.num+s.step, 10)
			dst = append(dst, '"')
		}
		at = ed.end
	}
	return append(dst, src[at:e.end]...)
}

// appendShiftedTime adds whole µs to a JSON number without rounding its
// fraction: Kineto's times (µs with three decimals, 1e12 and more) are
// near float64's precision.
func appendShiftedTime(dst, v []byte, add int64) []byte {
	dot := bytes.IndexByte(v, '.')
	intPart, frac := v, []byte(nil)
	if dot >= 0 {
		intPart, frac = v[:dot], v[dot:]
	}
	if i, err := strconv.ParseInt(string(intPart), 10, 64); err == nil && i >= 0 && isDigits(frac) {
		return append(strconv.AppendInt(dst, i+add, 10), frac...)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return append(dst, v...)
	}
	return strconv.AppendFloat(dst, f+float64(add), 'f', -1, 64)
}

// isDigits reports whether frac is empty or "." followed by digits.
func isDigits(frac []byte) bool {
	for i, c := range frac {
		if (i > 0 || c != '.') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func parseReplica(src []byte) (*replica, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	r := &replica{}
	switch tok {
	case json.Delim('['):
		err = r.readEvents(dec, src)
	case json.Delim('{'):
		found := false
		for dec.More() && err == nil {
			var key json.Token
			if key, err = dec.Token(); err != nil {
				break
			}
			if key == "traceEvents" && !found {
				found = true
				if tok, err = dec.Token(); err == nil && tok != json.Delim('[') {
					err = errors.New(`"traceEvents" is not an array`)
				}
				if err == nil {
					err = r.readEvents(dec, src)
				}
				continue
			}
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err == nil && !found {
			err = errors.New(`no "traceEvents"`)
		}
	default:
		err = errors.New("not a trace: neither an object nor an array")
	}
	if err != nil {
		return nil, fmt.Errorf("at byte %d: %w", dec.InputOffset(), err)
	}
	if len(r.events) == 0 {
		return nil, errors.New("the trace has no events to replicate")
	}
	return r, nil
}

// readEvents reads the events of an array whose '[' dec has just read, up
// to its ']'.
func (r *replica) readEvents(dec *json.Decoder, src []byte) error {
	minTs, maxEnd := math.Inf(1), math.Inf(-1)
	var minStep, maxStep int64 = math.MaxInt64, math.MinInt64
	var minID, maxID [numIDGroups]int64
	for g := range minID {
		minID[g], maxID[g] = math.MaxInt64, math.MinInt64
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		end := int(dec.InputOffset())
		e := replicaEvent{start: end - len(raw), end: end}
		info, err := e.scan(src)
		if err != nil {
			return fmt.Errorf("event %d: %w", len(r.events), err)
		}
		if len(r.events) == 1 {
			r.sep = src[r.events[0].end:e.start]
		}
		if !e.meta {
			if info.hasTs {
				minTs = min(minTs, info.ts)
				maxEnd = max(maxEnd, info.ts+info.dur)
			}
			for _, ed := range e.edits {
				switch ed.kind {
				case editID:
					minID[ed.group], maxID[ed.group] = min(minID[ed.group], ed.num), max(maxID[ed.group], ed.num)
				case editStep:
					minStep, maxStep = min(minStep, ed.num), max(maxStep, ed.num)
				}
			}
			r.copyBytes += int64(e.end - e.start)
		}
		r.events = append(r.events, e)
	}
	if len(r.events) == 0 {
		return nil
	}
	if len(r.events) == 1 {
		r.sep = []byte(",")
	}
	r.first, r.last = r.events[0].start, r.events[len(r.events)-1].end
	r.tail = len(src) - r.last
	nonMeta := int64(0)
	for _, e := range r.events {
		if !e.meta {
			nonMeta++
		}
	}
	r.copyBytes += nonMeta * int64(len(r.sep))
	if maxEnd > minTs {
		span := maxEnd - minTs
		r.span = int64(math.Ceil(span + span/100)) // a 1% gap between copies
	}
	r.span = max(r.span, 1)
	for g := range r.idStride {
		if maxID[g] >= minID[g] {
			r.idStride[g] = maxID[g] - minID[g] + 1
		}
	}
	if maxStep >= minStep {
		r.stepStride = maxStep - minStep + 1
	}
	return nil
}

type eventTimes struct {
	hasTs   bool
	ts, dur float64
}

// scan finds the values a copy rewrites in the event at src[e.start:e.end].
func (e *replicaEvent) scan(src []byte) (eventTimes, error) {
	var t eventTimes
	err := scanObject(src, e.start, e.end, func(key string, vs, ve int) error {
		v := src[vs:ve]
		switch key {
		case "ph":
			e.meta = string(v) == `"M"`
		case "ts":
			f, err := strconv.ParseFloat(string(v), 64)
			if err == nil {
				t.hasTs, t.ts = true, f
				e.edits = append(e.edits, replicaEdit{start: vs, end: ve, kind: editTime})
			}
		case "dur":
			if f, err := strconv.ParseFloat(string(v), 64); err == nil && f > 0 {
				t.dur = f
			}
		case "name":
			if num, ok := bytes.CutPrefix(v, []byte(`"ProfilerStep#`)); ok && len(num) > 1 && num[len(num)-1] == '"' {
				if n, err := strconv.ParseInt(string(num[:len(num)-1]), 10, 64); err == nil && n >= 0 {
					e.edits = append(e.edits, replicaEdit{start: vs, end: ve, kind: editStep, num: n})
				}
			}
		case "id", "bind_id":
			e.addID(v, vs, ve, groupFlow)
		case "args":
			if len(v) > 0 && v[0] == '{' {
				return scanObject(src, vs, ve, func(key string, as, ae int) error {
					if g, ok := linkIDs[key]; ok {
						e.addID(src[as:ae], as, ae, g)
					}
					return nil
				})
			}
		}
		return nil
	})
	return t, err
}

func (e *replicaEvent) addID(v []byte, vs, ve int, g idGroup) {
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= 0 {
		e.edits = append(e.edits, replicaEdit{start: vs, end: ve, kind: editID, group: g, num: n})
	}
}

// scanObject calls f with each member's key and the offsets of its value
// in src, for the JSON object at src[start:end], in order.
func scanObject(src []byte, start, end int, f func(key string, vs, ve int) error) error {
	dec := json.NewDecoder(bytes.NewReader(src[start:end]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil // not an object: nothing to rewrite
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		ve := start + int(dec.InputOffset())
		if err := f(key.(string), ve-len(raw), ve); err != nil {
			return err
		}
	}
	return nil
}
