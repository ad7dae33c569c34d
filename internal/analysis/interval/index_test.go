package interval

import (
	"math/rand/v2"
	"testing"
)

// Index.First finds the same span as a scan, on random spans in start
// order that overlap the next ones, with gaps, equal starts, empty spans
// and times on every boundary; spans out of start order are refused.
func TestIndexFirstIsTheFirstSpanHolding(t *testing.T) {
	scan := func(spans []Span, ts int64) int {
		for i, sp := range spans {
			if ts >= sp.Start && ts < sp.End {
				return i
			}
		}
		return -1
	}
	rng := rand.New(rand.NewPCG(2, 35))
	for trial := range 500 {
		var spans []Span
		start := int64(0)
		for range rng.IntN(30) {
			start += rng.Int64N(4)
			spans = append(spans, Span{Start: start, End: start + rng.Int64N(12)})
		}
		x, ok := NewIndex(spans)
		if !ok {
			t.Fatalf("spans in start order refused: %v", spans)
		}
		for ts := int64(-2); ts < start+15; ts++ {
			if got, want := x.First(ts), scan(spans, ts); got != want {
				t.Fatalf("trial %d, spans %v: First(%d) = %d, want %d", trial, spans, ts, got, want)
			}
		}
	}
	if _, ok := NewIndex([]Span{{10, 20}, {0, 5}}); ok {
		t.Error("spans out of start order indexed")
	}
}
