// Package export implements `bottleneck export`: the traces, their
// analyses and a run directory's Python profile in the formats other tools
// read (pprof, speedscope, folded stacks, SVG, Chrome/Perfetto trace, CSV,
// Markdown). The rendering is internal/export; this package finds the
// inputs and writes the output.
package export

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
	"github.com/bottleneck-dev/bottleneck/internal/cli/cmdutil"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/export"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
)

// Options are the command's flags and arguments.
type Options struct {
	IO            *iostreams.IOStreams
	Path          string
	Format        string
	Output        string
	Stacks        string
	Rank          int
	MaxNodes      int
	MaxEvents     int
	MinDurationUs float64
	Top           int
	Table         string
	Role          string
}

// NewCmd returns the export command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios}, Run)
}

// newCmd parses the command line into o and hands it to runF: Run, or a
// test's recorder, so that parsing is tested without running the command.
// Usage errors are found here, before runF (exit 2).
func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export PATH --format FORMAT [-o FILE]",
		Short: "Write traces and profiles for pprof, speedscope, Perfetto, flame graphs, CSV or Markdown",
		Long: `Export a trace, a directory of traces or a run directory (written by
bottleneck run: traces plus the Python profile) to another tool's format.

Formats (docs/export.md):
  pprof       gzipped profile.proto: host and device time over op stacks, or
              the Python profile's wall samples (--stacks python); open with
              go tool pprof -http=: FILE
  speedscope  speedscope JSON: host/device time, per-thread timelines and the
              Python profile per thread role; open at https://www.speedscope.app
  folded      folded stacks for flamegraph.pl / inferno
  svg         a static SVG flame graph
  perfetto    Chrome trace JSON of the recorded window, trimmed to --max-events,
  chrome      with steps, GPU idle gaps, blocking syncs and findings as tracks;
              open in https://ui.perfetto.dev or chrome://tracing
  csv         the report's tables: --table NAME to stdout, or every table into
              the directory -o DIR
  markdown    a summary for a pull-request comment

Output goes to stdout unless -o FILE is given (pprof needs -o or a pipe).
Exit status: 0 ok, 3 some input was damaged, 1 failure, 2 bad usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			if o.Format == export.CSV && o.Table == "" && o.Output == "" {
				return exitcode.New(exitcode.Usage, fmt.Errorf("csv: name a table (--table %s) or a directory for all of them (-o DIR)", strings.Join(export.Tables, "|")))
			}
			if o.Format == export.Pprof && o.Output == "" && o.IO.IsStdoutTTY() {
				return exitcode.New(exitcode.Usage, errors.New("pprof output is binary: give -o FILE or redirect stdout"))
			}
			return runF(o)
		},
	}
	f := cmd.Flags()
	cmdutil.StringEnumFlag(cmd, &o.Format, "format", "f", "", export.Formats, "output format")
	f.StringVarP(&o.Output, "output", "o", "", "write to `FILE` (a directory for csv without --table)")
	cmdutil.StringEnumFlag(cmd, &o.Stacks, "stacks", "", "", export.StackSources, "stacks for pprof, speedscope, folded, svg: ops (host time), device, python (default ops when a trace was read, else python)")
	cmdutil.IntRangeFlag(cmd, &o.Rank, "rank", -1, 0, math.MaxInt, "the trace of this rank (default the first)")
	cmdutil.NonNegativeIntFlag(cmd, &o.MaxNodes, "max-nodes", 0, "cap flame graphs (folded, svg) at `N` nodes, merging the smallest into (other)")
	cmdutil.NonNegativeIntFlag(cmd, &o.MaxEvents, "max-events", export.DefaultMaxEvents, "chrome/perfetto: at most `N` events")
	cmdutil.NonNegativeFloatFlag(cmd, &o.MinDurationUs, "min-duration", 0, "chrome/perfetto: drop events shorter than `US` microseconds")
	cmdutil.NonNegativeIntFlag(cmd, &o.Top, "top", driver.DefaultTop, "rows per operator and kernel table: csv, markdown (0: all)")
	cmdutil.StringEnumFlag(cmd, &o.Table, "table", "", "", export.Tables, "csv: the table to write")
	cmdutil.StringEnumFlag(cmd, &o.Role, "role", "", "", pyprofile.ThreadRoles, "python stacks: only threads of this role")
	_ = cmd.MarkFlagRequired("format")
	return cmd
}

// Run executes export with o.
func Run(o *Options) error {
	format := o.Format
	// The path is opened as every command opens it: a run directory, a
	// trace, a Python profile, or a directory of traces and profiles.
	dopts := driver.DefaultOptions()
	dopts.Table.Top = o.Top
	d, err := driver.Open(o.IO, []string{o.Path}, dopts)
	if err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	in := &export.Input{}
	in.Python, in.PythonPath = pythonProfile(d)
	if len(d.Traces) > 0 || len(d.Report.Failures) > 0 {
		in.Traces, in.Report = d.Traces, d.Report
	}
	report.WriteProblems(o.IO.ErrOut, d.Report) // the damaged files and places
	status := d.Status
	if status != driver.Complete {
		if len(in.Traces) == 0 && in.Python == nil {
			return exitcode.New(exitcode.Failed, errors.New("no trace could be read"))
		}
		status = driver.Partial // something was exported
	}
	if in.Report != nil {
		ti := 0
		for i, t := range in.Report.Traces {
			if t.Rank == o.Rank {
				ti = i
			}
		}
		in.Verdict, in.Findings = export.FromDiagnosis(in.Report, ti)
	}
	eo := export.Options{
		Format: format, Stacks: o.Stacks, Rank: o.Rank, MaxNodes: o.MaxNodes, Role: o.Role,
		MaxEvents: o.MaxEvents, MinDurationNs: int64(o.MinDurationUs * 1000), Table: o.Table,
		Notes: func(s string) { fmt.Fprintf(o.IO.ErrOut, "bottleneck: %s\n", s) },
	}
	if format == export.CSV && o.Table == "" {
		if in.Report == nil {
			return exitcode.New(exitcode.Failed, errors.New("csv: no trace was read"))
		}
		paths, err := export.WriteCSVTables(o.Output, in.Report)
		if err != nil {
			return exitcode.New(exitcode.Failed, err)
		}
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: wrote %d tables into %s\n", len(paths), o.Output)
		return exitcode.ForStatus(status)
	}
	// Render into memory first so a failed export leaves no partial file.
	var buf bytes.Buffer
	if err := export.Generate(&buf, in, eo); err != nil {
		if errors.Is(err, export.ErrUsage) {
			return exitcode.New(exitcode.Usage, err)
		}
		return exitcode.New(exitcode.Failed, err) // nothing to export, or rendering failed
	}
	if err := writeOut(o, buf.Bytes()); err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	return exitcode.ForStatus(status)
}

func writeOut(o *Options, b []byte) error {
	if o.Output == "" || o.Output == "-" {
		_, err := o.IO.Out.Write(b)
		return err
	}
	if err := atomicfile.Write(o.Output, b); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "bottleneck: wrote %s (%d bytes)\n", o.Output, len(b))
	return nil
}

// pythonProfile is the Python profile export draws: the main process's,
// else the first process's by tag (of a run directory, or of the profiles
// given or found beside traces).
func pythonProfile(d *driver.Data) (*pyprofile.Profile, string) {
	var tags []string
	if len(d.Runs) == 1 {
		for _, pf := range d.Runs[0].Processes { // in rundir.TagLess order
			if pf.Profile != nil {
				tags = append(tags, pf.Tag)
			}
		}
	} else {
		tags = slices.Sorted(maps.Keys(d.Profiles))
	}
	if len(tags) == 0 {
		return nil, ""
	}
	best := tags[0]
	if slices.Contains(tags, "main") {
		best = "main"
	}
	return d.Profiles[best], d.ProfileFiles[best]
}
