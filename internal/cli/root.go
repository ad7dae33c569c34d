// Package cli assembles the bottleneck command tree. Each command lives in a
// package of its own under internal/cli/ with an Options struct, a NewCmd
// function that only parses flags, and a plain run function tests call.
package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

// NewRoot returns the root command with every subcommand attached.
func NewRoot(ios *iostreams.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:           "bottleneck",
		Short:         "Tell why a PyTorch program is slow and what to change",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	for _, add := range commands {
		root.AddCommand(add(ios))
	}
	return root
}

// commands lists the subcommand constructors; each command package adds
// itself in commands.go so this file stays stable.
var commands []func(*iostreams.IOStreams) *cobra.Command

// Main runs the command line and returns the process exit status.
func Main(ios *iostreams.IOStreams, args []string) int {
	root := NewRoot(ios)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitcode.OK
	}
	var ee *exitcode.Error
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(ios.ErrOut, "bottleneck:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(ios.ErrOut, "bottleneck:", err)
	return exitcode.Usage
}
