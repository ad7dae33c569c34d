// Package textsafe keeps text from untrusted traces (op, kernel, device and
// file names) from controlling the terminal it is printed on.
package textsafe

import (
	"io"
	"slices"
	"strings"
	"unicode/utf8"
)

// String replaces control characters so a name cannot move the cursor
// or change colours in the user's terminal.
func String(s string) string {
	clean := true
	for _, c := range s {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			return '?'
		}
		return c
	}, s)
}

// Text is String for files other tools parse (folded stacks, CSV,
// pprof): control characters become '?' and invalid UTF-8 becomes U+FFFD,
// so the result is valid UTF-8 without a control byte.
func Text(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return String(s)
}

// Writer returns a writer that replaces control characters (all
// but newline and tab, C0, DEL and C1) with '?', so no text that reaches
// a terminal can carry an escape sequence, whichever renderer wrote it.
// Every text renderer's entry point writes through it.
func Writer(w io.Writer) io.Writer {
	if _, ok := w.(*printableWriter); ok {
		return w
	}
	return &printableWriter{w: w}
}

type printableWriter struct {
	w         io.Writer
	pendingC2 bool // a 0xC2 lead byte ended the last write: C1 controls are 0xC2 0x80-0x9F
	buf       []byte
}

func controlByte(c byte) bool { return c < 0x20 && c != '\n' && c != '\t' || c == 0x7f }

func (p *printableWriter) Write(b []byte) (int, error) {
	if !p.pendingC2 && !slices.ContainsFunc(b, func(c byte) bool { return controlByte(c) || c == 0xc2 }) {
		return p.w.Write(b)
	}
	out := p.buf[:0]
	for i, c := range b {
		if p.pendingC2 {
			p.pendingC2 = false
			if c >= 0x80 && c < 0xa0 {
				out = append(out, '?')
				continue
			}
			out = append(out, 0xc2)
		}
		switch {
		case c == 0xc2 && i == len(b)-1:
			p.pendingC2 = true
		case c == 0xc2 && b[i+1] >= 0x80 && b[i+1] < 0xa0:
			p.pendingC2 = true
		case controlByte(c):
			out = append(out, '?')
		default:
			out = append(out, c)
		}
	}
	p.buf = out
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
