// Package diff implements `bottleneck diff BASE NEW`: compare two runs,
// say whether the step time changed beyond the noise and why, and guard
// performance budgets in CI (docs/diff.md).
package diff

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/cmdutil"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/diff"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// Options are the command's flags and arguments.
type Options struct {
	IO       *iostreams.IOStreams
	Base     string
	New      string
	JSON     bool
	Markdown string
	HTML     string
	FailIf   []string
	Top      int
}

// NewCmd returns the diff command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios}, Run)
}

// newCmd parses the command line into o and hands it to runF: Run, or a
// test's recorder, so that parsing is tested without running the command.
// Usage errors are found here, before runF (exit 2).
func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diff BASE NEW",
		Short: "Compare two runs: did the step time change, beyond the noise, and why",
		Long: `Compare two runs. BASE and NEW are run directories written by
'bottleneck run' or traces (a file, or a directory of one trace per rank).

The report opens with the step-time change and its 95% interval from the
per-step variance of both runs ("no significant change" when the interval
contains zero), the verdict of each run, then where the difference comes
from, largest first: step-breakdown categories, kernels and operators
matched across the runs, new and vanished ones, launches, syncs,
precision and tensor cores, memory peak, communication, the Python lines
whose time per step changed beyond the noise (with run directories),
and environment differences of run directories.

CI gate: --fail-if 'step_time > +5%' --fail-if 'verdict changed'
--fail-if 'peak_memory > +10%' (see docs/diff.md for the metrics).

Exit status: 0 compared, no budget exceeded; 4 a --fail-if budget was
exceeded; 3 an input was read with problems; 1 an input could not be
read; 2 bad usage.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Base, o.New = args[0], args[1]
			for _, s := range o.FailIf {
				if _, err := diff.ParseRule(s); err != nil {
					return exitcode.New(exitcode.Usage, err)
				}
			}
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.JSON, "json", false, "print the comparison as JSON (schema bottleneck.diff/v1, docs/diff.md)")
	f.StringVar(&o.Markdown, "markdown", "", "also write a Markdown summary for a pull-request comment to `FILE` (\"-\": standard output, instead of the text)")
	f.StringVar(&o.HTML, "html", "", "also write a side-by-side HTML page (step charts, breakdown, kernel and operator tables, diff flame graphs) to `FILE`")
	f.StringArrayVar(&o.FailIf, "fail-if", nil, "exit with status 4 when `EXPR` holds: 'verdict changed' or 'METRIC OP VALUE' (e.g. 'step_time > +5%', 'peak_memory > 20GiB'); repeatable")
	cmdutil.NonNegativeIntFlag(cmd, &o.Top, "top", 10, "kernels and operators listed")
	return cmd
}

// Run executes diff with o.
func Run(o *Options) error {
	rules := make([]diff.Rule, 0, len(o.FailIf))
	for _, s := range o.FailIf {
		r, err := diff.ParseRule(s)
		if err != nil {
			return exitcode.New(exitcode.Usage, err)
		}
		rules = append(rules, r)
	}
	base, bstatus, err := diff.Load(o.IO, o.Base)
	if err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	next, nstatus, err := diff.Load(o.IO, o.New)
	if err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	res := diff.Compare(base, next, diff.Options{Top: o.Top})
	failed := false
	for _, r := range rules {
		hit, why := r.Check(res)
		failed = failed || hit
		res.Gate = append(res.Gate, diff.GateOutcome{Rule: r.Text, Failed: hit, Why: why})
	}
	if err := write(o, res); err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	switch {
	case failed:
		return exitcode.New(exitcode.Regression, nil)
	case bstatus != driver.Complete || nstatus != driver.Complete:
		return exitcode.New(max(exitcode.Code(bstatus), exitcode.Code(nstatus)), nil)
	}
	return nil
}

func write(o *Options, res *diff.Result) error {
	if o.Markdown != "" && o.Markdown != "-" {
		if err := writeFile(o.Markdown, res, diff.WriteMarkdown); err != nil {
			return err
		}
	}
	if o.HTML != "" {
		if err := writeFile(o.HTML, res, diff.WriteHTML); err != nil {
			return err
		}
	}
	var out io.Writer = o.IO.Out
	switch {
	case o.JSON:
		return diff.WriteJSON(out, res)
	case o.Markdown == "-":
		return diff.WriteMarkdown(out, res)
	}
	if err := diff.WriteText(out, res); err != nil {
		return err
	}
	for _, g := range res.Gate {
		verdict := "ok  "
		if g.Failed {
			verdict = "FAIL"
		}
		fmt.Fprintf(out, "gate %s %s: %s\n", verdict, g.Rule, g.Why)
	}
	return nil
}

func writeFile(path string, res *diff.Result, render func(io.Writer, *diff.Result) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := render(f, res); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
