package report

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// Duration formats µs with a unit that keeps 3-4 significant digits.
func Duration(us float64) string {
	a := us
	if a < 0 {
		a = -a
	}
	switch {
	case a == 0:
		return "0"
	case a < 1000:
		return fmt.Sprintf("%.1fus", us)
	case a < 1e6:
		return fmt.Sprintf("%.2fms", us/1e3)
	default:
		return fmt.Sprintf("%.3fs", us/1e6)
	}
}

// Bytes formats a byte count in binary units.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Count formats an integer with thousands separators.
func Count(n int) string {
	s := fmt.Sprint(n)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// Clip shortens s to n runes with an ellipsis, and makes it safe for a
// terminal: names come from untrusted traces, so control characters
// (escape sequences) are replaced.
func Clip(s string, n int) string {
	s = textsafe.String(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Printable makes a name from a trace safe for a terminal (textsafe.String).
func Printable(s string) string { return textsafe.String(s) }
