package window

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
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

// stepOf's search finds the same step as a scan of the steps on the
// steps of a generated trace (interval.Index is checked against a scan on
// random spans), and steps out of start order are scanned.
func TestStepOfIsTheFirstStepHolding(t *testing.T) {
	c := &checker{}
	start := int64(0)
	for i := range 40 {
		start += int64(i % 3) // equal starts too
		c.spans = append(c.spans, interval.Span{Start: start, End: start + int64(i*7%11)})
	}
	c.indexSteps()
	if !c.indexed {
		t.Fatal("steps in start order not indexed")
	}
	for ts := int64(-2); ts < start+15; ts++ {
		if got, want := c.stepOf(ts), c.stepOfScan(ts); got != want {
			t.Fatalf("spans %v: stepOf(%d) = %d, want %d", c.spans, ts, got, want)
		}
	}
	c = &checker{spans: []interval.Span{{Start: 10, End: 20}, {Start: 0, End: 5}}}
	c.indexSteps()
	if c.stepOf(3) != 1 || c.stepOf(12) != 0 || c.stepOf(7) != -1 {
		t.Errorf("steps out of start order: stepOf(3, 12, 7) = %d, %d, %d; want 1, 0, -1", c.stepOf(3), c.stepOf(12), c.stepOf(7))
	}
}
