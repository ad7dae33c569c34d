package report

import (
	"unicode/utf8"

	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

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
