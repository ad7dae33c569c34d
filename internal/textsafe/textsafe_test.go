package textsafe

import (
	"bytes"
	"testing"
)

// Control characters never pass, across write boundaries too; text,
// newlines, tabs and other non-ASCII runes pass unchanged.
func TestWriter(t *testing.T) {
	in := "ok\tline\n\x1b[31mred\x1b]0;title\x07 \u009b2J é ¡ \x7f\r"
	want := "ok\tline\n?[31mred?]0;title? ?2J é ¡ ??"
	for split := 0; split <= len(in); split++ {
		var b bytes.Buffer
		w := Writer(&b)
		w.Write([]byte(in[:split]))
		w.Write([]byte(in[split:]))
		if b.String() != want {
			t.Fatalf("split at %d: %q, want %q", split, b.String(), want)
		}
	}
	var b bytes.Buffer
	Writer(&b).Write([]byte("plain text\n"))
	if b.String() != "plain text\n" {
		t.Errorf("clean text changed: %q", b.String())
	}
	if got := String("a\x1bb\u0085c\nd"); got != "a?b?c?d" {
		t.Errorf("String: %q", got)
	}
}
