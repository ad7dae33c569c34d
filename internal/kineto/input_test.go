package kineto

import "testing"

// The gzip trailer holds the size mod 4 GiB: the estimate picks the wrap
// nearest a typical trace compression ratio.
func TestGzipSizeHintWraps(t *testing.T) {
	const gib = int64(1) << 30
	for _, c := range []struct{ isize, compressed, want int64 }{
		{300 << 20, 25 << 20, 300 << 20},                               // no wrap
		{10 * gib % (4 * gib), 750 << 20, 10 * gib},                    // 10 GiB at 13.6x
		{(5 * gib) % (4 * gib), 5 * gib / 10, 5 * gib},                 // 5 GiB at 10x
		{(4*gib + 100<<20) % (4 * gib), 4 * gib / 15, 4*gib + 100<<20}, // just past a wrap
	} {
		if got := nearestWrap(c.isize, c.compressed*12); got != c.want {
			t.Errorf("isize %d, compressed %d: estimate %d, want %d", c.isize, c.compressed, got, c.want)
		}
	}
}
