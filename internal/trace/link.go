package trace

import (
	"cmp"
	"math"
	"math/bits"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/bottleneck-dev/bottleneck/internal/radix"
)

// NestTolerance is how far (ns) a child may stick out past its parent's end
// and still count as nested: traces with ns-decimal timestamps round
// siblings and children so they overlap by a fraction of a microsecond.
const NestTolerance = 999

var stepName = regexp.MustCompile(`^ProfilerStep#(\d+)$`)

// Link fills the link columns (Parent, Launch, Op, Step), sorts each track's
// events and finds the steps. Readers call it once after the last event.
//
// Design note: on a large trace this is the one serial stretch between
// parallel reading and parallel analyses, so independent phases run
// concurrently: sorting and nesting (per track, tracks in parallel) beside
// launch linking and step finding, then op linking beside flow binding.
func (t *Trace) Link() {
	n := t.Events.Len()
	ev := &t.Events
	ev.Parent = fill(n)
	ev.links = newLinks(ev.Kind)
	ev.Step = fill(n)

	var wg sync.WaitGroup
	wg.Go(func() {
		t.sortTracks()
		t.nest()
	})
	byCorr := t.linkLaunches()
	t.findSteps()
	wg.Wait()
	t.inferSteps() // reads the nesting
	wg.Go(t.bindFlows)
	t.linkOps(byCorr)
	wg.Wait()
	t.assignSteps()
}

// eachTrack runs f for every track, tracks in parallel, longest first.
func (t *Trace) eachTrack(f func(tr *Track)) {
	order := make([]int, len(t.Tracks))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(len(t.Tracks[b].Events), len(t.Tracks[a].Events)) })
	next := make(chan int, len(order))
	for _, i := range order {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(order)) {
		wg.Go(func() {
			for i := range next {
				f(&t.Tracks[i])
			}
		})
	}
	wg.Wait()
}

// eachPart runs f over [0, n) cut into one part a core, the parts in
// parallel.
func eachPart(n int, f func(lo, hi int)) {
	per := n/runtime.GOMAXPROCS(0) + 1
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		wg.Go(func() { f(lo, min(lo+per, n)) })
	}
	wg.Wait()
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
	t.eachTrack(func(tr *Track) { sortRuns(tr.Events, ev.Start, less) })
}

// maxRuns is the most ascending runs sortRuns merges; more go to a
// general sort.
const maxRuns = 64

// sortRuns sorts events s by order, a total order that sorts by start
// first. A track lists its events in file order, which is a few ascending
// runs: PyTorch writes a thread's operators, then its Python frames,
// each in order. Such a list is merged run by run in log2(runs)
// sequential passes; others are sorted by radix (sortByStart).
func sortRuns(s []int32, start []int64, order func(a, b int32) int) {
	bounds := []int{0}
	for i := 1; i < len(s); i++ {
		if order(s[i-1], s[i]) > 0 {
			if len(bounds) == maxRuns {
				sortByStart(s, start, order)
				return
			}
			bounds = append(bounds, i)
		}
	}
	if len(bounds) == 1 {
		return
	}
	bounds = append(bounds, len(s))
	src, dst := s, make([]int32, len(s))
	for len(bounds) > 2 {
		merged := bounds[:0]
		for i := 0; i+1 < len(bounds); i += 2 {
			lo, mid, hi := bounds[i], bounds[i+1], bounds[i+1]
			if i+2 < len(bounds) {
				hi = bounds[i+2]
			}
			mergeRuns(dst[lo:hi], src[lo:mid], src[mid:hi], order)
			merged = append(merged, lo)
		}
		bounds = append(merged, len(s))
		src, dst = dst, src
	}
	if &src[0] != &s[0] {
		copy(s, src)
	}
}

