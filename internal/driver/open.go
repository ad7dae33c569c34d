package driver

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/load"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

// DefaultTop is the number of rows per operator and kernel table in every
// command's report (--top), so that the same input gives the same tables.
const DefaultTop = 20

// DefaultOptions are the options every command starts from.
func DefaultOptions() Options {
	return Options{Rank: -1, Table: optable.Options{Top: DefaultTop}}
}

// Data is everything read from the paths given to a command, and the
// report built from it.
type Data struct {
	Report *report.Report
	Traces []*trace.Trace
	// Runs are the run directories among the paths.
	Runs []*rundir.Run
	// Profiles are the runs' Python profiles by process tag (prefixed by
	// the run directory's name when several runs were given), and those
	// given as files or found in directories of traces (by tag, else by
	// path); ProfileFiles are their files, by the same keys.
	Profiles     map[string]*pyprofile.Profile
	ProfileFiles map[string]string
	// Env is the environment summary (env.json) of a single run.
	Env json.RawMessage
	// Title names the input: the run directory, or the first path.
	Title string
	// Status says how much of the input could be read.
	Status Status
}

// Open reads paths, any mix of run directories (written by `bottleneck
// run`), trace files, Python profiles (pyprofile.IsFile) and directories
// of traces (with their Python profiles, load.Expand), and builds the
// report: for a run directory its traces, with the run's evidence and
// Python profiles feeding the diagnosis. Every command calls it, so the
// same input gives the same verdict in every output. o.RunEvidence, when
// set, replaces the evidence read from the run directories.
func Open(ios *iostreams.IOStreams, paths []string, o Options) (*Data, error) {
	d := &Data{Profiles: map[string]*pyprofile.Profile{}, ProfileFiles: map[string]string{}}
	var tracePaths, pyPaths []string
	evidence := map[int]*runevidence.RunEvidence{}
	for _, p := range paths {
		if !rundir.Is(p) {
			if pyprofile.IsFile(p) {
				pyPaths = append(pyPaths, p)
			} else {
				tracePaths = append(tracePaths, p)
			}
			continue
		}
		run := o.Run
		if run == nil || filepath.Clean(run.Dir) != filepath.Clean(p) {
			var err error
			if run, err = rundir.Read(p); err != nil {
				return nil, err
			}
		}
		d.Runs = append(d.Runs, run)
		tracePaths = append(tracePaths, run.Traces...)
		for rank, ev := range runevidence.FromRun(run) {
			if _, dup := evidence[rank]; !dup { // several runs: the first one's rank wins
				evidence[rank] = ev
			}
		}
	}
	for _, run := range d.Runs {
		for _, pf := range run.Processes {
			if pf.Profile == nil {
				continue
			}
			tag := pf.Tag
			if len(d.Runs) > 1 {
				tag = filepath.Base(filepath.Clean(run.Dir)) + "/" + tag
			}
			d.Profiles[tag] = pf.Profile
			d.ProfileFiles[tag] = filepath.Join(run.Dir, rundir.PyProfileName(pf.Tag))
		}
	}
	if len(d.Runs) == 1 {
		d.Env = d.Runs[0].Env
	}
	if o.RunEvidence == nil {
		o.RunEvidence = evidence
	}
	d.Title = title(paths)
	files, dirProfiles, _, failed := load.Expand(tracePaths)
	switch {
	case len(files) == 0 && len(failed) == 0:
		// run directories without traces (--no-trace, a crash before the
		// window), Python profiles alone
		d.Report = &report.Report{Schema: report.Schema, Tool: version.Version, Inputs: []report.Input{}, Traces: []report.TraceReport{}}
		d.Status = Complete
	case o.analysesOnly && len(d.Runs) == 0 && len(files) >= StreamRanks:
		// many ranks: each read, analysed and dropped (d.Traces stays empty)
		var err error
		if d.Report, err = buildStreaming(ios, tracePaths, len(files), o); err != nil {
			return nil, err
		}
		d.Status = StatusOf(d.Report)
	default:
		res, took, err := Load(ios, tracePaths, o.analysesOnly)
		if err != nil {
			return nil, err
		}
		agentStepNumbers(d.Runs, res.Traces)
		d.Report = Build(res, took, o)
		d.Traces = res.Traces
		d.Status = StatusOf(d.Report)
	}
	d.readProfiles(append(pyPaths, dirProfiles...))
	return d, nil
}

// readProfiles reads Python profiles given as files or found among
// traces into d.Profiles, keyed by their tag (pyprofile-<tag>.json), else
// their path; one that cannot be read is a failure of the report.
func (d *Data) readProfiles(paths []string) {
	for _, path := range paths {
		p, err := pyprofile.ReadFile(path)
		if err != nil {
			d.Report.Failures = append(d.Report.Failures, report.FileProblem{Path: path, Error: err.Error()})
			if d.Status == Complete {
				d.Status = Partial
			}
			continue
		}
		key := path
		if kind, tag := rundir.FileKind(filepath.Base(path)); kind == rundir.KindPyProfile {
			if _, taken := d.Profiles[tag]; !taken {
				key = tag
			}
		}
		d.Profiles[key], d.ProfileFiles[key] = p, path
	}
	if len(d.Report.Inputs) == 0 && len(d.Runs) == 0 && len(d.Profiles) == 0 && len(d.Report.Failures) > 0 {
		d.Status = Unreadable // nothing at all could be read
	}
}

// InterruptedNotes are the notes of the run directories read whose
// bottleneck ended before the run did (rundir.Run.InterruptedNote).
func (d *Data) InterruptedNotes() []string {
	var notes []string
	for _, run := range d.Runs {
		if n := run.InterruptedNote(); n != "" {
			notes = append(notes, n)
		}
	}
	return notes
}

func title(paths []string) string {
	t := "bottleneck: " + filepath.Base(filepath.Clean(paths[0]))
	if len(paths) > 1 {
		t += fmt.Sprintf(" and %d more", len(paths)-1)
	}
	return t
}

// agentStepNumbers numbers the steps of each run directory's traces as
// the agent numbered them (rundir.Run.FirstWindowStep), so the verdict's
// "steps 8-12 used" and the run's "window 1: steps 8-12" are the same
// steps.
func agentStepNumbers(runs []*rundir.Run, traces []*trace.Trace) {
	for _, t := range traces {
		if t.SyntheticStep || t.StepMarks != "" || len(t.Steps) == 0 {
			continue
		}
		for _, run := range runs {
			if first, ok := run.FirstWindowStep(t.Path); ok {
				off := first - t.Steps[0].Num
				for i := range t.Steps {
					t.Steps[i].Num += off
				}
				break
			}
		}
	}
}
