// Package units writes measurements for people, the same way in every
// output (text report, findings, Markdown, the diff, the run report; the
// web front-end's web/src/dom.js mirrors it): durations and byte counts
// with three significant digits and a space before the unit, byte counts
// in IEC units. Percentages keep the precision their context needs (two
// decimals for the breakdown's small shares, whole numbers in prose).
//
// Machine-readable outputs (JSON, CSV, pprof) carry raw numbers instead.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Duration writes a duration given in microseconds, the trace's unit:
// "850 µs", "8.50 µs", "1.50 ms", "12.3 ms", "2.35 s", "4567 s".
func Duration(us float64) string {
	if us == 0 {
		return "0"
	}
	if math.IsNaN(us) || math.IsInf(us, 0) {
		return strconv.FormatFloat(us, 'f', -1, 64)
	}
	return scaled(us, 1000, []string{"µs", "ms", "s"})
}

// Seconds writes a duration given in seconds, as Duration does.
func Seconds(s float64) string { return Duration(s * 1e6) }

// Bytes writes a byte count in IEC units: "512 B", "1.50 KiB",
// "12.3 MiB", "1.07 GiB".
func Bytes[N number](bytes N) string {
	n := float64(bytes)
	if math.IsNaN(n) || math.IsInf(n, 0) {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	if math.Abs(n) < 1024 {
		return fmt.Sprintf("%.0f B", n)
	}
	return scaled(n/1024, 1024, []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"})
}

type number interface {
	~int | ~int32 | ~int64 | ~uint32 | ~uint64 | ~float64
}

// Count writes an integer with thousands separators: "1,234,567".
func Count(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Things writes a count with its noun, plural unless one: "1 thread",
// "1,024 steps".
func Things(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return Count(n) + " " + noun + "s"
}

// scaled divides v by step until it is below step in the largest fitting
// unit, then keeps three significant digits. A value that rounds up to
// step (999.7 µs) moves to the next unit (1.00 ms).
func scaled(v, step float64, names []string) string {
	i := 0
	for i < len(names)-1 && math.Abs(v) >= step-0.5 {
		v /= step
		i++
	}
	a := math.Abs(v)
	var s string
	switch {
	case a < 9.995:
		s = strconv.FormatFloat(v, 'f', 2, 64)
	case a < 99.95:
		s = strconv.FormatFloat(v, 'f', 1, 64)
	default:
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	return s + " " + names[i]
}
