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
// is packed with the element's index into one integer, the integers
// radix-sorted on the key's bits, and the elements moved to their places
// in place, cycle by cycle (16 bytes an element: the packed keys and
// their sort's scratch; a column of keys and a sorted copy took 12
// more). Keys too far apart to pack, and more elements than
// radix.MaxKeys (which would raise a large trace's peak memory), fall
// back to the stable sort.
func sortStableBy[T any](xs []T, key func(T) int64) {
	if len(xs) < 2 {
		return
	}
	if len(xs) > radix.MaxKeys {
		slices.SortStableFunc(xs, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
		return
	}
	lo, hi := key(xs[0]), key(xs[0])
	for _, x := range xs {
		k := key(x)
		lo, hi = min(lo, k), max(hi, k)
	}
	idxBits := bits.Len(uint(len(xs)))
	span := uint64(hi) - uint64(lo) // hi >= lo: fits in 64 bits unsigned
	if bits.Len64(span)+idxBits > 64 {
		slices.SortStableFunc(xs, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
		return
	}
	packed := make([]uint64, len(xs))
	for i, x := range xs {
		packed[i] = (uint64(key(x))-uint64(lo))<<idxBits | uint64(i)
	}
	radix.Sort(packed, idxBits, bits.Len64(span)+idxBits)
	// Position i takes the element at from(i): each cycle of that
	// permutation is walked once, and a position filled is marked as
	// taking its own element.
	mask := uint64(1)<<idxBits - 1
	from := func(i int) int { return int(packed[i] & mask) }
	for i := range xs {
		if from(i) == i {
			continue
		}
		first := xs[i]
		j := i
		for {
			k := from(j)
			packed[j] = uint64(j)
			if k == i {
				xs[j] = first
				break
			}
			xs[j] = xs[k]
			j = k
		}
	}
}
