package iostreams

import (
	"fmt"
	"sync"
	"time"
)

// Progress is a one-line status display on stderr. It stays silent unless
// stderr is a terminal and the work has lasted longer than Delay, so quick
// commands and piped output never see control codes.
type Progress struct {
	ios   *IOStreams
	start time.Time
	Delay time.Duration

	mu    sync.Mutex
	shown bool
	drawn time.Time // last redraw
}

// redrawEvery bounds how often the line is redrawn: readers report
// progress hundreds of times a second.
const redrawEvery = 100 * time.Millisecond

// StartProgress begins timing a piece of work.
func (s *IOStreams) StartProgress() *Progress {
	return &Progress{ios: s, start: time.Now(), Delay: time.Second}
}

// Update redraws the line with msg (no newline) once Delay has passed, at
// most every redrawEvery.
func (p *Progress) Update(msg string) {
	if p == nil || !p.ios.errTTY || time.Since(p.start) < p.Delay {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.drawn) < redrawEvery {
		return
	}
	p.shown, p.drawn = true, time.Now()
	fmt.Fprintf(p.ios.ErrOut, "\r\x1b[2K%s", msg)
}

// Elapsed is the time since the work started.
func (p *Progress) Elapsed() time.Duration { return time.Since(p.start) }

// Done clears the line if anything was drawn.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.ios.ErrOut, "\r\x1b[2K")
		p.shown = false
	}
}