// sortByStart sorts events s by order, a total order that sorts by start
// first: by a radix sort of start and event packed in one word, then each
// run of equal starts by order. A comparison sort took 66 ms on a track
// of 877k Python frames interleaved with their operators (the cost is the
// call of order per comparison), the radix sort 26 ms.
func sortByStart(s []int32, start []int64, order func(a, b int32) int) {
	lo, hi, last := int64(math.MaxInt64), int64(math.MinInt64), int32(0)
	for _, e := range s {
		lo, hi, last = min(lo, start[e]), max(hi, start[e]), max(last, e)
	}
	idBits := bits.Len32(uint32(last))
	if bits.Len64(uint64(hi)-uint64(lo))+idBits > 64 {
		slices.SortFunc(s, order)
		return
	}
	keys := make([]uint64, len(s))
	for i, e := range s {
		keys[i] = (uint64(start[e])-uint64(lo))<<idBits | uint64(e)
	}
	radix.Sort(keys, 0, bits.Len64(uint64(hi)-uint64(lo))+idBits)
	for i, k := range keys {
		s[i] = int32(k & (1<<idBits - 1))
	}
	for i := 0; i < len(s); {
		j := i + 1
		for j < len(s) && start[s[j]] == start[s[i]] {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(s[i:j], order)
		}
		i = j
	}
}

