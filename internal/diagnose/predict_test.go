package diagnose

import (
	"math"
	"testing"
)

// hostShareFor finds the host's scale on a piecewise-linear replay (flat
// while the device limits the step, then the host's slope) in a few
// replays, to the precision bisection's 24 had, and keeps to [0, 1] when
// no scale reaches the target.
func TestHostShareFor(t *testing.T) {
	// the device: 3 ms; the host 1 + 4k ms, its ops 3k more from k = 0.6
	step := func(k float64) float64 { return max(3.0, 1+4*k+3*max(0, k-0.6)) }
	for _, c := range []struct{ target, want float64 }{
		{4, 4.8 / 7}, {3.5, 4.3 / 7}, {3.0001, 0.500025}, {2.9, 0}, {9, 1},
	} {
		calls := 0
		got := hostShareFor(c.target, func(k float64) float64 { calls++; return step(k) })
		t.Logf("target %v: k %v in %d replays", c.target, got, calls)
		if math.Abs(got-c.want) > 1e-7 {
			t.Errorf("target %v: k %v, want %v", c.target, got, c.want)
		}
		if calls > 16 {
			t.Errorf("target %v: %d replays", c.target, calls)
		}
	}
}
