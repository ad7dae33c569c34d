package iostreams

import (
	"strings"
	"testing"
)

func TestStatusLine(t *testing.T) {
	ios, _, _, errOut := Test()
	ios.SetTTY(false, true)
	l := ios.StartStatusLine()
	l.Delay = 0
	rows := 24
	l.size = func() (int, int, error) { return 40, rows, nil }
	l.Update("bottleneck: " + strings.Repeat("x", 60))
	got := errOut.String()
	want := "\x1bD\x1b[1A\x1b7\x1b[1;23r\x1b8" + "\x1b7\x1b[24;1H\x1b[2Kbottleneck: " + strings.Repeat("x", 26) + "…\x1b8"
	if got != want {
		t.Fatalf("first draw %q, want %q", got, want)
	}
	// a resize clears the old row and sets the region again
	errOut.Reset()
	l.drawn = l.drawn.Add(-redrawEvery)
	rows = 30
	l.Update("b")
	if got := errOut.String(); !strings.HasPrefix(got, "\x1b7\x1b[24;1H\x1b[2K\x1b8\x1bD\x1b[1A\x1b7\x1b[1;29r\x1b8") {
		t.Errorf("after resize %q", got)
	}
	errOut.Reset()
	l.Done()
	if got := errOut.String(); got != "\x1b7\x1b[r\x1b[30;1H\x1b[2K\x1b8" {
		t.Errorf("done %q", got)
	}
	errOut.Reset()
	l.Done()
	if errOut.Len() != 0 {
		t.Errorf("second Done wrote %q", errOut.String())
	}
}

// Silent when stderr is not a terminal, or the terminal is too small to
// give up a row.
func TestStatusLineSilent(t *testing.T) {
	for name, c := range map[string]struct {
		tty  bool
		rows int
	}{"pipe": {false, 24}, "tiny": {true, 3}} {
		ios, _, _, errOut := Test()
		ios.SetTTY(false, c.tty)
		l := ios.StartStatusLine()
		l.Delay = 0
		l.size = func() (int, int, error) { return 80, c.rows, nil }
		l.Update("x")
		l.Done()
		if errOut.Len() != 0 {
			t.Errorf("%s: wrote %q", name, errOut.String())
		}
	}
}
