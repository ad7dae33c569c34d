// Package interval does arithmetic on sets of time spans (ns): the union
// and intersection that "how much of the step was X" metrics reduce to.
package interval

import (
	"cmp"
	"slices"
)

// Span is the half-open time range [Start, End).
type Span struct{ Start, End int64 }

// Len is the span's length (0 when empty or inverted).
func (s Span) Len() int64 { return max(s.End-s.Start, 0) }

// Set is a sorted list of disjoint, non-empty spans.
type Set []Span

// Of builds a Set from spans in any order, merging overlaps. spans is
// sorted in place.
func Of(spans []Span) Set {
	slices.SortFunc(spans, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	out := spans[:0]
	for _, s := range spans {
		if s.End <= s.Start {
			continue
		}
		if n := len(out); n > 0 && s.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, s.End)
			continue
		}
		out = append(out, s)
	}
	return Set(out)
}

// Total is the summed length.
func (s Set) Total() int64 {
	var t int64
	for _, sp := range s {
		t += sp.Len()
	}
	return t
}

// Intersect returns s ∩ o.
func (s Set) Intersect(o Set) Set {
	var out Set
	i, j := 0, 0
	for i < len(s) && j < len(o) {
		lo, hi := max(s[i].Start, o[j].Start), min(s[i].End, o[j].End)
		if lo < hi {
			out = append(out, Span{lo, hi})
		}
		if s[i].End < o[j].End {
			i++
		} else {
			j++
		}
	}
	return out
}

// OverlapLen is the length of s inside w, without allocating.
func (s Set) OverlapLen(w Span) int64 {
	i, _ := slices.BinarySearchFunc(s, w.Start, func(sp Span, t int64) int { return cmp.Compare(sp.End, t) })
	var total int64
	for ; i < len(s) && s[i].Start < w.End; i++ {
		total += max(min(s[i].End, w.End)-max(s[i].Start, w.Start), 0)
	}
	return total
}

// Index finds which of a list of spans holds a time, in log n: spans in
// start order that may overlap (steps whose device work runs into the
// next step). A scan of the steps per event was steps × events.
type Index struct {
	spans     []Span
	latestEnd []int64 // latestEnd[i]: the latest end of spans[0..i]
}

// NewIndex indexes spans (not copied), which must be in start order; ok
// is false when they are not.
func NewIndex(spans []Span) (x Index, ok bool) {
	x = Index{spans: spans, latestEnd: make([]int64, len(spans))}
	for i, sp := range spans {
		x.latestEnd[i] = sp.End
		if i > 0 {
			if sp.Start < spans[i-1].Start {
				return Index{}, false
			}
			x.latestEnd[i] = max(sp.End, x.latestEnd[i-1])
		}
	}
	return x, true
}

// First returns the index of the first span holding ts (Start <= ts <
// End), or -1.
func (x Index) First(ts int64) int {
	// spans before i all end by ts; span i ends after it, and holds it
	// unless it starts after ts, and then so do all later ones
	i, _ := slices.BinarySearchFunc(x.latestEnd, ts, func(end, ts int64) int {
		if end > ts {
			return 1
		}
		return -1
	})
	if i < len(x.spans) && x.spans[i].Start <= ts {
		return i
	}
	return -1
}
