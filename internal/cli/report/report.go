// Package report implements `bottleneck report`: the self-contained HTML
// report of a run directory or of traces.
package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/cmdutil"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	textreport "github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// Options are the command's flags and arguments.
type Options struct {
	IO    *iostreams.IOStreams
	Paths []string
	HTML  string
	Top   int
	Title string
	// Force lets the report of a run directory replace its report.html.
	Force bool
}

// NewCmd returns the report command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	o := &Options{IO: ios}
	cmd := &cobra.Command{
		Use:   "report PATH...",
		Short: "Write the HTML report of a run directory or of traces",
		Long: `Write one self-contained HTML file (no network needed: open it from disk
or send it to a colleague) with the verdict, step-time breakdown, GPU
utilization and memory over time, sortable operator, kernel and Python
tables, flame graphs and a timeline of the recorded window.

PATH is a run directory written by 'bottleneck run' (then the run's
evidence, Python profile and environment are included, the verdict is the
run's, and the default output is PATH/report.html, or PATH/report-N.html
when that exists, unless --force) or trace files and directories of
traces.

Exit status: 0 all input read fully; 3 read with problems; 1 nothing could
be read; 2 bad usage.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return Run(o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.HTML, "output", "o", "", "write the report to `FILE` (\"-\": standard output; default PATH/report.html for a run directory)")
	cmdutil.NonNegativeIntFlag(cmd, &o.Top, "top", driver.DefaultTop, "rows per operator and kernel table (0: all)")
	f.StringVar(&o.Title, "title", "", "page title")
	f.BoolVar(&o.Force, "force", false, "replace the run directory's report.html")
	cmdutil.RenamedFlags(cmd, map[string]string{"html": "output"})
	return cmd
}

// Run executes report with o.
func Run(o *Options) error {
	for _, p := range o.Paths {
		if note := rundir.InterruptedNote(p); note != "" {
			fmt.Fprintf(o.IO.ErrOut, "bottleneck: %s\n", textreport.Printable(note))
		}
	}
	out := o.HTML
	if out == "" {
		if len(o.Paths) != 1 || !rundir.Is(o.Paths[0]) {
			return exitcode.New(exitcode.Usage, fmt.Errorf("report: -o FILE is required unless PATH is one run directory"))
		}
		out = runDirOutput(o.Paths[0], o.Force)
	}
	dopts := driver.DefaultOptions()
	dopts.Table.Top = o.Top
	d, err := driver.Open(o.IO, o.Paths, dopts)
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("report: %w", err))
	}
	title := o.Title
	if title == "" {
		title = d.Title
	}
	page := htmlreport.Build(htmlreport.Input{Report: d.Report, Traces: d.Traces, Profiles: d.Profiles, Env: d.Env, Runs: d.Runs},
		htmlreport.Options{Title: title})
	if out == "-" {
		err = htmlreport.Write(o.IO.Out, page)
	} else {
		err = htmlreport.WriteFile(out, page)
		if err == nil {
			fmt.Fprintf(o.IO.ErrOut, "wrote %s\n", out)
		}
	}
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("report: %w", err))
	}
	return exitcode.ForStatus(d.Status)
}

// runDirOutput is where the report of run directory dir goes: its
// report.html when absent or force, else the first free report-N.html, so
// the report `bottleneck run` wrote is never silently replaced.
func runDirOutput(dir string, force bool) string {
	out := filepath.Join(dir, rundir.ReportHTML)
	for n := 2; !force; n++ {
		if _, err := os.Lstat(out); errors.Is(err, fs.ErrNotExist) {
			break
		}
		out = filepath.Join(dir, fmt.Sprintf("report-%d.html", n))
	}
	return out
}
