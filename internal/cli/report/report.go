// Package report implements `bottleneck report`: the self-contained HTML
// report of a run directory or of traces.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
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
	return newCmd(&Options{IO: ios}, Run)
}

// newCmd parses the command line into o and hands it to runF: Run, or a
// test's recorder, so that parsing is tested without running the command.
// Usage errors are found here, before runF (exit 2).
func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
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
			return runF(o)
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
	out := o.HTML
	if out == "" && (len(o.Paths) != 1 || !rundir.Is(o.Paths[0])) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("report: -o FILE is required unless PATH is one run directory"))
	}
	dopts := driver.DefaultOptions()
	dopts.Table.Top = o.Top
	d, err := driver.Open(o.IO, o.Paths, dopts)
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("report: %w", err))
	}
	for _, note := range d.InterruptedNotes() {
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: %s\n", textreport.Printable(note))
	}
	title := o.Title
	if title == "" {
		title = d.Title
	}
	page := htmlreport.Build(htmlreport.Input{Report: d.Report, Traces: d.Traces, Profiles: d.Profiles, Env: d.Env, Runs: d.Runs},
		htmlreport.Options{Title: title})
	switch out {
	case "-":
		err = htmlreport.Write(o.IO.Out, page)
	case "":
		var b bytes.Buffer
		if err = htmlreport.Write(&b, page); err == nil {
			out, err = writeRunDirReport(o.Paths[0], b.Bytes(), o.Force)
		}
	default:
		err = htmlreport.WriteFile(out, page)
	}
	if err == nil && out != "-" {
		fmt.Fprintf(o.IO.ErrOut, "wrote %s\n", out)
	}
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("report: %w", err))
	}
	if d.Status != driver.Complete {
		textreport.WriteProblems(o.IO.ErrOut, d.Report)
	}
	return exitcode.ForStatus(d.Status)
}

// writeRunDirReport writes the report of run directory dir and returns
// its path: report.html when absent (replaced with force), else the first
// free report-N.html, so the report `bottleneck run` wrote is never
// replaced. Each name is taken exclusively (atomicfile.WriteNew), so
// concurrent reports of one directory each get a file of their own.
func writeRunDirReport(dir string, page []byte, force bool) (string, error) {
	out := filepath.Join(dir, rundir.ReportHTML)
	if force {
		return out, atomicfile.Write(out, page)
	}
	for n := 2; ; n++ {
		err := atomicfile.WriteNew(out, page)
		if !errors.Is(err, fs.ErrExist) {
			return out, err
		}
		out = filepath.Join(dir, fmt.Sprintf("report-%d.html", n))
	}
}
