// Package exitcode defines bottleneck's process exit statuses. They are part
// of the documented interface (README, "Commands"): scripts and CI rely
// on them.
package exitcode

import (
	"fmt"

	"github.com/bottleneck-dev/bottleneck/internal/driver"
)

const (
	// OK: every input was read fully and the command succeeded.
	OK = 0
	// Failed: the command could not do its job (for analyze: no input could
	// be read at all).
	Failed = 1
	// Usage: bad flags or arguments.
	Usage = 2
	// Partial: the command finished but some input was damaged or skipped;
	// what could be read was used and the warnings say what and where.
	Partial = 3
	// Regression: `bottleneck diff` found a --fail-if budget exceeded.
	Regression = 4
)

// Error carries an exit status out of a command. Err, when set, is printed
// on stderr; a nil Err means the command already reported everything.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an error that makes the process exit with code.
func New(code int, err error) error { return &Error{Code: code, Err: err} }

// Code is the exit status a command's input deserves.
func Code(s driver.Status) int {
	switch s {
	case driver.Partial:
		return Partial
	case driver.Unreadable:
		return Failed
	}
	return OK
}

// ForStatus is the error that makes the process exit with the status a
// command's input deserves (nil when it was read fully).
func ForStatus(s driver.Status) error {
	if c := Code(s); c != OK {
		return New(c, nil)
	}
	return nil
}
