package iostreams

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// StatusLine shows one line of status on the bottom row of the terminal
// while another process (the user's program) writes to the same terminal.
// The rows above it are made the terminal's scroll region, so the
// program's output scrolls there: it cannot land beside the status, and a
// redraw (cursor saved, bottom row written, cursor restored, in a single
// write) never lands inside a line the program is writing. Like Progress
// it stays silent unless stderr is a terminal and Delay has passed; it
// also stays silent when the terminal's size is unknown or under 4 rows.
type StatusLine struct {
	ios   *IOStreams
	start time.Time
	Delay time.Duration
	// size returns the terminal's columns and rows (term.GetSize on
	// stderr; tests replace it).
	size func() (cols, rows int, err error)

	mu         sync.Mutex
	rows, cols int // of the active scroll region; 0 when none is set
	drawn      time.Time
}

// StartStatusLine begins timing a piece of work that shares the terminal.
func (s *IOStreams) StartStatusLine() *StatusLine {
	l := &StatusLine{ios: s, start: time.Now(), Delay: time.Second}
	if f, ok := s.ErrOut.(*os.File); ok {
		l.size = func() (int, int, error) { return term.GetSize(int(f.Fd())) }
	}
	return l
}

const (
	saveCursor    = "\x1b7"
	restoreCursor = "\x1b8"
	clearLine     = "\x1b[2K"
	resetRegion   = "\x1b[r"
)

// Update redraws the status with msg once Delay has passed, at most every
// redrawEvery; msg is cut to the terminal's width.
func (l *StatusLine) Update(msg string) {
	if l == nil || !l.ios.errTTY || l.size == nil || time.Since(l.start) < l.Delay {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.drawn) < redrawEvery {
		return
	}
	cols, rows, err := l.size()
	if err != nil || rows < 4 || cols < 10 {
		return
	}
	l.drawn = time.Now()
	var b strings.Builder
	if rows != l.rows || cols != l.cols {
		if l.rows > 0 {
			// resized: clear the old status row before the new region
			fmt.Fprintf(&b, "%s\x1b[%d;1H%s%s", saveCursor, l.rows, clearLine, restoreCursor)
		}
		// Make room: an index (ESC D, unlike a newline it keeps the column
		// of a half-written line) scrolls when the cursor is on the last
		// row, then the cursor goes back up; setting the region homes the
		// cursor, so it is saved around that.
		fmt.Fprintf(&b, "\x1bD\x1b[1A%s\x1b[1;%dr%s", saveCursor, rows-1, restoreCursor)
		l.rows, l.cols = rows, cols
	}
	if r := []rune(msg); len(r) > cols-1 {
		msg = string(r[:cols-2]) + "…"
	}
	fmt.Fprintf(&b, "%s\x1b[%d;1H%s%s%s", saveCursor, rows, clearLine, msg, restoreCursor)
	_, _ = writeWhole(l.ios, b.String())
}

// Done clears the status row and gives the whole terminal back.
func (l *StatusLine) Done() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rows == 0 {
		return
	}
	_, _ = writeWhole(l.ios, fmt.Sprintf("%s%s\x1b[%d;1H%s%s", saveCursor, resetRegion, l.rows, clearLine, restoreCursor))
	l.rows, l.cols = 0, 0
}

// writeWhole writes s to stderr in one write, so the terminal gets the
// status sequence whole, between the program's own writes.
func writeWhole(s *IOStreams, str string) (int, error) {
	return s.ErrOut.Write([]byte(str))
}
