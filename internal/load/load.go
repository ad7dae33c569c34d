// Package load turns command-line paths into parsed traces: it expands
// directories written by tensorboard_trace_handler, reads the files
// (concurrently, bounded), and assigns ranks.
package load

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Failure is a file that could not be read at all.
type Failure struct {
	Path string
	Err  error
}

// Result is what was loaded.
type Result struct {
	Traces   []*trace.Trace // sorted by rank, then path
	Failures []Failure
	// Skipped lists directory entries that were not traces, with why.
	Skipped []Failure
}

// Options tune loading.
type Options struct {
	// Progress, when set, receives the total uncompressed bytes read so far.
	Progress func(total int64)
	// Parallel bounds how many files are read at once (default 2).
	Parallel int
	// Budget, when set, is told the expected uncompressed size of all the
	// input before reading starts.
	Budget func(totalBytes int64)
	// Parsed is passed to every read (kineto.Options.Parsed).
	Parsed func(*trace.Trace)
	// AnalysesOnly is passed to every read (kineto.Options.AnalysesOnly).
	AnalysesOnly bool
	// Each, when set, is given every trace read (its rank assigned) as
	// soon as it is read, on the reading goroutine, and the trace is not
	// kept: Result.Traces stays empty, and at most Parallel traces are
	// in memory at once.
	Each func(*trace.Trace)
}

// Expand resolves paths to trace files: files (and pipes, and "-" for
// stdin) are taken as given (any name; content decides), directories
// contribute their *.json and *.json.gz regular files (recursively) but
// for the files a run directory holds beside its traces (rundir.FileKind):
// its Python profiles (pyprofile-<tag>.json) are listed in profiles, the
// others (manifest, environment, evidence, reports, DataLoader worker
// profiles) left out. A path that does not exist, or a directory with
// neither traces nor Python profiles, is a failure; the other paths are
// still expanded.
func Expand(paths []string) (files, profiles []string, skipped, failed []Failure) {
	for _, p := range paths {
		if p == kineto.Stdin {
			files = append(files, p)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			failed = append(failed, Failure{p, err})
			continue
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		found, pys, skip, fail := walk(p)
		skipped = append(skipped, skip...)
		failed = append(failed, fail...)
		profiles = append(profiles, pys...)
		if len(found) == 0 && len(pys) == 0 && len(fail) == 0 {
			failed = append(failed, Failure{p, errors.New("no trace files (*.json, *.json.gz) in this directory")})
			continue
		}
		files = append(files, found...)
	}
	return files, profiles, skipped, failed
}

// walk lists the trace files under dir in order. Entries that are not
// regular files (a FIFO would block the read forever) are skipped with a
// note, as are profiler traces in a format not read. A subdirectory that
// cannot be listed, or a trace name that cannot be opened (a dangling
// link), is a failure: it may hold traces, so the input is incomplete.
func walk(dir string) (found, profiles []string, skipped, failed []Failure) {
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			failed = append(failed, Failure{path, err})
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && strings.HasPrefix(name, rundir.WorkersDirName("")) {
				return filepath.SkipDir // DataLoader workers' profiles, no traces
			}
			return nil
		}
		kind, _ := rundir.FileKind(name)
		switch {
		case kind == rundir.KindPyProfile:
			profiles = append(profiles, path)
		case kind != rundir.KindTrace && kind != rundir.KindOther:
			// the run directory's manifest, environment, evidence, reports
		case strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".json.gz"):
			if st, err := os.Stat(path); err != nil {
				failed = append(failed, Failure{path, err})
			} else if !st.Mode().IsRegular() {
				skipped = append(skipped, Failure{path, fmt.Errorf("not a regular file (%s)", st.Mode().Type())})
			} else {
				found = append(found, path)
			}
		case strings.Contains(name, ".pt.trace"):
			skipped = append(skipped, Failure{path, errors.New("not a .json or .json.gz file")})
		}
		return nil
	})
	slices.Sort(found)
	slices.Sort(profiles)
	return found, profiles, skipped, failed
}

// Load expands paths and reads every trace. Paths that cannot be read are
// listed in the result's Failures.
func Load(paths []string, opts Options) (*Result, error) {
	files, _, skipped, failed := Expand(paths)
	res := &Result{Skipped: skipped, Failures: failed}
	if opts.Budget != nil {
		var total int64
		for _, f := range files {
			total += kineto.SizeHint(f)
		}
		opts.Budget(total)
	}
	par := opts.Parallel
	if par <= 0 {
		par = 2
	}
	traces := make([]*trace.Trace, len(files))
	errs := make([]error, len(files))
	var total atomic.Int64
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var last int64
			ko := kineto.Options{Parsed: opts.Parsed, AnalysesOnly: opts.AnalysesOnly}
			if opts.Progress != nil {
				ko.Progress = func(n int64) {
					opts.Progress(total.Add(n - last))
					last = n
				}
			}
			traces[i], errs[i] = kineto.ReadFile(f, ko)
			if opts.Each != nil && errs[i] == nil {
				assignRank(traces[i])
				opts.Each(traces[i])
				traces[i] = nil
			}
		}()
	}
	wg.Wait()
	for i, t := range traces {
		if errs[i] != nil {
			res.Failures = append(res.Failures, Failure{files[i], errs[i]})
			continue
		}
		if t == nil { // given to Each
			continue
		}
		assignRank(t)
		res.Traces = append(res.Traces, t)
	}
	slices.SortStableFunc(res.Traces, func(a, b *trace.Trace) int {
		if a.Rank != b.Rank {
			return a.Rank - b.Rank
		}
		return strings.Compare(a.Path, b.Path)
	})
	return res, nil
}

// workerRank finds a rank in a tensorboard_trace_handler file name
// ("<worker>.<timestamp>.pt.trace.json"): "rank-3", "rank3", "worker3".
var workerRank = regexp.MustCompile(`(?i)(?:^|[^a-z])(?:rank|worker)[-_]?(\d+)`)

// assignRank takes the rank from distributedInfo, else from the file name.
func assignRank(t *trace.Trace) {
	base := filepath.Base(t.Path)
	if i := strings.Index(base, ".pt.trace"); i > 0 {
		t.Worker = base[:i]
		if j := strings.LastIndexByte(t.Worker, '.'); j > 0 {
			t.Worker = t.Worker[:j]
		}
	}
	if d := t.Meta.Distributed; d != nil && d.HasRank {
		t.Rank, t.RankSource = d.Rank, "distributedInfo"
		return
	}
	name := t.Worker
	if name == "" {
		name = strings.TrimSuffix(strings.TrimSuffix(base, ".gz"), ".json")
	}
	if m := workerRank.FindStringSubmatch(name); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			t.Rank, t.RankSource = n, "file name"
		}
	}
}
