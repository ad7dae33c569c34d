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

// Union returns s ∪ o.
func (s Set) Union(o Set) Set {
	all := make([]Span, 0, len(s)+len(o))
	all = append(append(all, s...), o...)
	return Of(all)
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

// Clip returns the part of s inside w.
func (s Set) Clip(w Span) Set { return s.Intersect(Set{w}) }

// OverlapLen is the length of s inside w, without allocating.
func (s Set) OverlapLen(w Span) int64 {
	i, _ := slices.BinarySearchFunc(s, w.Start, func(sp Span, t int64) int { return cmp.Compare(sp.End, t) })
	var total int64
	for ; i < len(s) && s[i].Start < w.End; i++ {
		total += max(min(s[i].End, w.End)-max(s[i].Start, w.Start), 0)
	}
	return total
}
