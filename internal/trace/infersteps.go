package trace

import (
	"cmp"
	"slices"
	"strings"
)

// Steps of a trace without ProfilerStep#N marks. torch.profiler used as a
// plain context manager (no schedule, no prof.step()) writes none, and a
// trace of 40 iterations judged as one step hides what the window check,
// the outlier test and every per-step figure need. What repeats once an
// iteration marks it; the marks tried, most telling first:
//
//   - Optimizer.step#X.step: a training iteration ends when its update does
//     (the next one's data loading belongs to the next step);
//   - a DataLoader iterator's __next__: an iteration starts with its batch;
//   - a record_function range no other range holds (the user's own
//     "train_step", "decode", ...): the iteration starts with it;
//   - the outermost nn.Module forward (with_stack traces): it starts there.
//
// Within a kind, the name repeated most on one thread wins (ties: the one
// seen first), so a per-iteration mark beats one logged every 10th
// iteration. Marks of one name that overlap are not an iteration's, nor
// are those found on several threads: requests a server handles
// concurrently (an inference trace's per-request ranges), not a loop.
// Steps run from one boundary to the next, so n marks give n-1 steps: the
// part before the first boundary and after the last is not a whole
// iteration. The window check then drops the first iterations' start-up
// costs as it does ProfilerStep's.

// minStepMarks is the number of repeats that make a mark an iteration's:
// two whole steps between three boundaries.
const minStepMarks = 3

// markKind is a kind of iteration mark, in the order tried.
type markKind int8

const (
	markNone markKind = iota
	markOptimizer
	markLoader
	markAnnotation
	markModule
)

// atEnd: the kind of mark whose end, not start, bounds an iteration.
func (k markKind) atEnd() bool { return k == markOptimizer }

// holdsStep: the kind of mark that holds its iteration's work as a
// ProfilerStep range does, and is the step's event (so no analysis counts
// its own time as an op's). The optimizer's and the loader's ranges are
// work of their own.
func (k markKind) holdsStep() bool { return k == markAnnotation || k == markModule }

func (t *Trace) inferSteps() {
	if !t.SyntheticStep {
		return
	}
	ev := &t.Events
	kinds := map[StrID]markKind{}
	kindOf := func(i int) markKind {
		k, ok := kinds[ev.Name[i]]
		if !ok {
			k = classifyMark(ev.Kind[i], t.Str(ev.Name[i]))
			kinds[ev.Name[i]] = k
		}
		return k
	}
	type key struct {
		name  StrID
		track TrackID
	}
	marks := map[key][]int32{}
	var order []key // first occurrence order
	for i, k := range ev.Kind {
		if k != KindUserAnnotation && k != KindPythonFunction {
			continue
		}
		mk := kindOf(i)
		if mk == markNone || mk >= markAnnotation && t.heldBySame(int32(i), mk, kindOf) {
			continue
		}
		kk := key{ev.Name[i], ev.Track[i]}
		if _, ok := marks[kk]; !ok {
			order = append(order, kk)
		}
		marks[kk] = append(marks[kk], int32(i))
	}
	threads := map[StrID]int{}
	for _, kk := range order {
		threads[kk.name]++
	}
	best, bestKind := key{}, markNone
	for _, kk := range order {
		m := marks[kk]
		slices.SortFunc(m, func(a, b int32) int { return cmp.Compare(ev.Start[a], ev.Start[b]) })
		if len(m) < minStepMarks || threads[kk.name] > 1 || overlapping(ev, m) {
			continue
		}
		k := kinds[kk.name]
		if bestKind == markNone || k < bestKind || k == bestKind && len(m) > len(marks[best]) {
			best, bestKind = kk, k
		}
	}
	if bestKind == markNone {
		return
	}
	m := marks[best] // in start order (sorted above)
	bound := func(e int32) int64 {
		if bestKind.atEnd() {
			return ev.End(int(e))
		}
		return ev.Start[e]
	}
	t.Steps = t.Steps[:0]
	for j := 1; j < len(m); j++ {
		s := Step{Num: j - 1, Event: None, Start: bound(m[j-1]), End: bound(m[j])}
		if bestKind.holdsStep() {
			s.Event = m[j-1]
		}
		t.Steps = append(t.Steps, s)
	}
	t.SyntheticStep = false
	t.StepMarks = t.Str(best.name)
}

// classifyMark says which kind of iteration mark an event of this kind and
// name can be.
func classifyMark(k Kind, name string) markKind {
	switch {
	case k == KindUserAnnotation && strings.HasPrefix(name, "Optimizer.step#"):
		return markOptimizer
	case k == KindUserAnnotation && strings.HasPrefix(name, "enumerate(DataLoader)#") && strings.HasSuffix(name, ".__next__"):
		return markLoader
	case k == KindUserAnnotation && !strings.HasPrefix(name, "Optimizer.") && !strings.HasPrefix(name, "enumerate(DataLoader)#"):
		return markAnnotation
	case k == KindPythonFunction && strings.HasPrefix(name, "nn.Module: "):
		return markModule
	}
	return markNone
}

// heldBySame: an enclosing event would be a mark of the same kind (a range
// inside another record_function range, the optimizer's or the user's; a
// submodule inside its model).
func (t *Trace) heldBySame(i int32, k markKind, kindOf func(int) markKind) bool {
	ev := &t.Events
	for p := ev.Parent[i]; p != None; p = ev.Parent[p] {
		if ev.Kind[p] == ev.Kind[i] && (k == markAnnotation || kindOf(int(p)) == k) {
			return true
		}
	}
	return false
}

// overlapping: two of the events (one name on one thread, in start
// order) overlap in time.
func overlapping(ev *Events, m []int32) bool {
	for j := 1; j < len(m); j++ {
		if ev.Start[m[j]] < ev.End(int(m[j-1])) {
			return true
		}
	}
	return false
}
