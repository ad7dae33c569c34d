package regions

import (
	"slices"
	"sort"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// GradSync counts DistributedDataParallel's gradient syncs against the
// optimizer's updates. DDP all-reduces the gradients in every backward
// unless the forward ran under model.no_sync(): gradient accumulation over
// N micro-batches without it syncs N times per update, where once would
// do (2 ranks on this CPU, 4 micro-batches: 168 -> 92 ms a step with
// no_sync).
type GradSync struct {
	// Steps counts the steps with a DDP forward and an optimizer step.
	Steps int `json:"steps"`
	// Forwards: DistributedDataParallel.forward calls in those steps.
	Forwards int `json:"forwards"`
	// Synced: the forwards whose backward synced gradients: DDP's reducer
	// ran (or, in traces without reducer ops, an all-reduce started)
	// after the forward began and before the next forward or the step's end.
	Synced int `json:"synced"`
	// Updates: optimizer steps (Optimizer.step#...) in those steps.
	Updates int `json:"updates"`
}

// gradSync computes GradSync over the trace's steps (nil: no step with a
// DDP forward and an optimizer step).
func gradSync(t *trace.Trace) *GradSync {
	if len(t.Steps) == 0 {
		return nil
	}
	ev := &t.Events
	const (
		other = iota
		forward
		update
		reducer
		allReduce
	)
	kinds := make([]int8, t.NumStrings()) // per name: its kind + 1 once known (a pass over every op: no map)
	kindOf := func(i int) int {
		id := ev.Name[i]
		if int(id) >= len(kinds) {
			return other
		}
		if kinds[id] == 0 {
			k := other
			switch n := t.Str(id); {
			case n == "DistributedDataParallel.forward":
				k = forward
			case strings.HasPrefix(n, "Optimizer.step#"):
				k = update
			case strings.Contains(n, "ddp.reducer::") || strings.Contains(n, "distributed::reducer::"):
				k = reducer
			case classify.IsCommOp(n) && (strings.Contains(n, "all_reduce") || strings.Contains(n, "allreduce")):
				k = allReduce
			}
			kinds[id] = int8(k + 1)
		}
		return int(kinds[id]) - 1
	}
	type stepEvents struct {
		forwards, reducers, allReduces []int64
		updates                        int
	}
	steps := make([]stepEvents, len(t.Steps))
	for i := range ev.Kind {
		if ev.Kind[i] != trace.KindUserAnnotation && ev.Kind[i] != trace.KindCPUOp {
			continue
		}
		k := kindOf(i)
		if k == other {
			continue
		}
		start := ev.Start[i]
		s := sort.Search(len(t.Steps), func(j int) bool { return t.Steps[j].End > start })
		if s == len(t.Steps) || start < t.Steps[s].Start {
			continue
		}
		st := &steps[s]
		switch k {
		case forward:
			st.forwards = append(st.forwards, start)
		case update:
			st.updates++
		case reducer:
			st.reducers = append(st.reducers, start)
		case allReduce:
			st.allReduces = append(st.allReduces, start)
		}
	}
	var g GradSync
	for s, st := range steps {
		if len(st.forwards) == 0 || st.updates == 0 {
			continue
		}
		syncs := st.reducers
		if len(syncs) == 0 {
			syncs = st.allReduces
		}
		slices.Sort(st.forwards)
		slices.Sort(syncs)
		g.Steps++
		g.Forwards += len(st.forwards)
		g.Updates += st.updates
		for i, from := range st.forwards {
			to := t.Steps[s].End
			if i+1 < len(st.forwards) {
				to = st.forwards[i+1]
			}
			// the first sync at or after from (a scan of them all per
			// forward was forwards × syncs in a step of many micro-batches)
			if k, _ := slices.BinarySearch(syncs, from); k < len(syncs) && syncs[k] < to {
				g.Synced++
			}
		}
	}
	if g.Steps == 0 {
		return nil
	}
	return &g
}
