// Package check implements `bottleneck check RUN --budget budget.toml`:
// hold one run against absolute budgets in CI (docs/diff.md).
package check

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	diffmodel "github.com/bottleneck-dev/bottleneck/internal/diff"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Options are the command's flags and arguments.
type Options struct {
	IO     *iostreams.IOStreams
	Path   string
	Budget string
	JSON   bool
}

// NewCmd returns the check command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios}, Run)
}

// newCmd parses the command line into o and hands it to runF: Run, or a
// test's recorder, so that parsing is tested without running the command.
// Usage errors are found here, before runF (exit 2).
func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "check RUN --budget budget.toml",
		Short: "Hold one run against absolute budgets (CI)",
		Long: `Measure one run (a run directory or traces) and hold it against the
budgets of a TOML file:

  fail_if = ["step_time > 50ms", "peak_memory > 20GiB", "syncs > 2"]
  forbid_verdicts = ["input-bound", "sync-bound"]

The metrics are those of 'bottleneck diff --fail-if' (docs/diff.md).

Exit status: 0 within budget; 4 a budget is exceeded; 3 the input was read
with problems; 1 it could not be read; 2 bad usage or a bad budget file.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			if o.Budget == "" {
				return exitcode.New(exitcode.Usage, fmt.Errorf("check: --budget FILE is required"))
			}
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Budget, "budget", "", "the budget `FILE` (TOML; required)")
	f.BoolVar(&o.JSON, "json", false, "print the result as JSON (schema bottleneck.check/v1)")
	return cmd
}

// Run executes check with o.
func Run(o *Options) error {
	b, err := diffmodel.ReadBudget(o.Budget)
	if err != nil {
		return exitcode.New(exitcode.Usage, err)
	}
	side, status, err := diffmodel.Load(o.IO, o.Path)
	if err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	c := b.Check(side)
	if o.JSON {
		enc := json.NewEncoder(o.IO.Out)
		enc.SetIndent("", "  ")
		err = enc.Encode(c)
	} else {
		_, err = fmt.Fprintf(o.IO.Out, "%s: median step %s over %d steps, verdict %s\n", report.Printable(c.Run.Label),
			units.Duration(c.Run.MedianUs), c.Run.Steps, c.Run.Verdict)
		for _, g := range c.Gate {
			mark := "ok  "
			if g.Failed {
				mark = "FAIL"
			}
			if err == nil {
				_, err = fmt.Fprintf(o.IO.Out, "budget %s %s: %s\n", mark, g.Rule, g.Why)
			}
		}
	}
	switch {
	case err != nil:
		return exitcode.New(exitcode.Failed, err)
	case c.Failed:
		return exitcode.New(exitcode.Regression, nil)
	case status != driver.Complete:
		return exitcode.New(exitcode.Code(status), nil)
	}
	return nil
}
