// Package iostreams owns the program's standard streams and whether each one
// is a terminal.
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
}

// System returns the process's real streams.
func System() *IOStreams {
	return &IOStreams{
		In:     os.Stdin,
		Out:    os.Stdout,
		ErrOut: os.Stderr,
		outTTY: isTerminal(os.Stdout),
		errTTY: isTerminal(os.Stderr),
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

func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
