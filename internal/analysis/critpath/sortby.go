package critpath

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/radix"
)

// sortStableBy orders xs by key, equal keys in their order in xs: the
// order of slices.SortStableFunc with cmp.Compare of the keys. That sort
// merges in place (n log² n comparisons, each computing two keys) and
// was a sixth of the critical path on small real traces; here each key
// is computed once and packed with the element's index into one integer,
// and the integers radix-sorted on the key's bits. Keys too far apart to
// pack, and more elements than radix.MaxKeys (the packed keys and their
// sort's scratch, 28 bytes an element, would raise a large trace's peak
// memory), fall back to the stable sort.
func sortStableBy[T any](xs []T, key func(T) int64) {
	if len(xs) < 2 {
		return
	}
	if len(xs) > radix.MaxKeys {
		slices.SortStableFunc(xs, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
		return
	}
	keys := make([]int64, len(xs))
	for i, x := range xs {
		keys[i] = key(x)
	}
	lo, hi := slices.Min(keys), slices.Max(keys)
	idxBits := bits.Len(uint(len(xs)))
	span := uint64(hi) - uint64(lo) // hi >= lo: fits in 64 bits unsigned
	if bits.Len64(span)+idxBits > 64 {
		slices.SortStableFunc(xs, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
		return
	}
	packed := make([]uint64, len(xs))
	for i, k := range keys {
		packed[i] = (uint64(k)-uint64(lo))<<idxBits | uint64(i)
	}
	radix.Sort(packed, idxBits, bits.Len64(span)+idxBits)
	sorted := make([]T, len(xs))
	mask := uint64(1)<<idxBits - 1
	for i, p := range packed {
		sorted[i] = xs[p&mask]
	}
	copy(xs, sorted)
}
