// Package repro implements `bottleneck repro`: a standalone script per hot
// op of a trace that rebuilds the call from its recorded inputs and times
// it as recorded and under variants (docs/repro.md).
package repro

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/cmdutil"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/repro"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// Options are the command's flags and arguments.
type Options struct {
	IO   *iostreams.IOStreams
	Path string
	Op   string
	Top  int
	Out  string
}

// NewCmd returns the repro command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios}, Run)
}

func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "repro RUN_DIR|TRACE [--op NAME] [--top N] [-o DIR]",
		Short: "Write a standalone script that times a hot op with its recorded inputs",
		Long: `For the hottest ops of a trace (by device time on GPU traces, else host
self time; an op called inside another aten op counts as that op) or the
op named by --op, write one standalone Python script that rebuilds the call
with the recorded input shapes, dtypes and strides on the trace's device,
with the run's backend settings (TF32, cudnn.benchmark, threads: from
env.json when given a run directory). The script times it (CUDA events on
a GPU, torch.utils.benchmark on a CPU) and prints the median, the achieved
FLOP/s and bytes/s against the device's peak where bottleneck's roofline
knows the op, the time in the trace, and the variants worth trying
(channels_last, TF32, bf16/fp16 autocast) side by side.

Shapes come from traces recorded with 'bottleneck run --record-shapes' or
torch.profiler's record_shapes=True; ops without them get no script.

  bottleneck repro bottleneck-runs/20260101-120000
  bottleneck repro trace.json.gz --op aten::conv2d -o repro/

Scripts go to -o (default RUN_DIR/repro, or ./bottleneck-repro for a
trace file). See docs/repro.md.

Exit status: 0 every script written; 1 an op had no recorded shapes or
inputs a script cannot rebuild (the other scripts are still written), the
op named by --op is not in the trace, or nothing could be read; 2 bad
usage; 3 scripts written from input read with problems.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			if o.Op != "" && cmd.Flags().Changed("top") {
				return exitcode.New(exitcode.Usage, errors.New("repro: --op and --top exclude each other"))
			}
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Op, "op", "", "the op to reproduce, by its trace name (e.g. aten::conv2d)")
	cmdutil.IntRangeFlag(cmd, &o.Top, "top", repro.DefaultTop, 1, math.MaxInt, "how many of the hottest ops get a script")
	f.StringVarP(&o.Out, "output", "o", "", "folder for the scripts (default RUN_DIR/repro, or ./bottleneck-repro)")
	return cmd
}

// Run executes repro with o.
func Run(o *Options) error {
	w, err := repro.WriteDir(o.IO, o.Path, o.Out, repro.Options{Op: o.Op, Top: o.Top})
	if err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	out := textsafe.Writer(o.IO.Out) // op names and paths come from the trace
	errOut := textsafe.Writer(o.IO.ErrOut)
	if len(w.Scripts) == 0 {
		return exitcode.New(exitcode.Failed, fmt.Errorf("%s: no op to reproduce (no aten op with time)", w.Trace))
	}
	fmt.Fprintf(out, "from %s:\n", w.Trace)
	for _, s := range w.Scripts {
		if s.Err != nil {
			fmt.Fprintf(errOut, "bottleneck: %v\n", s.Err)
			continue
		}
		fmt.Fprintf(out, "  %s  %s, %d of %d calls, %s per call in the trace (%s)\n",
			filepath.Join(w.Dir, s.FileName), s.Op, s.Calls, s.AllCalls, fmtUs(s.TraceUs), s.TimeKind)
	}
	switch {
	case w.Failed() > 0:
		return exitcode.New(exitcode.Failed, nil)
	case w.Partial:
		return exitcode.New(exitcode.Partial, nil)
	}
	return nil
}

func fmtUs(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.3f ms", us/1000)
	}
	return fmt.Sprintf("%.1f µs", us)
}
