package critpath

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortStableBy gives slices.SortStableFunc's order: with many equal keys,
// negative keys, and keys too far apart to pack (the fallback).
func TestSortStableByIsTheStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type item struct {
		key int64
		id  int
	}
	for _, c := range []struct {
		n      int
		lo, hi int64
	}{{0, 0, 1}, {1, 0, 1}, {7, 0, 3}, {1000, -50, 50}, {50_000, 1_700_000_000_000_000_000, 1_700_000_000_010_000_000}, {300, math.MinInt64 / 2, math.MaxInt64 / 2}} {
		xs := make([]item, c.n)
		for i := range xs {
			xs[i] = item{c.lo + rng.Int64N(c.hi-c.lo), i}
		}
		want := slices.Clone(xs)
		slices.SortStableFunc(want, func(a, b item) int { return cmp.Compare(a.key, b.key) })
		sortStableBy(xs, func(x item) int64 { return x.key })
		if !slices.Equal(xs, want) {
			t.Errorf("%d keys in [%d, %d): order differs from the stable sort", c.n, c.lo, c.hi)
		}
	}
}
