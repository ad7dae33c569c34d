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
	// a resize gives the screen back, clears the old row and sets the
	// region again
	errOut.Reset()
	l.drawn = l.drawn.Add(-redrawEvery)
	rows = 30
	l.Update("b")
	if got := errOut.String(); !strings.HasPrefix(got, "\x1b7\x1b[r\x1b[24;1H\x1b[2K\x1b8\x1bD\x1b[1A\x1b7\x1b[1;29r\x1b8") {
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

// Several lines take the bottom rows; a status that grows first gives the
// screen back and clears its old rows, then makes room for the new ones.
func TestStatusLines(t *testing.T) {
	ios, _, _, errOut := Test()
	ios.SetTTY(false, true)
	l := ios.StartStatusLine()
	l.Delay = 0
	l.size = func() (int, int, error) { return 40, 24, nil }
	l.UpdateLines("a", "b")
	want := "\x1bD\x1bD\x1b[2A\x1b7\x1b[1;22r\x1b8" + "\x1b7\x1b[23;1H\x1b[2Ka\x1b[24;1H\x1b[2Kb\x1b8"
	if got := errOut.String(); got != want {
		t.Fatalf("two lines %q, want %q", got, want)
	}
	errOut.Reset()
	l.drawn = l.drawn.Add(-redrawEvery)
	l.UpdateLines("a", "b", "c")
	want = "\x1b7\x1b[r\x1b[23;1H\x1b[2K\x1b[24;1H\x1b[2K\x1b8" + "\x1bD\x1bD\x1bD\x1b[3A\x1b7\x1b[1;21r\x1b8" +
		"\x1b7\x1b[22;1H\x1b[2Ka\x1b[23;1H\x1b[2Kb\x1b[24;1H\x1b[2Kc\x1b8"
	if got := errOut.String(); got != want {
		t.Fatalf("three lines %q, want %q", got, want)
	}
	errOut.Reset()
	l.Done()
	if got, want := errOut.String(), "\x1b7\x1b[r\x1b[22;1H\x1b[2K\x1b[23;1H\x1b[2K\x1b[24;1H\x1b[2K\x1b8"; got != want {
		t.Errorf("done %q, want %q", got, want)
	}
	// a screen that would keep fewer than 3 rows for the program: nothing
	errOut.Reset()
	l.size = func() (int, int, error) { return 40, 5, nil }
	l.drawn = l.drawn.Add(-redrawEvery)
	l.UpdateLines("a", "b", "c")
	if errOut.Len() != 0 {
		t.Errorf("tiny screen: wrote %q", errOut.String())
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
