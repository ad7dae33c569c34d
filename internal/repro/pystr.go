package repro

import (
	"fmt"
	"strings"
)

// pyStr is s as a Python string literal in single quotes with every byte
// outside printable ASCII, the quote and the backslash escaped: trace
// text (op names, paths) enters a script only through it, so that no name
// can end the literal, a comment or a line.
func pyStr(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch {
		case r == '\\' || r == '\'':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}
