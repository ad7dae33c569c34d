// Package merge implements `bottleneck merge SUMMARY...`: the reduce step
// of a large job's analysis, the job report from rank summaries
// (docs/distributed.md).
package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/cmdutil"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// Options are the command's flags and arguments.
type Options struct {
	IO        *iostreams.IOStreams
	Paths     []string
	JSON      bool
	WorldSize int
	Workers   int
}

// NewCmd returns the merge command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios}, Run)
}

func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "merge SUMMARY... | DIR",
		Short: "Merge rank summaries into the job's report: stragglers, their causes, missing ranks",
		Long: `Merge the rank summaries written by 'bottleneck summarize' (files of one
or more summaries, in any order and grouping: the report depends only on
the set of ranks; a directory stands for its *.summary.json files) and print the job's report: the ranks' step times, the
stragglers and for each its cause (its own compute, its data, its host or
its link), the hosts they run on, the job's verdict and the ranks of the
world that sent no summary (docs/distributed.md).

Exit status: 0 merged; 3 a file could not be read or ranks of the world
are missing (the rest was merged); 1 nothing could be merged, or a rank
appears twice; 2 bad usage.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.JSON, "json", false, "print the report as JSON (format bottleneck.job-report/1), every rank and step included")
	cmdutil.NonNegativeIntFlag(cmd, &o.WorldSize, "world-size", 0, "the number of ranks the job ran (0: the largest world size a summary gives)")
	cmdutil.NonNegativeIntFlag(cmd, &o.Workers, "workers", 0, "files read at once (0: the CPUs)")
	return cmd
}

// Run executes merge with o.
func Run(o *Options) error {
	workers := o.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	paths, err := expand(o.Paths)
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("merge: %w", err))
	}
	job, failures, err := summary.MergeFiles(paths, workers)
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("merge: %w", err))
	}
	errOut := textsafe.Writer(o.IO.ErrOut)
	for _, f := range failures {
		msg := f.Err.Error()
		if !strings.Contains(msg, f.Path) {
			msg = f.Path + ": " + msg
		}
		fmt.Fprintln(errOut, "bottleneck: merge:", msg)
	}
	if job.Ranks() == 0 {
		return exitcode.New(exitcode.Failed, errors.New("merge: no summary could be read"))
	}
	rep := job.Report(o.WorldSize)
	if o.JSON {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = summary.WriteText(o.IO.Out, rep)
	}
	if err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	if len(failures) > 0 || len(rep.Missing) > 0 {
		return exitcode.New(exitcode.Partial, nil)
	}
	return nil
}

// expand replaces each directory by its *.summary.json files (a job of
// 10,000 ranks overflows a shell's argument list).
func expand(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			out = append(out, p) // a missing file is the merge's failure to report
			continue
		}
		found, err := filepath.Glob(filepath.Join(p, "*.summary.json"))
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no *.summary.json in this directory", p)
		}
		out = append(out, found...)
	}
	return out, nil
}
