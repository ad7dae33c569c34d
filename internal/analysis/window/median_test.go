package window

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// medianWithout gives, for every element, exactly the median of the
// others as the outlier check computed it before (a copy without the
// element, sorted), on random durations with many ties, tiny counts
// and values near the int64 limit.
func TestMedianWithoutIsTheMedianOfTheOthers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 35))
	for trial := range 3000 {
		n := 1 + trial%9 // tiny counts, odd and even
		if trial%3 == 0 {
			n = 1 + rng.IntN(200)
		}
		span := []int64{1, 3, 1000, 1 << 62}[trial%4] // 1 and 3: nearly all ties; 1<<62: sums near the limit
		durs := make([]int64, n)
		for i := range durs {
			durs[i] = rng.Int64N(span)
		}
		sorted := slices.Sorted(slices.Values(durs))
		for k := range durs {
			want := median(slices.Delete(slices.Clone(durs), k, k+1))
			if got := medianWithout(sorted, durs[k]); got != want {
				t.Fatalf("durations %v without #%d (%d): median %d, want %d", durs, k, durs[k], got, want)
			}
		}
	}
}
