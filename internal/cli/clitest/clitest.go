// Package clitest runs a command in a test as `bottleneck` would run it:
// flags parsed by cobra, the error mapped to an exit status and written to
// stderr as cli.Main does.
package clitest

import (
	"errors"

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
