package driver

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/load"
	"github.com/bottleneck-dev/bottleneck/internal/report"
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
	files, skipped, failed := load.Expand(paths)
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
				s, err := summarizeOne(files[i], i, len(files), host)
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

// summarizeOne reads, analyses and summarises one trace, then drops it.
func summarizeOne(path string, position, files int, host string) (*summary.Summary, error) {
	res, err := load.Load([]string{path}, load.Options{AnalysesOnly: true, Parallel: 1})
	if err != nil {
		return nil, err
	}
	if len(res.Failures) > 0 {
		return nil, fmt.Errorf("%s", res.Failures[0].Err)
	}
	if len(res.Traces) != 1 {
		return nil, fmt.Errorf("%s: no trace read", path)
	}
	t := res.Traces[0]
	if len(t.Problems.List) > 0 {
		for _, p := range t.Problems.List {
			if p.Fatal {
				return nil, fmt.Errorf("%s: at byte %d: %s", path, p.Offset, p.What)
			}
		}
	}
	tr := analyzeTrace(t, DefaultOptions(), files)
	s := summary.FromAnalyses(t, tr.Breakdown, tr.Diagnosis, host)
	if s.Rank < 0 {
		s.Rank = position
	}
	s.Tool = version.Version
	return s, nil
}