// mergeRuns merges the sorted a and b into dst.
func mergeRuns(dst, a, b []int32, order func(a, b int32) int) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if order(a[i], b[j]) <= 0 {
			dst[k] = a[i]
			i++
		} else {
			dst[k] = b[j]
			j++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// nest sets Parent: the innermost event on the same track whose span holds
// the event's span (within NestTolerance).
func (t *Trace) nest() {
	ev := &t.Events
	t.eachTrack(func(tr *Track) {
		var stack []int32
		for _, e := range tr.Events {
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
	})
}

// linkLaunches sets Launch on device events from the runtime or driver call
// with the same correlation id. It returns its index, whose storage
// linkOps reuses.
func (t *Trace) linkLaunches() *idIndex {
	ev := &t.Events
	corr := &ev.Correlation
	byCorr := newIDIndex(corr, func(i int) bool { return ev.Kind[i].IsLaunch() }, nil)
	for e, id := range corr.All() {
		if k := ev.Kind[e]; k.IsLaunch() {
			if _, dup := byCorr.get(id); !dup || k == KindRuntime {
				byCorr.set(id, e)
			}
		}
	}
	for e, id := range corr.All() {
		if ev.Kind[e].OnDevice() {
			if l, ok := byCorr.get(id); ok {
				ev.setLaunch(int(e), l)
			}
		}
	}
	return byCorr
}

// linkOps sets Op on runtime calls (by External id when that op is on the
// call's thread, else the innermost enclosing operator on the thread) and on device events (their launch's
// op, else their own External id). Its index takes reuse's storage when
// that is large enough.
func (t *Trace) linkOps(reuse *idIndex) {
	ev := &t.Events
	isOp := func(i int) bool { return ev.Kind[i] == KindCPUOp || ev.Kind[i] == KindUserAnnotation }
	ext := &ev.ExternalID
	byExt := newIDIndex(ext, isOp, reuse)
	for e, id := range ext.All() {
		if !isOp(int(e)) {
			continue
		}
		if prev, dup := byExt.get(id); !dup || ev.Kind[prev] != KindCPUOp {
			byExt.set(id, e)
		}
	}
	for i, k := range ev.Kind {
		if !k.IsLaunch() {
			continue
		}
		// the op that launched a call runs on the call's thread: an
		// External id shared with an op of another thread is a collision
		if op, ok := byExt.get(ext.Get(i)); ok && ev.Track[op] == ev.Track[i] {
			ev.setOp(i, op)
			continue
		}
		ev.setOp(i, t.enclosingOp(int32(i)))
	}
	for i, k := range ev.Kind {
		if !k.OnDevice() {
			continue
		}
		if l := ev.Launch(i); l != None {
			ev.setOp(i, ev.Op(int(l)))
		} else if op, ok := byExt.get(ext.Get(i)); ok {
			ev.setOp(i, op)
		}
	}
}

// idIndex finds events by a non-zero id (correlation, External id).
// Profilers number these from some base, so a slice indexed by id-base is
// the usual store, several times faster than a map on millions of events.
// Not every id is an event's: CUPTI numbers every CUDA call it sees, and
// real traces have 5-6 correlation ids per recorded launch. A slot is 4
// bytes and a map entry of the sizes used here 15-30, so the slice is
// used up to 8 ids per event; sparser ids fall back to a map.
type idIndex struct {
	base   int64
	dense  []int32 // None where no event has the id
	sparse map[int64]int32
}

// newIDIndex sizes an index for the ids of the events keep accepts; a
// dense one takes reuse's slice when that is large enough (nil: none).
func newIDIndex(ids *IDColumn, keep func(i int) bool, reuse *idIndex) *idIndex {
	lo, hi, n := int64(math.MaxInt64), int64(math.MinInt64), 0
	for e, id := range ids.All() {
		if keep(int(e)) {
			lo, hi, n = min(lo, id), max(hi, id), n+1
		}
	}
	if n > 0 && uint64(hi-lo) < uint64(8*n+1024) {
		size := int(hi-lo) + 1
		if reuse == nil || cap(reuse.dense) < size {
			return &idIndex{base: lo, dense: fill(size)}
		}
		dense := reuse.dense[:size]
		for i := range dense {
			dense[i] = None
		}
		return &idIndex{base: lo, dense: dense}
	}
	return &idIndex{sparse: make(map[int64]int32, n)}
}

func (x *idIndex) get(id int64) (int32, bool) {
	if x.dense == nil {
		e, ok := x.sparse[id]
		return e, ok
	}
	if i := uint64(id - x.base); i < uint64(len(x.dense)) && x.dense[i] != None {
		return x.dense[i], true
	}
	return None, false
}

// set stores e for id; in dense mode id must be one newIDIndex saw.
func (x *idIndex) set(id int64, e int32) {
	if x.dense == nil {
		x.sparse[id] = e
		return
	}
	x.dense[id-x.base] = e
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
	eachPart(len(t.Flows), func(lo, hi int) { t.bindFlowsIn(lo, hi) })
}

// bindFlowsIn binds flows lo to hi-1 (a binary search each, 12 ms on
// 200 MB in one part).
func (t *Trace) bindFlowsIn(lo, hi int) {
	ev := &t.Events
	for fi := lo; fi < hi; fi++ {
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
	for id, s := range t.AllStrings() {
		if m := stepName.FindStringSubmatch(s); m != nil {
			n, err := strconv.Atoi(m[1])
			if err == nil {
				stepIDs[id] = n
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

// EndInStep is the end of host event e, cut at the end of the
// ProfilerStep it starts in when that step, on e's thread, ends first.
// A range that outlasts its step there had prof.step() called inside it,
// and what follows is the profiler's own work: `bottleneck run` steps the
// profiler in optimizer.step's hook, inside its record_function, and the
// last of them stays open while the profiler stops and writes the trace.
// Callers choose the events this applies to.
func (t *Trace) EndInStep(e int32) int64 {
	ev := &t.Events
	end := ev.End(int(e))
	if t.SyntheticStep {
		return end
	}
	if s := t.StepAt(ev.Start[e]); s != None && t.Steps[s].End < end && t.Steps[s].Event != None && ev.Track[t.Steps[s].Event] == ev.Track[e] {
		return max(t.Steps[s].End, ev.Start[e])
	}
	return end
}

// assignSteps sets Step: host events by their start time, device events by
// the step of the call that launched them (by time when unlinked). It also
// moves each step's end to device time.
func (t *Trace) assignSteps() {
	ev := &t.Events
	eachPart(len(ev.Kind), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if !ev.Kind[i].OnDevice() {
				ev.Step[i] = t.StepAt(ev.Start[i])
			}
		}
	})
	for i := range t.Steps {
		t.Steps[i].DeviceEnd = t.Steps[i].End
	}
	for i, k := range ev.Kind {
		if !k.OnDevice() {
			continue
		}
		s := None
		if l := ev.Launch(i); l != None {
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
