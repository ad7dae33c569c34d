// Package export renders traces, their analyses and Python profiles into
// the formats other tools read: pprof, speedscope, folded stacks, an SVG
// flame graph, a trimmed Chrome/Perfetto trace with analysis tracks, CSV
// tables and a Markdown summary. One Generate switch picks the renderer;
// each format lives in its own file. The package never reads files: the
// caller (internal/cli/export) loads the inputs.
package export

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/flame"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Formats, in help order.
const (
	Pprof      = "pprof"
	Speedscope = "speedscope"
	Folded     = "folded"
	SVG        = "svg"
	Chrome     = "chrome"
	Perfetto   = "perfetto" // the same Chrome trace JSON
	CSV        = "csv"
	Markdown   = "markdown"
)

// Formats lists every format name.
var Formats = []string{Pprof, Speedscope, Folded, SVG, Perfetto, Chrome, CSV, Markdown}

// Stack sources for the flame formats.
const (
	StacksAuto   = ""       // ops when a trace was read, else python
	StacksOps    = "ops"    // op call stacks weighted by host time
	StacksDevice = "device" // op call stacks weighted by the device time they launched
	StacksPython = "python" // the Python sampler profile
)

// StackSources lists the --stacks values.
var StackSources = []string{StacksOps, StacksDevice, StacksPython}

// Finding is an analysis result worth a mark on a timeline or a line in a
// summary. The diagnosis fills them; exports draw what they are given.
type Finding struct {
	Severity string // "high", "medium", "low" or ""
	Title    string
	Detail   string
	// StartNs and DurNs place the finding on trace t's clock (ns since the
	// file's origin); DurNs 0 is an instant, StartNs < 0 no place.
	StartNs, DurNs int64
}

// Input is what an export draws from. Any part may be missing.
type Input struct {
	Traces []*trace.Trace // sorted by rank, as load returns them
	Report *report.Report // the analyses of Traces (driver.Build)
	// Python is the Python sampler profile of a run directory.
	Python     *pyprofile.Profile
	PythonPath string
	// Verdict and Findings, when the diagnosis produced them.
	Verdict  string
	Findings []Finding
}

// Options choose what to export.
type Options struct {
	Format string
	// Stacks selects the stacks of pprof, speedscope, folded and svg (see
	// StackSources). pprof and speedscope hold host and device time
	// together for "ops" and "device"; speedscope also adds the Python
	// profile when there is one.
	Stacks string
	// Rank picks the trace for single-trace formats (-1: the first).
	Rank int
	// MaxNodes caps flame graphs (folded, svg); 0: flame.DefaultMaxNodes
	// for svg, no limit for folded.
	MaxNodes int
	// Role restricts Python stacks to one thread role ("" all).
	Role string
	// MaxEvents is the Chrome trace's budget of trace events (0:
	// DefaultMaxEvents).
	MaxEvents int
	// MinDurationNs drops trace events shorter than this from the Chrome
	// trace even when they fit the budget.
	MinDurationNs int64
	// Table names the CSV table written by Generate (see Tables).
	Table string
	// Notes receives one line per thing the export left out or chose
	// (dropped events, the trace picked); nil: discarded.
	Notes func(string)
}

// ErrNoInput is returned when the inputs lack what the format needs.
var ErrNoInput = errors.New("nothing to export")

// ErrUsage is returned for options that name no format, table or stack
// source there is (bad usage); any other error is a failure to render.
var ErrUsage = errors.New("bad usage")

func (o *Options) note(format string, args ...any) {
	if o.Notes != nil {
		o.Notes(fmt.Sprintf(format, args...))
	}
}

// Generate writes in as o.Format to w. CSV writes the one table o.Table;
// WriteCSVTables writes them all.
func Generate(w io.Writer, in *Input, o Options) error {
	switch strings.ToLower(o.Format) {
	case Pprof:
		return writePprof(w, in, &o)
	case Speedscope:
		return writeSpeedscope(w, in, &o)
	case Folded:
		return writeFolded(w, in, &o)
	case SVG:
		return writeSVG(w, in, &o)
	case Chrome, Perfetto:
		_, err := WriteChrome(w, in, o)
		return err
	case CSV:
		return writeCSVTable(w, in, &o)
	case Markdown:
		return writeMarkdown(w, in, &o)
	}
	return fmt.Errorf("%w: unknown format %q (want one of %s)", ErrUsage, o.Format, strings.Join(Formats, ", "))
}

// pickTrace returns the trace single-trace formats use.
func pickTrace(in *Input, o *Options) (*trace.Trace, int, error) {
	if len(in.Traces) == 0 {
		return nil, -1, fmt.Errorf("%w: no trace was read", ErrNoInput)
	}
	if o.Rank >= 0 {
		i := slices.IndexFunc(in.Traces, func(t *trace.Trace) bool { return t.Rank == o.Rank })
		if i < 0 {
			return nil, -1, fmt.Errorf("%w: no trace has rank %d", ErrNoInput, o.Rank)
		}
		return in.Traces[i], i, nil
	}
	if len(in.Traces) > 1 {
		o.note("%d traces read; exporting %s (pick another with --rank)", len(in.Traces), in.Traces[0].Path)
	}
	return in.Traces[0], 0, nil
}

// stacksSource resolves StacksAuto.
func stacksSource(in *Input, o *Options) (string, error) {
	s := o.Stacks
	if s == StacksAuto {
		if len(in.Traces) > 0 {
			return StacksOps, nil
		}
		if in.Python != nil {
			return StacksPython, nil
		}
		return "", fmt.Errorf("%w: no trace or Python profile", ErrNoInput)
	}
	if !slices.Contains(StackSources, s) {
		return "", fmt.Errorf("%w: unknown stacks %q (want one of %s)", ErrUsage, s, strings.Join(StackSources, ", "))
	}
	if s == StacksPython && in.Python == nil {
		return "", fmt.Errorf("%w: no Python profile (pyprofile-*.json in a run directory)", ErrNoInput)
	}
	return s, nil
}

// tree builds the flame graph the options select.
func tree(in *Input, o *Options) (*flame.Tree, string, error) {
	src, err := stacksSource(in, o)
	if err != nil {
		return nil, "", err
	}
	if src == StacksPython {
		if in.Python.Profiler != "sample" && in.Python.Profiler != "" {
			o.note("the Python profile is from %s: no call stacks, one frame per function", in.Python.Profiler)
		}
		return flame.FromPyProfile(in.Python, flame.PyOptions{Role: o.Role}), src, nil
	}
	t, _, err := pickTrace(in, o)
	if err != nil {
		return nil, "", err
	}
	w := flame.HostTime
	if src == StacksDevice {
		w = flame.DeviceTime
	}
	return flame.FromTrace(t, flame.TraceOptions{Weight: w}), src, nil
}

func writeFolded(w io.Writer, in *Input, o *Options) error {
	t, _, err := tree(in, o)
	if err != nil {
		return err
	}
	if o.MaxNodes > 0 {
		if n := t.Limit(o.MaxNodes); n > 0 {
			o.note("merged %d small frames into %q to stay under %d nodes", n, flame.Other, o.MaxNodes)
		}
	}
	return t.WriteFolded(w)
}
