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
	n          int // status rows below it
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
func (l *StatusLine) Update(msg string) { l.UpdateLines(msg) }

// UpdateLines is Update for a status of several lines (`run --live`): the
// bottom len(lines) rows, each cut to the terminal's width. A status that
// would leave the program fewer than 3 rows is not drawn.
func (l *StatusLine) UpdateLines(lines ...string) {
	if l == nil || !l.ios.errTTY || l.size == nil || time.Since(l.start) < l.Delay || len(lines) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.drawn) < redrawEvery {
		return
	}
	cols, rows, err := l.size()
	n := len(lines)
	if err != nil || rows < n+3 || cols < 10 {
		return
	}
	l.drawn = time.Now()
	var b strings.Builder
	if rows != l.rows || cols != l.cols || n != l.n {
		if l.rows > 0 {
			// resized, or another number of lines: clear the old status
			// rows and give the whole screen back before the new region
			b.WriteString(saveCursor + resetRegion)
			for r := l.rows - l.n + 1; r <= l.rows; r++ {
				fmt.Fprintf(&b, "\x1b[%d;1H%s", r, clearLine)
			}
			b.WriteString(restoreCursor)
		}
		// Make room: an index (ESC D, unlike a newline it keeps the column
		// of a half-written line) scrolls when the cursor is on the last
		// row, then the cursor goes back up; setting the region homes the
		// cursor, so it is saved around that.
		fmt.Fprintf(&b, "%s\x1b[%dA%s\x1b[1;%dr%s", strings.Repeat("\x1bD", n), n, saveCursor, rows-n, restoreCursor)
		l.rows, l.cols, l.n = rows, cols, n
	}
	b.WriteString(saveCursor)
	for i, msg := range lines {
		if r := []rune(msg); len(r) > cols-1 {
			msg = string(r[:cols-2]) + "…"
		}
		fmt.Fprintf(&b, "\x1b[%d;1H%s%s", rows-n+1+i, clearLine, msg)
	}
	b.WriteString(restoreCursor)
	_, _ = writeWhole(l.ios, b.String())
}

// Done clears the status rows and gives the whole terminal back.
func (l *StatusLine) Done() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rows == 0 {
		return
	}
	var b strings.Builder
	b.WriteString(saveCursor + resetRegion)
	for r := l.rows - l.n + 1; r <= l.rows; r++ {
		fmt.Fprintf(&b, "\x1b[%d;1H%s", r, clearLine)
	}
	b.WriteString(restoreCursor)
	_, _ = writeWhole(l.ios, b.String())
	l.rows, l.cols, l.n = 0, 0, 0
}

// writeWhole writes s to stderr in one write, so the terminal gets the
// status sequence whole, between the program's own writes.
func writeWhole(s *IOStreams, str string) (int, error) {
	return s.ErrOut.Write([]byte(str))
}
