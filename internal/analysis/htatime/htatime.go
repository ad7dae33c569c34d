// Package htatime reproduces Holistic Trace Analysis's arithmetic on event
// times, for the analyses' HTA-compatible modes. HTA's parser
// (hta/common/trace_parser.py, round_down_time_stamps) reads ts and dur of
// ns-decimal traces as float64 µs, rounds every start up and every end
// (ts + dur) down to a whole µs, and computes everything from those.
package htatime

import (
	"math"
	"math/bits"
)

// USFloat is ns/1000 rounded to the nearest float64 (ties to even): the
// value a JSON parser gives the trace's µs text (exact ns, so at most 3
// decimals). float64(ns)/1000 would round twice once ns passes 2^53
// (epoch-µs timestamps do).
func USFloat(ns int64) float64 {
	if ns < 0 {
		if ns == math.MinInt64 {
			return float64(ns) / 1000
		}
		return -USFloat(-ns)
	}
	if ns < 1<<53 {
		return float64(ns) / 1000 // one rounding: float64(ns) is exact
	}
	w, f := ns/1000, ns%1000
	if f == 0 {
		return float64(w)
	}
	m := 52 - (bits.Len64(uint64(w)) - 1) // float64 spacing at w is 2^-m
	if m < 0 {
		// w ≥ 2^53: spacing 2, the fraction never reaches the midpoint.
		if w&1 == 1 {
			w++
		}
		return float64(w)
	}
	// w ≥ 2^43 here, so m ≤ 9: round f/1000 to a multiple of 2^-m.
	n := f << m
	q, rem := n/1000, n%1000
	if 2*rem > 1000 || 2*rem == 1000 && (q+w<<m)&1 == 1 {
		q++
	}
	return float64(w) + float64(q)/float64(int64(1)<<m)
}

// Start is HTA's rounded start of an event starting at ns: the float64 µs
// value rounded up to a whole µs, in ns.
func Start(ns int64) int64 { return int64(math.Ceil(USFloat(ns))) * 1000 }

// Span is HTA's rounded [start, end) of an event, in ns: the start rounded
// up, the end (float64 ts + dur) rounded down, so every event with ns
// decimals shrinks by up to 2 µs.
func Span(start, dur int64) (s, e int64) {
	return Start(start), int64(math.Floor(USFloat(start)+USFloat(dur))) * 1000
}
