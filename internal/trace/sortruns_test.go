package trace

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortRuns checks the tracks' sort against a general sort: lists of
// 0 to 100 ascending runs (past maxRuns, the radix sort), equal starts
// with different durations, and starts too far apart for the radix key.
func TestSortRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		runs   int
		spread int64 // added to the first start of every other run
	}{{0, 0}, {1, 0}, {2, 0}, {3, 0}, {7, 0}, {63, 0}, {64, 0}, {65, 0}, {100, 0}, {100, math.MaxInt64 / 2}} {
		var start, dur []int64
		for r := range tc.runs {
			ts := int64(tc.runs-r)*40 - rng.Int64N(40) // below the previous run's start: a new run
			if r%2 == 1 {
				ts += tc.spread
			} else {
				ts -= tc.spread
			}
			for range 1 + rng.IntN(50) {
				start = append(start, ts)
				dur = append(dur, rng.Int64N(3))
				ts += rng.Int64N(3) // equal starts too
			}
		}
		order := func(a, b int32) int {
			return cmp.Or(cmp.Compare(start[a], start[b]), cmp.Compare(dur[b], dur[a]), cmp.Compare(a, b))
		}
		s := make([]int32, len(start))
		for i := range s {
			s[i] = int32(i)
		}
		want := slices.Clone(s)
		slices.SortFunc(want, order)
		sortRuns(s, start, order)
		if !slices.Equal(s, want) {
			t.Errorf("%d runs, spread %d: got %v, want %v", tc.runs, tc.spread, s, want)
		}
	}
}
