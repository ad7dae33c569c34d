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
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/export"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
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
	Table         string
	Role          string
}

// NewCmd returns the export command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	o := &Options{IO: ios}
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
			return Run(o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Format, "format", "f", "", "output format: "+strings.Join(export.Formats, ", "))
	f.StringVarP(&o.Output, "output", "o", "", "write to `FILE` (a directory for csv without --table)")
	f.StringVar(&o.Stacks, "stacks", "", "stacks for pprof, speedscope, folded, svg: ops (host time), device, python (default ops when a trace was read, else python)")
	f.IntVar(&o.Rank, "rank", -1, "the trace of this rank (default the first)")
	f.IntVar(&o.MaxNodes, "max-nodes", 0, "cap flame graphs (folded, svg) at `N` nodes, merging the smallest into (other)")
	f.IntVar(&o.MaxEvents, "max-events", export.DefaultMaxEvents, "chrome/perfetto: at most `N` events")
	f.Float64Var(&o.MinDurationUs, "min-duration", 0, "chrome/perfetto: drop events shorter than `US` microseconds")
	f.StringVar(&o.Table, "table", "", "csv: the table to write: "+strings.Join(export.Tables, ", "))
	f.StringVar(&o.Role, "role", "", "python stacks: only threads of this role (main, pin_memory, other)")
	_ = cmd.MarkFlagRequired("format")
	return cmd
}

// Run executes export with o.
func Run(o *Options) error {
	format := strings.ToLower(o.Format)
	if !slices.Contains(export.Formats, format) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("--format %q: want one of %s", o.Format, strings.Join(export.Formats, ", ")))
	}
	if format == export.CSV && o.Table != "" && !slices.Contains(export.Tables, o.Table) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("--table %q: want one of %s", o.Table, strings.Join(export.Tables, ", ")))
	}
	if format == export.CSV && o.Table == "" && o.Output == "" {
		return exitcode.New(exitcode.Usage, fmt.Errorf("csv: name a table (--table %s) or a directory for all of them (-o DIR)", strings.Join(export.Tables, "|")))
	}
	if o.Stacks != "" && !slices.Contains(export.StackSources, o.Stacks) {
		return exitcode.New(exitcode.Usage, fmt.Errorf("--stacks %q: want one of %s", o.Stacks, strings.Join(export.StackSources, ", ")))
	}
	if format == export.Pprof && o.Output == "" && o.IO.IsStdoutTTY() {
		return exitcode.New(exitcode.Usage, errors.New("pprof output is binary: give -o FILE or redirect stdout"))
	}

	traces, pyPath, err := Inputs(o.Path)
	if err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	in := &export.Input{}
	status := exitcode.OK
	if pyPath != "" {
		p, err := pyprofile.ReadFile(pyPath)
		if err != nil {
			fmt.Fprintf(o.IO.ErrOut, "bottleneck: skipping the Python profile: %v\n", err)
			status = exitcode.Partial
		} else {
			in.Python, in.PythonPath = p, pyPath
		}
	}
	if len(traces) > 0 {
		res, took, err := driver.Load(o.IO, traces)
		if err != nil {
			return exitcode.New(exitcode.Failed, err)
		}
		in.Traces = res.Traces
		in.Report = driver.Build(res, took, driver.Options{Rank: -1, Table: optable.Options{Top: 0}})
		for _, f := range in.Report.Failures {
			fmt.Fprintf(o.IO.ErrOut, "bottleneck: %s: %s\n", f.Path, f.Error)
		}
		if s := driver.Status(in.Report); s != exitcode.OK {
			status = s
			if len(in.Traces) == 0 && in.Python == nil {
				return exitcode.New(exitcode.Failed, errors.New("no trace could be read"))
			}
			if s == exitcode.Failed {
				status = exitcode.Partial
			}
		}
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
		return done(status)
	}
	// Render into memory first so a failed export leaves no partial file.
	var buf bytes.Buffer
	if err := export.Generate(&buf, in, eo); err != nil {
		if errors.Is(err, export.ErrNoInput) {
			return exitcode.New(exitcode.Failed, err)
		}
		return exitcode.New(exitcode.Usage, err)
	}
	if err := writeOut(o, buf.Bytes()); err != nil {
		return exitcode.New(exitcode.Failed, err)
	}
	return done(status)
}

func done(status int) error {
	if status != exitcode.OK {
		return exitcode.New(status, nil)
	}
	return nil
}

func writeOut(o *Options, b []byte) error {
	if o.Output == "" || o.Output == "-" {
		_, err := o.IO.Out.Write(b)
		return err
	}
	tmp := o.Output + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, o.Output); err != nil {
		return err
	}
	fmt.Fprintf(o.IO.ErrOut, "bottleneck: wrote %s (%d bytes)\n", o.Output, len(b))
	return nil
}

// Inputs resolves PATH: a trace file, a Python profile file, a directory
// of traces, or a run directory (traces beside pyprofile-<tag>.json;
// manifest.json, env.json, report.json and other non-trace files are
// skipped). With several Python profiles the one tagged "main", else the
// first by name, is used.
func Inputs(path string) (traces []string, pyPath string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	if !st.IsDir() {
		if isPyProfile(path) {
			return nil, path, nil
		}
		return []string{path}, "", nil
	}
	var pys []string
	err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		name := d.Name()
		switch {
		case strings.HasPrefix(name, "pyprofile-") && strings.HasSuffix(name, ".json"):
			pys = append(pys, p)
		case nonTrace(name):
		case strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".json.gz"):
			traces = append(traces, p)
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	slices.Sort(pys)
	slices.Sort(traces)
	for _, p := range pys {
		if filepath.Base(p) == "pyprofile-main.json" {
			pyPath = p
		}
	}
	if pyPath == "" && len(pys) > 0 {
		pyPath = pys[0]
	}
	if len(traces) == 0 && pyPath == "" {
		return nil, "", fmt.Errorf("%s: no traces (*.json, *.json.gz) or Python profile (pyprofile-*.json)", path)
	}
	return traces, pyPath, nil
}

// nonTrace names the JSON files of a run directory that are not traces.
func nonTrace(name string) bool {
	switch name {
	case "manifest.json", "env.json", "report.json":
		return true
	}
	for _, p := range []string{"evidence-", "env-", "pyprofile-"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// isPyProfile reports whether a file is a bottleneck Python profile: by
// name, else by its first bytes.
func isPyProfile(path string) bool {
	if strings.HasPrefix(filepath.Base(path), "pyprofile-") && strings.HasSuffix(path, ".json") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	return bytes.Contains(head[:n], []byte(`"format": "`+pyprofile.Format+`"`)) || bytes.Contains(head[:n], []byte(`"format":"`+pyprofile.Format+`"`))
}
