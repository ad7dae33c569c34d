// Package clitest runs a command in a test as `bottleneck` would run it:
// flags parsed by cobra, the error mapped to an exit status and written to
// stderr as cli.Main does.
package clitest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// Run builds the command with test streams, runs it with args, and returns
// its exit status, stdout and stderr.
func Run(newCmd func(*iostreams.IOStreams) *cobra.Command, args ...string) (code int, stdout, stderr string) {
	ios, _, out, errOut := iostreams.Test()
	cmd := newCmd(ios)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	var ee *exitcode.Error
	switch {
	case err == nil:
		code = exitcode.OK
	case errors.As(err, &ee):
		code = ee.Code
		if ee.Err != nil {
			errOut.WriteString(ee.Err.Error())
		}
	default:
		code = exitcode.Usage
		errOut.WriteString(err.Error())
	}
	return code, out.String(), errOut.String()
}

// Parse builds a command as its package's newCmd(o, runF) does, with
// newOptions(ios) for o and a runF that only keeps the options it is
// given, runs it with args, and returns the exit status, those options
// (nil when parsing stopped first) and stderr: a command's flags and
// usage checks are tested without running it.
func Parse[O any](newCmd func(*O, func(*O) error) *cobra.Command, newOptions func(*iostreams.IOStreams) *O, args ...string) (code int, got *O, stderr string) {
	code, _, stderr = Run(func(ios *iostreams.IOStreams) *cobra.Command {
		return newCmd(newOptions(ios), func(o *O) error { got = o; return nil })
	}, args...)
	return code, got, stderr
}

// CheckParse parses args as Parse does and checks the outcome: want nil,
// an exit status 2 before the command ran; else exit 0 with options
// equal to want once clear has emptied what the test does not compare
// (the streams).
func CheckParse[O any](t testing.TB, newCmd func(*O, func(*O) error) *cobra.Command, newOptions func(*iostreams.IOStreams) *O, clear func(*O), args []string, want *O) {
	t.Helper()
	code, got, stderr := Parse(newCmd, newOptions, args...)
	if want == nil {
		if code != 2 || got != nil {
			t.Errorf("%q: exit %d, ran %v; want 2 before running (%s)", args, code, got != nil, stderr)
		}
		return
	}
	if code != 0 || got == nil {
		t.Errorf("%q: exit %d: %s", args, code, stderr)
		return
	}
	clear(got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q: options\n %+v, want\n %+v", args, *got, *want)
	}
}
