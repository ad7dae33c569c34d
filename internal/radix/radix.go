// Package radix sorts packed integer keys by their digits, lowest first.
// The trace's links and the analyses order events by time, and ties by
// their order in the input, by sorting one integer per element: the time
// above, the index below. A comparison sort of those took a sixth of the
// what-if model's and the critical path's time on small real traces.
package radix

import "slices"

// digit is the bits sorted in one pass: a 32 KB count table.
const digit = 12

// MaxKeys is where a caller that bounds its memory sorts in place
// instead (slices.Sort): Sort needs a second array as large as keys,
// which would raise a large trace's peak memory (a step of a GB holds ~5M
// sweep points: 40 MB more). The trace's own links sort any number: the
// parse of a large trace is where the time matters most.
const MaxKeys = 1 << 20

// Sort orders keys, whose values are below 2^width, by their bits from
// bit from up, keeping the order of keys equal in those bits, and skips
// the digits every key shares. With an element's index in the bits below
// from, and keys starting in index order, the result is slices.Sort's,
// which it is below 256 keys.
func Sort(keys []uint64, from, width int) {
	if len(keys) < 256 {
		slices.Sort(keys)
		return
	}
	src, dst := keys, make([]uint64, len(keys))
	for shift := from; shift < width; shift += digit {
		var count [1 << digit]int
		for _, k := range src {
			count[k>>shift&(1<<digit-1)]++
		}
		if count[src[0]>>shift&(1<<digit-1)] == len(src) {
			continue // every key has this digit
		}
		pos := 0
		for d, n := range count {
			count[d] = pos
			pos += n
		}
		for _, k := range src {
			d := k >> shift & (1<<digit - 1)
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}
