package repro

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Written is what WriteDir did.
type Written struct {
	// Trace is the trace the scripts come from; Dir where they went.
	Trace, Dir string
	// Scripts are the ops in order, those with Err unwritten.
	Scripts []Script
	// Partial: some input could not be read (the loader's failures).
	Partial bool
}

// Failed is how many ops got no script.
func (w *Written) Failed() int {
	n := 0
	for _, s := range w.Scripts {
		if s.Err != nil {
			n++
		}
	}
	return n
}

// DefaultDir is where scripts go without -o: the run directory's repro/,
// else bottleneck-repro/ in the working directory.
func DefaultDir(path string) string {
	if rundir.Is(path) {
		return filepath.Join(path, rundir.ReproDirName)
	}
	return "bottleneck-repro"
}

// WriteDir reads path (a run directory written by `bottleneck run`, or a
// trace file), through the loader every command uses, and writes the
// scripts of its first trace (lowest rank) into outDir (DefaultDir when
// ""). A run directory's env.json supplies the settings. The error is for
// input that could not be read or an o.Op the trace lacks; ops that got no
// script carry their Err in the result.
func WriteDir(ios *iostreams.IOStreams, path, outDir string, o Options) (*Written, error) {
	paths := []string{path}
	var run *rundir.Run
	if rundir.Is(path) {
		var err error
		if run, err = rundir.Read(path); err != nil {
			return nil, err
		}
		if len(run.Traces) == 0 {
			return nil, fmt.Errorf("%s: the run directory has no trace (run without --no-trace)", path)
		}
		paths = run.Traces
	}
	res, _, err := driver.Load(ios, paths, false)
	if err != nil {
		return nil, err
	}
	if len(res.Traces) == 0 {
		var problems []report.FileProblem
		for _, f := range res.Failures {
			problems = append(problems, report.FileProblem{Path: f.Path, Error: f.Err.Error()})
		}
		if err := driver.NothingRead(problems); err != nil {
			return nil, err
		}
		return nil, errors.New(path + ": no trace read")
	}
	return Write(res.Traces[0], run, path, outDir, len(res.Failures) > 0, o)
}

// Write writes the scripts of trace t, read from path (a run directory,
// whose run is run, or a trace file), into outDir (DefaultDir when "").
// partial: some of the input could not be read.
func Write(t *trace.Trace, run *rundir.Run, path, outDir string, partial bool, o Options) (*Written, error) {
	if outDir == "" {
		outDir = DefaultDir(path)
	}
	var settings Settings
	if run != nil {
		settings = SettingsFromEnv(run.Env, filepath.Join(path, "env.json"), fmt.Sprintf("rank%d", max(t.Rank, 0)))
	}
	scripts, err := Generate(t, settings, o)
	if err != nil {
		return nil, err
	}
	w := &Written{Trace: t.Path, Dir: outDir, Scripts: scripts, Partial: partial}
	if len(scripts) == len(scriptsWithErr(scripts)) {
		return w, nil
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, err
	}
	for _, s := range scripts {
		if s.Err != nil {
			continue
		}
		p := filepath.Join(outDir, s.FileName)
		if err := atomicfile.Write(p, s.Source); err != nil {
			return nil, err
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return nil, err
		}
	}
	return w, nil
}

func scriptsWithErr(s []Script) []Script {
	var out []Script
	for _, x := range s {
		if x.Err != nil {
			out = append(out, x)
		}
	}
	return out
}
