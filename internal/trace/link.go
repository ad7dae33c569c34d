package trace

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
)

// NestTolerance is how far (ns) a child may stick out past its parent's end
// and still count as nested: traces with ns-decimal timestamps round
// siblings and children so they overlap by a fraction of a microsecond.
const NestTolerance = 999

var stepName = regexp.MustCompile(`^ProfilerStep#(\d+)$`)

// Link fills the link columns (Parent, Launch, Op, Step), sorts each track's
// events and finds the steps. Readers call it once after the last event.
func (t *Trace) Link() {
	n := t.Events.Len()
	ev := &t.Events
	ev.Parent = fill(n)
	ev.Launch = fill(n)
	ev.Op = fill(n)
	ev.Step = fill(n)

	t.sortTracks()
	t.nest()
	t.linkLaunches()
	t.linkOps()
	t.bindFlows()
	t.findSteps()
	t.assignSteps()
}

func fill(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = None
	}
	return s
}

// sortTracks lists each track's slices (not counters or the Trace span) by
// start, longest first on ties, then by file order.
func (t *Trace) sortTracks() {
	ev := &t.Events
	counts := make([]int, len(t.Tracks))
	for i, k := range ev.Kind {
		if k != KindCounter && k != KindTraceSpan {
			counts[ev.Track[i]]++
		}
	}
	for i := range t.Tracks {
		t.Tracks[i].Events = make([]int32, 0, counts[i])
	}
	for i, k := range ev.Kind {
		if k != KindCounter && k != KindTraceSpan {
			tr := &t.Tracks[ev.Track[i]]
			tr.Events = append(tr.Events, int32(i))
		}
	}
	less := func(a, b int32) int {
		if c := cmp.Compare(ev.Start[a], ev.Start[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(ev.Dur[b], ev.Dur[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	for i := range t.Tracks {
		evs := t.Tracks[i].Events
		if !slices.IsSortedFunc(evs, less) {
			slices.SortFunc(evs, less)
		}
	}
}

// nest sets Parent: the innermost event on the same track whose span holds
// the event's span (within NestTolerance).
func (t *Trace) nest() {
	ev := &t.Events
	var stack []int32
	for ti := range t.Tracks {
		stack = stack[:0]
		for _, e := range t.Tracks[ti].Events {
			start, end := ev.Start[e], ev.Start[e]+ev.Dur[e]
			for len(stack) > 0 {
				p := stack[len(stack)-1]
				pEnd := ev.Start[p] + ev.Dur[p]
				if start < pEnd && end <= pEnd+NestTolerance || start == ev.Start[p] && end <= pEnd {
					break
				}
				stack = stack[:len(stack)-1]
			}
			if len(stack) > 0 {
				ev.Parent[e] = stack[len(stack)-1]
			}
			if ev.Dur[e] > 0 {
				stack = append(stack, e)
			}
		}
	}
}

// linkLaunches sets Launch on device events from the runtime or driver call
// with the same correlation id.
func (t *Trace) linkLaunches() {
	ev := &t.Events
	byCorr := make(map[int64]int32)
	for i, k := range ev.Kind {
		if k.IsLaunch() && ev.Correlation[i] != 0 {
			if _, dup := byCorr[ev.Correlation[i]]; !dup || k == KindRuntime {
				byCorr[ev.Correlation[i]] = int32(i)
			}
		}
	}
	for i, k := range ev.Kind {
		if k.OnDevice() && ev.Correlation[i] != 0 {
			if l, ok := byCorr[ev.Correlation[i]]; ok {
				ev.Launch[i] = l
			}
		}
	}
}

// linkOps sets Op on runtime calls (by External id, else the innermost
// enclosing operator on the thread) and on device events (their launch's
// op, else their own External id).
func (t *Trace) linkOps() {
	ev := &t.Events
	byExt := make(map[int64]int32)
	for i, k := range ev.Kind {
		id := ev.ExternalID[i]
		if id == 0 || (k != KindCPUOp && k != KindUserAnnotation) {
			continue
		}
		if prev, dup := byExt[id]; !dup || ev.Kind[prev] != KindCPUOp {
			byExt[id] = int32(i)
		}
	}
	for i, k := range ev.Kind {
		if !k.IsLaunch() {
			continue
		}
		if op, ok := byExt[ev.ExternalID[i]]; ok && ev.ExternalID[i] != 0 {
			ev.Op[i] = op
			continue
		}
		ev.Op[i] = t.enclosingOp(int32(i))
	}
	for i, k := range ev.Kind {
		if !k.OnDevice() {
			continue
		}
		if l := ev.Launch[i]; l != None {
			ev.Op[i] = ev.Op[l]
		} else if op, ok := byExt[ev.ExternalID[i]]; ok && ev.ExternalID[i] != 0 {
			ev.Op[i] = op
		}
	}
}

// enclosingOp returns the innermost cpu_op enclosing e on its thread, else
// the innermost user annotation, else None.
func (t *Trace) enclosingOp(e int32) int32 {
	ev := &t.Events
	ann := None
	for p := ev.Parent[e]; p != None; p = ev.Parent[p] {
		switch ev.Kind[p] {
		case KindCPUOp:
			return p
		case KindUserAnnotation:
			if ann == None {
				ann = p
			}
		}
	}
	return ann
}

// bindFlows sets Flow.Event to the innermost slice on the flow's track that
// holds its timestamp.
func (t *Trace) bindFlows() {
	ev := &t.Events
	for fi := range t.Flows {
		f := &t.Flows[fi]
		f.Event = None
		if int(f.Track) >= len(t.Tracks) {
			continue
		}
		evs := t.Tracks[f.Track].Events
		// Last event starting at or before the flow, then walk out to one
		// that holds it.
		j, _ := slices.BinarySearchFunc(evs, f.Ts, func(e int32, ts int64) int {
			if ev.Start[e] <= ts {
				return -1
			}
			return 1
		})
		if j == 0 {
			continue
		}
		e := evs[j-1]
		for e != None && ev.Start[e]+ev.Dur[e] < f.Ts {
			e = ev.Parent[e]
		}
		f.Event = e
	}
}

// findSteps collects ProfilerStep#N events; without any, the whole trace is
// one synthetic step.
func (t *Trace) findSteps() {
	ev := &t.Events
	t.Steps = t.Steps[:0]
	stepIDs := map[StrID]int{}
	for id, s := range t.Strings {
		if m := stepName.FindStringSubmatch(s); m != nil {
			n, err := strconv.Atoi(m[1])
			if err == nil {
				stepIDs[StrID(id)] = n
			}
		}
	}
	if len(stepIDs) > 0 {
		for i, k := range ev.Kind {
			if k != KindUserAnnotation && k != KindCPUOp {
				continue
			}
			if n, ok := stepIDs[ev.Name[i]]; ok {
				t.Steps = append(t.Steps, Step{Num: n, Event: int32(i), Start: ev.Start[i], End: ev.Start[i] + ev.Dur[i]})
			}
		}
	}
	slices.SortFunc(t.Steps, func(a, b Step) int { return cmp.Compare(a.Start, b.Start) })
	t.SyntheticStep = len(t.Steps) == 0
	if t.SyntheticStep {
		start, end := t.Span()
		t.Steps = append(t.Steps, Step{Num: 0, Event: None, Start: start, End: end})
	}
}

// StepAt returns the index of the step whose host span holds ts, or None.
func (t *Trace) StepAt(ts int64) int32 {
	i, _ := slices.BinarySearchFunc(t.Steps, ts, func(s Step, ts int64) int {
		if s.Start <= ts {
			return -1
		}
		return 1
	})
	if i > 0 && ts < t.Steps[i-1].End {
		return int32(i - 1)
	}
	if i > 0 && t.SyntheticStep && ts <= t.Steps[i-1].End {
		return int32(i - 1)
	}
	return None
}

// assignSteps sets Step: host events by their start time, device events by
// the step of the call that launched them (by time when unlinked). It also
// moves each step's end to device time.
func (t *Trace) assignSteps() {
	ev := &t.Events
	for i, k := range ev.Kind {
		if k.OnDevice() {
			continue
		}
		ev.Step[i] = t.StepAt(ev.Start[i])
	}
	for i := range t.Steps {
		t.Steps[i].DeviceEnd = t.Steps[i].End
	}
	for i, k := range ev.Kind {
		if !k.OnDevice() {
			continue
		}
		s := None
		if l := ev.Launch[i]; l != None {
			s = ev.Step[l]
		} else {
			s = t.StepAt(ev.Start[i])
		}
		ev.Step[i] = s
		if s != None && k != KindGPUAnnotation {
			if end := ev.Start[i] + ev.Dur[i]; end > t.Steps[s].DeviceEnd {
				t.Steps[s].DeviceEnd = end
			}
		}
	}
}
