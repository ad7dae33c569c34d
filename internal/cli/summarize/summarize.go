// Package summarize implements `bottleneck summarize TRACE... -o OUT`: the
// map step of a large job's analysis, run where the traces live, writing
// one small rank summary per trace (docs/distributed.md).
package summarize

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
	"github.com/bottleneck-dev/bottleneck/internal/cli/cmdutil"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// Options are the command's flags and arguments.
type Options struct {
	IO      *iostreams.IOStreams
	Paths   []string
	Out     string
	Host    string
	Workers int
}

// NewCmd returns the summarize command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios}, Run)
}

func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "summarize TRACE... [-o FILE | -o DIR/]",
		Short: "Summarise rank traces for 'bottleneck merge' (the map step of a large job)",
		Long: `Read each trace (a file, or a directory of one trace per rank) on its own,
analyse it as 'analyze' does, and keep only its rank summary: its steps by
number with their time, breakdown and collectives, and its own verdict
(format bottleneck.rank-summary/1, ~46 bytes a step: docs/distributed.md).
Only a few traces are in memory at once (--workers).

  -o FILE   every summary into FILE, one JSON object per line
  -o DIR/   one file per rank, DIR/rank<N>.summary.json (DIR is an
            existing directory, or a path ending in /)
  no -o     the summaries on standard output, one per line

Then 'bottleneck merge' the summaries of every node. Do not write them
among the traces: 'analyze DIR' reads every *.json there.

Exit status: 0 every trace summarised; 3 some could not be read (the
others were); 1 none could; 2 bad usage.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Out, "output", "o", "", "write the summaries to `FILE`, or one per rank into DIR/ (default: standard output)")
	f.StringVar(&o.Host, "host", "", "the machine's name in every summary (default: the trace's hostname, when it has one); merge groups ranks by it")
	cmdutil.NonNegativeIntFlag(cmd, &o.Workers, "workers", 0, "traces read at once (0: half the CPUs)")
	return cmd
}

// Run executes summarize with o.
func Run(o *Options) error {
	res, err := driver.Summarize(o.IO, o.Paths, o.Host, o.Workers)
	if err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	errOut := textsafe.Writer(o.IO.ErrOut)
	for _, f := range res.Failures {
		msg := f.Error
		if !strings.Contains(msg, f.Path) {
			msg = f.Path + ": " + msg
		}
		fmt.Fprintln(errOut, "bottleneck: summarize:", msg)
	}
	if len(res.Summaries) == 0 {
		return exitcode.New(exitcode.Failed, errors.New("summarize: no trace could be read"))
	}
	if err := write(o, res.Summaries); err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	if len(res.Failures) > 0 {
		return exitcode.New(exitcode.Partial, nil)
	}
	return nil
}

func write(o *Options, sums []*summary.Summary) error {
	dir := strings.HasSuffix(o.Out, "/") || strings.HasSuffix(o.Out, string(filepath.Separator))
	if st, err := os.Stat(o.Out); err == nil && st.IsDir() {
		dir = true
	}
	switch {
	case o.Out == "" || o.Out == "-":
		return writeAll(o.IO.Out, sums)
	case dir:
		if err := os.MkdirAll(o.Out, 0o755); err != nil {
			return err
		}
		seen := map[int]string{}
		for _, s := range sums {
			if f, dup := seen[s.Rank]; dup {
				return fmt.Errorf("summarize: rank %d twice: %s and %s", s.Rank, f, s.File)
			}
			seen[s.Rank] = s.File
			name := filepath.Join(o.Out, fmt.Sprintf("rank%d.summary.json", s.Rank))
			var buf bytes.Buffer
			if err := summary.Write(&buf, s); err != nil {
				return err
			}
			if err := atomicfile.Write(name, buf.Bytes()); err != nil {
				return err
			}
		}
		return nil
	default:
		var buf bytes.Buffer
		if err := writeAll(&buf, sums); err != nil {
			return err
		}
		return atomicfile.Write(o.Out, buf.Bytes())
	}
}

func writeAll(w io.Writer, sums []*summary.Summary) error {
	for _, s := range sums {
		if err := summary.Write(w, s); err != nil {
			return err
		}
	}
	return nil
}
