package radix

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// Keys with the index in their low bits come out as slices.Sort orders
// them, whatever the width, below and above the cut-over from slices.Sort,
// with many equal high parts.
func TestSortIsSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		n    int
		span uint64
	}{{0, 1}, {255, 100}, {256, 100}, {10_000, 7}, {100_000, 1 << 40}, {MaxKeys + 1, 1 << 30}} {
		idxBits := bits.Len(uint(c.n))
		keys := make([]uint64, c.n)
		for i := range keys {
			keys[i] = rng.Uint64N(c.span)<<idxBits | uint64(i)
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		Sort(keys, idxBits, bits.Len64(c.span)+idxBits)
		if !slices.Equal(keys, want) {
			t.Errorf("%d keys below %d: order differs from slices.Sort", c.n, c.span)
		}
	}
}
