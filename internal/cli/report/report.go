// Package report implements `bottleneck report`: the self-contained HTML
// report of a run directory or of traces.
package report

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
	"github.com/bottleneck-dev/bottleneck/internal/serve"
)

// Options are the command's flags and arguments.
type Options struct {
	IO    *iostreams.IOStreams
	Paths []string
	HTML  string
	Top   int
	Title string
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

PATH is a run directory written by 'bottleneck run' (then the Python
profile and environment are included and the default output is
PATH/report.html) or trace files and directories of traces.

Exit status: 0 all input read fully; 3 read with problems; 1 nothing could
be read; 2 bad usage.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Paths = args
			return Run(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.HTML, "html", "", "write the report to `FILE` (\"-\": standard output; default PATH/report.html for a run directory)")
	f.IntVar(&o.Top, "top", 500, "rows per operator and kernel table (0: all)")
	f.StringVar(&o.Title, "title", "", "page title")
	return cmd
}

// Run executes report with o.
func Run(o *Options) error {
	out := o.HTML
	if out == "" {
		if len(o.Paths) == 1 && isRunDir(o.Paths[0]) {
			out = filepath.Join(o.Paths[0], "report.html")
		} else {
			return exitcode.New(exitcode.Usage, fmt.Errorf("report: --html FILE is required unless PATH is one run directory"))
		}
	}
	p, err := serve.Load(o.IO, o.Paths, serve.LoadOptions{Top: o.Top, Page: htmlreport.Options{Title: o.Title}})
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("report: %w", err))
	}
	if out == "-" {
		err = htmlreport.Write(o.IO.Out, p.Data)
	} else {
		err = htmlreport.WriteFile(out, p.Data)
		if err == nil {
			fmt.Fprintf(o.IO.ErrOut, "wrote %s\n", out)
		}
	}
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("report: %w", err))
	}
	if p.Status != exitcode.OK {
		return exitcode.New(p.Status, nil)
	}
	return nil
}

func isRunDir(p string) bool {
	_, err := os.Stat(filepath.Join(p, runner.ManifestName))
	return err == nil
}
