package breakdown

import (
	"math/rand/v2"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
)

// Every ns of a window goes to the first role active there, else Other;
// windows may be empty, overlap or come in any order.
func TestPartitionFirstActiveRole(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	spans := func(n int, maxLen int64) []interval.Span {
		out := make([]interval.Span, n)
		for i := range out {
			s := rng.Int64N(10_000)
			out[i] = interval.Span{Start: s, End: s + rng.Int64N(maxLen)}
		}
		return out
	}
	for trial := range 200 {
		var roles [NumCategories - 1]interval.Set
		for c := range roles {
			roles[c] = interval.Of(spans(rng.IntN(40), 500))
		}
		windows := spans(1+rng.IntN(6), 4_000)
		got := partition(windows, &roles)

		for i, w := range windows {
			var want [NumCategories]float64
			for ns := w.Start; ns < w.End; ns++ {
				c := Other
				for r := range roles {
					if roles[r].OverlapLen(interval.Span{Start: ns, End: ns + 1}) > 0 {
						c = Category(r)
						break
					}
				}
				want[c]++
			}
			if got[i] != want {
				t.Fatalf("trial %d, window %d %v: %v, want %v", trial, i, w, got[i], want)
			}
		}
	}
}
