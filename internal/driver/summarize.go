package driver

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/load"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

// Summaries are the rank summaries of traces, and what could not be read.
type Summaries struct {
	// Summaries are one per trace read, in the order of the files.
	Summaries []*summary.Summary
	// Failures are the files that could not be read; Skipped those left out.
	Failures []report.FileProblem
	Skipped  []report.FileProblem
}

// Summarize reads each trace of paths on its own, analyses it as analyze
// does and keeps only its rank summary: at most workers traces are in
// memory at once (0: half the CPUs, at least one). A trace without a rank
// (neither distributedInfo nor a rank in its file name) takes its
// position among the files, as analyze numbers it. host, when not empty,
// names the machine in every summary.
func Summarize(ios *iostreams.IOStreams, paths []string, host string, workers int) (*Summaries, error) {
	// a run directory contributes its traces, with the run's evidence and
	// step numbers, as analyze reads it
	var files []string
	var skipped, failed []load.Failure
	runOf := map[string]*rundir.Run{}
	for _, p := range paths {
		if !rundir.Is(p) {
			f, _, s, e := load.Expand([]string{p})
			files, skipped, failed = append(files, f...), append(skipped, s...), append(failed, e...)
			continue
		}
		run, err := rundir.Read(p)
		if err != nil {
			return nil, err
		}
		for _, t := range run.Traces {
			runOf[t] = run
		}
		files = append(files, run.Traces...)
	}
	out := &Summaries{Summaries: make([]*summary.Summary, len(files))}
	for _, f := range skipped {
		out.Skipped = append(out.Skipped, report.FileProblem{Path: f.Path, Error: f.Err.Error()})
	}
	for _, f := range failed {
		out.Failures = append(out.Failures, report.FileProblem{Path: f.Path, Error: f.Err.Error()})
	}
	if workers <= 0 {
		workers = max(1, runtime.GOMAXPROCS(0)/2)
	}
	problems := make([]*report.FileProblem, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(files)) {
		wg.Go(func() {
			for i := range next {
				s, err := summarizeOne(files[i], runOf[files[i]], i, len(files), host)
				if err != nil {
					problems[i] = &report.FileProblem{Path: files[i], Error: err.Error()}
					continue
				}
				out.Summaries[i] = s
			}
		})
	}
	prog := ios.StartProgress()
	for i := range files {
		prog.Update(fmt.Sprintf("summarising %d of %d traces", i+1, len(files)))
		next <- i
	}
	close(next)
	wg.Wait()
	prog.Done()
	kept := out.Summaries[:0]
	for i, s := range out.Summaries {
		if problems[i] != nil {
			out.Failures = append(out.Failures, *problems[i])
		}
		if s != nil {
			kept = append(kept, s)
		}
	}
	out.Summaries = kept
	return out, nil
}

// summarizeOne reads, analyses and summarises one trace (of run, when
// not nil), then drops it.
func summarizeOne(path string, run *rundir.Run, position, files int, host string) (*summary.Summary, error) {
	res, err := load.Load([]string{path}, load.Options{AnalysesOnly: true, Parallel: 1})
	if err != nil {
		return nil, err
	}
	if len(res.Failures) > 0 {
		err := res.Failures[0].Err
		if !strings.Contains(err.Error(), path) {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	if len(res.Traces) != 1 {
		return nil, fmt.Errorf("%s: no trace read", path)
	}
	t := res.Traces[0]
	for _, p := range t.Problems.List {
		if p.Fatal { // a summary of part of a rank would compare it unfairly with the others
			return nil, fmt.Errorf("%s: at byte %d: %s: the trace is cut short", path, p.Offset, p.What)
		}
	}
	o := DefaultOptions()
	if run != nil {
		agentStepNumbers([]*rundir.Run{run}, res.Traces)
		o.RunEvidence = runevidence.FromRun(run)
	}
	tr := analyzeTrace(t, o, files)
	s := summary.FromAnalyses(t, tr.Breakdown, tr.Diagnosis, host)
	if s.Rank < 0 {
		s.Rank = position
	}
	s.Tool = version.Version
	return s, nil
}
