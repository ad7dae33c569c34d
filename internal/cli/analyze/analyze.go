// Package analyze implements `bottleneck analyze`: the report for traces
// that PyTorch's profiler already wrote.
package analyze

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// Options are the command's flags and arguments.
type Options struct {
	IO     *iostreams.IOStreams
	Paths  []string
	JSON   bool
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
	o := &Options{IO: ios}
	cmd := &cobra.Command{
		Use:   "analyze TRACE...",
		Short: "Explain traces that torch.profiler already wrote",
		Long: `Read PyTorch profiler traces (.json or .json.gz; a directory written by
tensorboard_trace_handler; several files for several ranks) and report
what was read, the operator table and the kernel table.

See docs/analyze.md. Exit status: 0 all input read fully; 3 read with problems (damaged or
unreadable files: what could be read was used, the report lists what was
wrong and where); 1 nothing could be read; 2 bad usage.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return Run(o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.JSON, "json", false, "print the report as JSON (schema: docs/json.md)")
	f.IntVar(&o.Top, "top", 20, "rows per table (0: all)")
	f.StringVar(&o.SortBy, "sort", "", "operator sort key: "+strings.Join(optable.SortKeys, ", ")+" (default device_total with GPU time, else host_total)")
	f.BoolVar(&o.Shapes, "group-by-shape", false, "split operator rows by input shapes (Input Dims)")
	f.IntVar(&o.Stack, "group-by-stack", 0, "split operator rows by the innermost `N` Python frames (traces with stacks)")
	f.StringVar(&o.Steps, "steps", "", "only these ProfilerSteps: `N` or N-M")
	f.IntVar(&o.Rank, "rank", -1, "only this rank")
	f.StringVar(&o.Def, "definition", "", "metric definitions: default; tb to reproduce the TensorBoard profiler plugin's numbers; hta for Holistic Trace Analysis's idle-time arithmetic (docs/metrics.md)")
	return cmd
}

// Run executes analyze with o.
func Run(o *Options) error {
	if o.SortBy != "" && !slices.Contains(optable.SortKeys, o.SortBy) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("--sort %q: want one of %s", o.SortBy, strings.Join(optable.SortKeys, ", ")))
	}
	if !slices.Contains(driver.Definitions, o.Def) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("--definition %q: want default, tb or hta", o.Def))
	}
	dopts := driver.Options{JSON: o.JSON, Rank: o.Rank, Definition: o.Def, Table: optable.Options{
		GroupByShape: o.Shapes, StackDepth: o.Stack, SortBy: o.SortBy, Top: o.Top,
	}}
	if o.Steps != "" {
		first, last, err := parseSteps(o.Steps)
		if err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
		dopts.Table.StepFilter, dopts.Table.FirstStep, dopts.Table.LastStep = true, first, last
	}
	code, err := driver.Analyze(o.IO.Out, o.IO, o.Paths, dopts)
	if err != nil || code != exitcode.OK {
		return exitcode.New(code, err)
	}
	return nil
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
