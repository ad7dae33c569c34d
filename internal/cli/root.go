// Package cli assembles the bottleneck command tree. Each command lives in a
// package of its own under internal/cli/ with an Options struct, a NewCmd
// that only parses flags (through newCmd(o, runF), so a test gets the
// parsed Options without running the command) and a plain Run function
// tests call. Commands return errors; Main turns them into the exit
// status (exitcode) that cmd/bottleneck exits with, the only place that
// calls os.Exit (run too returns, with the program's status, when a
// signal cuts its report writing short).
package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/analyze"
	"github.com/bottleneck-dev/bottleneck/internal/cli/check"
	diffcmd "github.com/bottleneck-dev/bottleneck/internal/cli/diff"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/cli/export"
	mergecmd "github.com/bottleneck-dev/bottleneck/internal/cli/merge"
	reportcmd "github.com/bottleneck-dev/bottleneck/internal/cli/report"
	reprocmd "github.com/bottleneck-dev/bottleneck/internal/cli/repro"
	"github.com/bottleneck-dev/bottleneck/internal/cli/run"
	servecmd "github.com/bottleneck-dev/bottleneck/internal/cli/serve"
	summarizecmd "github.com/bottleneck-dev/bottleneck/internal/cli/summarize"
	trycmd "github.com/bottleneck-dev/bottleneck/internal/cli/try"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/memlimit"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
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
	maxMemory := root.PersistentFlags().String("max-memory", "", "end reading traces with an error (exit 1 or 3) past this much memory, e.g. 8GiB; 0: no limit (default: 3/4 of the machine's or cgroup's memory)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		limit := memlimit.Default()
		if *maxMemory != "" {
			var err error
			if limit, err = memlimit.Parse(*maxMemory); err != nil {
				return exitcode.New(exitcode.Usage, fmt.Errorf("--max-memory: %w", err))
			}
		}
		memlimit.Set(limit)
		return nil
	}
	root.SetIn(ios.In)
	root.SetOut(ios.Out)
	root.SetErr(ios.ErrOut)
	// The subcommands, in help order.
	root.AddCommand(
		analyze.NewCmd(ios),
		run.NewCmd(ios),
		run.NewCollectCmd(ios),
		trycmd.NewCmd(ios),
		diffcmd.NewCmd(ios),
		check.NewCmd(ios),
		export.NewCmd(ios),
		reprocmd.NewCmd(ios),
		reportcmd.NewCmd(ios),
		servecmd.NewCmd(ios),
		summarizecmd.NewCmd(ios),
		mergecmd.NewCmd(ios),
	)
	return root
}

// Main runs the command line and returns the process exit status.
func Main(ios *iostreams.IOStreams, args []string) int {
	root := NewRoot(ios)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitcode.OK
	}
	errOut := textsafe.Writer(ios.ErrOut) // messages quote paths and trace content
	var ee *exitcode.Error
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(errOut, "bottleneck:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(errOut, "bottleneck:", err)
	return exitcode.Usage
}
