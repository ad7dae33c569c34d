// Package iostreams owns the program's standard streams: whether each one is
// a terminal, whether colour is allowed, and the one-line progress display.
// Commands never look at os.Stdout directly, so tests can run them against
// buffers (see Test).
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams bundles the streams a command reads and writes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	outTTY, errTTY bool
	noColor        bool
}

// System returns the process's real streams. Colour is off when stdout is
// not a terminal, when NO_COLOR is set, or when TERM is "dumb".
func System() *IOStreams {
	return &IOStreams{
		In:      os.Stdin,
		Out:     os.Stdout,
		ErrOut:  os.Stderr,
		outTTY:  isTerminal(os.Stdout),
		errTTY:  isTerminal(os.Stderr),
		noColor: os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb",
	}
}

// Test returns streams backed by buffers, none of them a terminal.
func Test() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// SetTTY marks stdout and stderr as terminals (or not); for tests.
func (s *IOStreams) SetTTY(out, err bool) { s.outTTY, s.errTTY = out, err }

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.outTTY }

// IsStderrTTY reports whether stderr is a terminal: progress displays are
// shown only then.
func (s *IOStreams) IsStderrTTY() bool { return s.errTTY }

// ColorEnabled reports whether stdout may carry ANSI colour codes.
func (s *IOStreams) ColorEnabled() bool { return s.outTTY && !s.noColor }

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
