// Package analyze implements `bottleneck analyze`: the report for traces
// that PyTorch's profiler already wrote.
package analyze

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/cli/cmdutil"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// Options are the command's flags and arguments.
type Options struct {
	IO     *iostreams.IOStreams
	Paths  []string
	JSON   bool
	Full   bool
	Top    int
	SortBy string
	Shapes bool
	Stack  int
	Steps  string
	Rank   int
	Def    string
}

// NewCmd returns the analyze command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios}, Run)
}

// newCmd parses the command line into o and hands it to runF: Run, or a
// test's recorder, so that parsing is tested without running the command.
// Usage errors are found here, before runF (exit 2).
func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "analyze PATH...",
		Short: "Explain traces that torch.profiler already wrote",
		Long: `Read PyTorch profiler traces (.json or .json.gz; a directory written by
tensorboard_trace_handler; several files for several ranks) or a run
directory written by 'bottleneck run' (its traces, with the run's evidence
and Python profile), and report (the terminal gets the opening: the
verdict, the top findings, what was read and every problem with it;
--full prints all of it):

  - what was read, and what was damaged or skipped and where;
  - the verdict: why the program is slow, the findings with what to change,
    and what each class of cause costs per step;
  - the steady-state window, the step-time breakdown, GPU utilization and
    idle time, kernel launches, synchronizations, the input pipeline,
    memory, FLOPs, regions and the critical path;
  - the operator and kernel tables (--top rows, --sort, grouped by shape or
    Python stack on request);
  - for several ranks, how they differ (stragglers, exposed communication).

--json prints the same report as JSON (fields, units and versioning:
docs/json.md). See docs/analyze.md and docs/metrics.md.

Exit status: 0 all input read fully; 3 read with problems (damaged or
unreadable files: what could be read was used, the report lists what was
wrong and where); 1 nothing could be read; 2 bad usage.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			if o.Steps != "" {
				if _, _, err := parseSteps(o.Steps); err != nil {
					return exitcode.New(exitcode.Usage, err)
				}
			}
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.JSON, "json", false, "print the report as JSON (schema: docs/json.md)")
	f.BoolVar(&o.Full, "full", false, "print the whole text report (default: the verdict, the top findings, what was read and every problem with it)")
	cmdutil.NonNegativeIntFlag(cmd, &o.Top, "top", driver.DefaultTop, "rows per operator and kernel table (0: all)")
	cmdutil.StringEnumFlag(cmd, &o.SortBy, "sort", "", "", optable.SortKeys, "operator sort key (default device_total with GPU time, else host_total)")
	f.BoolVar(&o.Shapes, "group-by-shape", false, "split operator rows by input shapes (Input Dims)")
	cmdutil.NonNegativeIntFlag(cmd, &o.Stack, "group-by-stack", 0, "split operator rows by the innermost `N` Python frames (traces with stacks)")
	f.StringVar(&o.Steps, "steps", "", "only these ProfilerSteps: `N` or N-M")
	cmdutil.IntRangeFlag(cmd, &o.Rank, "rank", -1, 0, math.MaxInt, "only this rank")
	cmdutil.StringEnumFlag(cmd, &o.Def, "definition", "", string(driver.DefaultDefinition), driver.Definitions,
		"metric definitions: default; tb to reproduce the TensorBoard profiler plugin's numbers; hta for Holistic Trace Analysis's idle-time arithmetic (docs/metrics.md)")
	return cmd
}

// Run executes analyze with o.
func Run(o *Options) error {
	dopts := driver.DefaultOptions()
	dopts.JSON, dopts.Full, dopts.Rank, dopts.Definition = o.JSON, o.Full, o.Rank, driver.Definition(o.Def)
	dopts.Table = optable.Options{GroupByShape: o.Shapes, StackDepth: o.Stack, SortBy: o.SortBy, Top: o.Top}
	if o.Steps != "" {
		first, last, err := parseSteps(o.Steps)
		if err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
		dopts.Table.StepFilter, dopts.Table.FirstStep, dopts.Table.LastStep = true, first, last
	}
	status, err := driver.Analyze(o.IO.Out, o.IO, o.Paths, dopts)
	switch {
	case errors.Is(err, driver.ErrNoSuchRank):
		return exitcode.New(exitcode.Usage, err)
	case err != nil:
		return exitcode.New(exitcode.Failed, err)
	}
	return exitcode.ForStatus(status)
}

func parseSteps(s string) (first, last int, err error) {
	a, b, isRange := strings.Cut(s, "-")
	first, err = strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		return 0, 0, fmt.Errorf("--steps %q: want N or N-M", s)
	}
	last = first
	if isRange {
		last, err = strconv.Atoi(strings.TrimSpace(b))
		if err != nil || last < first {
			return 0, 0, fmt.Errorf("--steps %q: want N or N-M with N <= M", s)
		}
	}
	return first, last, nil
}
