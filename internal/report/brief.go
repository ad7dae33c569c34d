package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// TerminalWidth is the widest line the brief report writes.
const TerminalWidth = 120

// WriteBrief writes the opening of the report for a terminal: the verdict,
// the window, and the top findings with their first location and change,
// every line wrapped or elided to width columns (the full text report
// has the rest).
func WriteBrief(w io.Writer, r *Report, width int) {
	w = textsafe.Writer(w)
	var b bytes.Buffer
	if r.Diagnosis != nil {
		writeRunDiagnosis(&b, r.Diagnosis, true)
	} else if len(r.Traces) == 1 && r.Traces[0].Diagnosis != nil {
		writeDiagnosis(&b, r.Traces[0].Diagnosis, true)
	}
	io.WriteString(w, Wrap(b.String(), width))
}

// WriteSummary is analyze's default text: the brief, then what was read
// and every problem with the input (a damaged file is never hidden), and
// how to see the rest.
func WriteSummary(w io.Writer, r *Report) {
	w = textsafe.Writer(w)
	var b bytes.Buffer
	WriteBrief(&b, r, TerminalWidth)
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	writeReadLine(&b, r)
	for _, in := range r.Inputs {
		for _, p := range in.Problems {
			fmt.Fprintf(&b, "  %s: problem: %s\n", Printable(in.Path), problemText(p))
		}
	}
	for _, f := range r.Skipped {
		fmt.Fprintf(&b, "skipped %s: %s\n", Printable(f.Path), Printable(f.Error))
	}
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "could not read %s: %s\n", Printable(f.Path), Printable(f.Error))
	}
	b.WriteString("The rest (window, breakdown, GPU, idle time, launches, syncs, memory, operator and kernel tables): --full\n")
	io.WriteString(w, Wrap(b.String(), TerminalWidth))
}

// Wrap breaks every line longer than width columns at spaces, indenting
// the continuation four columns deeper than the line; a word that still
// does not fit (a templated kernel name) loses its middle, and a "where:"
// line is clipped instead of wrapped.
func Wrap(text string, width int) string {
	var out strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		nl := strings.HasSuffix(line, "\n")
		line = strings.TrimSuffix(line, "\n")
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if strings.HasPrefix(line[indent:], "where: ") {
			// a location is recognisable from its start: one line
			out.WriteString(Clip(line, width))
			if nl {
				out.WriteByte('\n')
			}
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(line, " "), "- ") || isNumbered(line[indent:]) {
			indent += 2
		}
		cont := strings.Repeat(" ", min(indent+4, width/2))
		col := 0
		for i, word := range strings.Split(line, " ") {
			if i > 0 && col+1+utf8.RuneCountInString(word) > width {
				out.WriteString("\n" + cont)
				col = len(cont)
			} else if i > 0 {
				out.WriteByte(' ')
				col++
			}
			if room := width - col; utf8.RuneCountInString(word) > room {
				word = elideMiddle(word, max(room, 8))
			}
			out.WriteString(word)
			col += utf8.RuneCountInString(word)
		}
		if nl {
			out.WriteByte('\n')
		}
	}
	return out.String()
}

func isNumbered(s string) bool {
	var n int
	_, err := fmt.Sscanf(s, "%d.", &n)
	return err == nil
}

// elideMiddle keeps the start and the end of s, n runes in all.
func elideMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := (n - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// WriteProblems writes every problem with the input, one per line
// prefixed "bottleneck: ", naming the file and the place: the damage
// found in each input, then the files that could not be read. Commands
// print it on stderr when they exit 3, so a script that keeps only stdout
// (or a written file) still sees what was wrong.
func WriteProblems(w io.Writer, r *Report) {
	w = textsafe.Writer(w)
	for _, in := range r.Inputs {
		for _, p := range in.Problems {
			fmt.Fprintf(w, "bottleneck: %s: problem: %s\n", Printable(in.Path), problemText(p))
		}
	}
	for _, f := range r.Failures {
		fmt.Fprintf(w, "bottleneck: could not read %s: %s\n", Printable(f.Path), Printable(f.Error))
	}
}
