package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

// NewCollectCmd returns `collect`, the two calls the Python API
// (python/bottleneck_profiler) makes around an in-process recording:
// `collect --begin` opens the run directory and prints the agent
// configuration; `collect RUN_DIR` closes it and writes the reports.
func NewCollectCmd(ios *iostreams.IOStreams) *cobra.Command {
	var begin bool
	var out, settings, python, where string
	var pid int
	cmd := &cobra.Command{
		Use:    "collect --begin [--out DIR] [--settings JSON] [-- PROGRAM_ARGV...] | collect RUN_DIR",
		Short:  "Open and close a run recorded in-process by the Python API",
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if begin {
				ac, err := runner.Begin(out, settings, version.Version, python, pid, args)
				if err != nil {
					return exitcode.New(exitcode.Failed, fmt.Errorf("collect: %w", err))
				}
				enc := json.NewEncoder(ios.Out)
				return enc.Encode(ac)
			}
			if len(args) != 1 {
				return exitcode.New(exitcode.Usage, errors.New("collect: want one run directory"))
			}
			if _, err := runner.Finish(context.Background(), args[0]); err != nil {
				return exitcode.New(exitcode.Failed, fmt.Errorf("collect: %w", err))
			}
			text, _, _, err := writeReports(ios, args[0]) // the full text: the caller asked for this run's report
			if err != nil {
				fmt.Fprintf(ios.ErrOut, "bottleneck: report: %v\n", err)
			}
			switch where {
			case "stdout":
				fmt.Fprintf(ios.Out, "%s\nreport: %s\n", text, filepath.Join(args[0], "report.txt"))
			case "stderr":
				fmt.Fprintf(ios.ErrOut, "%s\nreport: %s\n", text, filepath.Join(args[0], "report.txt"))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&begin, "begin", false, "open a run directory and print the agent configuration (JSON)")
	f.StringVarP(&out, "out", "o", "", "with --begin: run directory (default ./bottleneck-runs/<timestamp>)")
	f.StringVar(&settings, "settings", "", "with --begin: agent settings over the defaults, as JSON (fields of manifest.json's settings)")
	f.StringVar(&python, "python", "", "with --begin: the recording interpreter (for the manifest)")
	f.IntVar(&pid, "pid", 0, "with --begin: the recording process (for the manifest)")
	f.StringVar(&where, "report", "none", "when closing: print the report on stdout, stderr or none")
	return cmd
}
