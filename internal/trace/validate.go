package trace

import (
	"errors"
	"fmt"
)

// maxViolations caps Validate's report: one broken invariant usually
// breaks it for many events.
const maxViolations = 10

// Validate checks the invariants of a linked trace (after Link) that the
// analyses rely on, as Go's internal/trace/testtrace does for its traces:
// every column has one value per event (a sparse one, ids and links, one
// for each event that has one) and every reference is in range
// (per-launch argument values included);
// each slice (not counters or the Trace span) is listed on the track it
// names, tracks in time order; a parent
// is an earlier event of the same track whose span holds the child's
// start; a launch link joins a device event to a runtime or driver call
// of the same correlation; steps are in time order and a host event's
// step holds its start. It returns nil or an error listing the first
// violations. Tests and the fuzz targets call it; the reader does not.
func (t *Trace) Validate() error {
	var errs []error
	n := t.Events.Len()
	bad := func(format string, args ...any) bool {
		if len(errs) < maxViolations {
			errs = append(errs, fmt.Errorf(format, args...))
		}
		return len(errs) >= maxViolations
	}
	ev := &t.Events
	for name, l := range map[string]int{
		"Name": len(ev.Name), "Track": len(ev.Track), "Start": len(ev.Start), "Dur": len(ev.Dur),
		"Args":   len(ev.Args),
		"Parent": len(ev.Parent), "Step": len(ev.Step),
	} {
		if l != n {
			bad("column %s has %d values for %d events", name, l, n)
		}
	}
	if !ev.links.valid(ev.Kind) {
		bad("the launch and op links are not kept for exactly the launches and device events")
	}
	if !ev.ExternalID.valid(n) || !ev.Correlation.valid(n) || !ev.SeqNum.valid(n) || !ev.Py.valid(n) || !ev.ArgVals.valid(n) || !ev.cats.apart.valid(n) {
		bad("a sparse column's events do not ascend below %d with a value each", n)
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // the checks below index every column
	}
	ref := func(e int32) bool { return e == None || e >= 0 && int(e) < n }
	onTrack := make([]bool, n)
	for ti := range t.Tracks {
		tr := &t.Tracks[ti]
		for k, e := range tr.Events {
			switch {
			case e < 0 || int(e) >= n:
				bad("track %d lists event %d of %d", ti, e, n)
				continue
			case ev.Track[e] != TrackID(ti):
				bad("event %d is listed on track %d but names track %d", e, ti, ev.Track[e])
			case onTrack[e]:
				bad("event %d is listed twice", e)
			case k > 0 && tr.Events[k-1] >= 0 && int(tr.Events[k-1]) < n && ev.Start[tr.Events[k-1]] > ev.Start[e]:
				bad("track %d: event %d starts before the event listed before it", ti, e)
			}
			onTrack[e] = true
		}
	}
	for i := 0; i < n && len(errs) < maxViolations; i++ {
		slot, has := ev.ArgVals.At(i)
		e := int32(i)
		switch {
		case ev.Kind[i] >= numKinds:
			bad("event %d: kind %d", i, ev.Kind[i])
		case int(ev.Name[i]) >= t.NumStrings() || int(ev.Cat(i)) >= t.NumStrings():
			bad("event %d: name or category string out of range", i)
		case int(ev.Track[i]) >= len(t.Tracks):
			bad("event %d: track %d of %d", i, ev.Track[i], len(t.Tracks))
		case ev.Args[i] != 0 && int(ev.Args[i]) >= t.ArgSets.Len():
			bad("event %d: argument set %d of %d", i, ev.Args[i], t.ArgSets.Len())
		case has != (t.ArgSets.lifted(ev.Args[i]) > 0) || int(slot)+t.ArgSets.lifted(ev.Args[i]) > len(t.argVals):
			bad("event %d: argument set %d with %d per-launch values, values kept %v from %d of %d", i,
				ev.Args[i], t.ArgSets.lifted(ev.Args[i]), has, slot, len(t.argVals))
		case onTrack[i] == (ev.Kind[i] == KindCounter || ev.Kind[i] == KindTraceSpan):
			bad("event %d (%s): listed on its track %v, want only slices listed", i, ev.Kind[i], onTrack[i])
		case ev.Dur[i] < 0:
			bad("event %d: negative duration %d", i, ev.Dur[i])
		case !ref(ev.Parent[i]) || !ref(ev.Launch(i)) || !ref(ev.Op(i)):
			bad("event %d: parent %d, launch %d or op %d out of range", i, ev.Parent[i], ev.Launch(i), ev.Op(i))
		case ev.Step[i] != None && (ev.Step[i] < 0 || int(ev.Step[i]) >= len(t.Steps)):
			bad("event %d: step %d of %d", i, ev.Step[i], len(t.Steps))
		default:
			if p := ev.Parent[i]; p != None {
				switch {
				case p == e || ev.Track[p] != ev.Track[i]:
					bad("event %d: parent %d is itself or on another track", i, p)
				case ev.Start[p] > ev.Start[i] || ev.Start[i] > ev.End(int(p)) || ev.Dur[p] == 0:
					bad("event %d (%s): parent %d (%s) does not hold its start", i, t.Name(i), p, t.Name(int(p)))
				}
			}
			if l := ev.Launch(i); l != None && (!ev.Kind[i].OnDevice() || !ev.Kind[l].IsLaunch() || ev.Correlation.Get(int(l)) != ev.Correlation.Get(i)) {
				bad("event %d (%s): launch link to %d (%s) joins no device event to its call", i, ev.Kind[i], l, ev.Kind[l])
			}
			if o := ev.Op(i); o != None && ev.Kind[o].OnDevice() {
				bad("event %d: its operator %d is a device event", i, o)
			}
			if s := ev.Step[i]; s != None && !ev.Kind[i].OnDevice() && !t.SyntheticStep &&
				(ev.Start[i] < t.Steps[s].Start || ev.Start[i] >= t.Steps[s].End) {
				bad("event %d starts at %d, outside its step %d [%d, %d)", i, ev.Start[i], t.Steps[s].Num, t.Steps[s].Start, t.Steps[s].End)
			}
		}
	}
	for i, s := range t.Steps {
		if s.End < s.Start || s.DeviceEnd < s.End || i > 0 && t.Steps[i-1].Start > s.Start || !ref(s.Event) {
			bad("step %d (#%d): span [%d, %d], device end %d, out of order or out of range", i, s.Num, s.Start, s.End, s.DeviceEnd)
		}
	}
	for i, f := range t.Flows {
		if !ref(f.Event) {
			bad("flow %d: event %d out of range", i, f.Event)
		}
	}
	for i, m := range t.Memory {
		if m.Event < 0 || int(m.Event) >= n {
			bad("memory record %d: event %d out of range", i, m.Event)
		}
	}
	return errors.Join(errs...)
}
