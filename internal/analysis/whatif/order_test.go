package whatif

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// sweepOrder's order is a stable sort of the points by time, then kind,
// with many equal times (as a trace's nested events have), below and
// above radix.Sort's cut-over from slices.Sort (and MaxKeys, where whatif sorts in place), and over a span too wide to
// pack.
func TestSweepOrderIsStableByTimeThenKind(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n    int
		span int64
	}{{10, 100}, {255, 1000}, {256, 1000}, {5000, 50}, {100_000, 3_000_000_000}, {3000, 1 << 62}} {
		pts := make([]point, c.n)
		for i := range pts {
			pts[i] = point{ts: 1_000_000 + rng.Int64N(c.span), kind: uint8(rng.IntN(4)), ref: int32(i)}
		}
		want := make([]int32, len(pts))
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortStableFunc(want, func(a, b int32) int {
			return cmp.Or(cmp.Compare(pts[a].ts, pts[b].ts), cmp.Compare(pts[a].kind, pts[b].kind))
		})
		if got := slices.Collect(sweepOrder(pts)); !slices.Equal(got, want) {
			t.Errorf("%d points over %d ns: order differs from the stable sort", c.n, c.span)
		}
	}
}

// The index of an event maps to its value whether the index is a slice
// (keys close together) or a map (keys far apart), and an index that is
// no key reads as absent in both.
func TestEventIndex(t *testing.T) {
	for _, c := range []struct {
		keys  []int32
		dense bool
	}{{[]int32{5, 9, 60000}, true}, {[]int32{3, 2_000_000_000}, false}} {
		keys := c.keys
		x := newEventIndex(slices.Min(keys), slices.Max(keys), len(keys))
		if dense := x.m == nil; dense != c.dense {
			t.Errorf("%v: dense %v", keys, dense)
		}
		for i, k := range keys {
			x.set(k, int32(i))
		}
		for i, k := range keys {
			if v, ok := x.get(k); !ok || v != int32(i) {
				t.Errorf("%v: get(%d) = %d, %v; want %d", keys, k, v, ok, i)
			}
		}
		for _, k := range []int32{0, 4, 6, keys[1] + 1, -1, 1 << 30} {
			if x.has(k) || x.value(k) != 0 {
				t.Errorf("%v: %d is no key but reads as one", keys, k)
			}
		}
	}
}
