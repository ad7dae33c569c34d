package pyprofile

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Worker is the "worker" object of a DataLoader worker's profile: which
// worker of which loader it was.
type Worker struct {
	WorkerID    *int   `json:"worker_id"`
	NumWorkers  *int   `json:"num_workers"`
	Dataset     string `json:"dataset"`
	StartMethod string `json:"start_method"`
	PPID        int    `json:"ppid"`
}

// Workers are the profiles of one process's DataLoader worker processes
// (one file per worker process, pyworkers-<tag>/<pid>.json), merged into
// one Profile: each worker's loop thread is a thread of role "worker",
// its other threads (queue feeder, ...) keep role "other".
type Workers struct {
	Profile   *Profile        `json:"-"`
	Processes []WorkerProcess `json:"processes"`
	// Errors are the files that could not be read.
	Errors []string `json:"errors,omitempty"`
}

// WorkerProcess is one worker process.
type WorkerProcess struct {
	PID    int    `json:"pid"`
	Worker Worker `json:"worker"`
	// Thread indexes its loop thread in Workers.Profile.Threads (-1: none
	// sampled yet).
	Thread    int     `json:"-"`
	DurationS float64 `json:"duration_s"`
}

// ReadWorkers reads and merges the worker profiles in dir. A missing dir
// is fs.ErrNotExist; unreadable files are listed in Errors and skipped.
func ReadWorkers(dir string) (*Workers, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ps []*Profile
	w := &Workers{}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p, err := ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			w.Errors = append(w.Errors, err.Error())
			continue
		}
		if p.Profiler != "sample" {
			continue
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 && len(w.Errors) == 0 {
		return nil, fmt.Errorf("%s: no worker profile: %w", dir, fs.ErrNotExist)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].StartUnix < ps[j].StartUnix })
	w.merge(ps)
	return w, nil
}

func (w *Workers) merge(ps []*Profile) {
	m := &Profile{Format: Format, Version: 1, Profiler: "sample", CPUClock: len(ps) > 0}
	ids := map[Frame]int{}
	type stackKey struct {
		thread int
		frames string
	}
	stacks := map[stackKey]int{}
	for _, p := range ps {
		if m.IntervalS == 0 {
			m.IntervalS, m.WindowIntervalS = p.IntervalS, p.IntervalS
		}
		m.CPUClock = m.CPUClock && p.CPUClock
		m.Samples += p.Samples
		m.SamplingCostS += p.SamplingCostS
		m.DurationS += p.DurationS
		wp := WorkerProcess{PID: p.PID, Thread: -1, DurationS: p.DurationS}
		if p.Worker != nil {
			wp.Worker = *p.Worker
		}
		tmap := make([]int, len(p.Threads))
		for i, t := range p.Threads {
			tmap[i] = len(m.Threads)
			if t.Role == "main" {
				t.Role = "worker"
				wp.Thread = len(m.Threads)
			}
			m.Threads = append(m.Threads, t)
		}
		w.Processes = append(w.Processes, wp)
		for _, s := range p.Stacks {
			fr := make([]int, len(s.Frames))
			var b strings.Builder
			for i, fi := range s.Frames {
				f := p.Frames[fi]
				id, ok := ids[f]
				if !ok {
					id = len(m.Frames)
					ids[f] = id
					m.Frames = append(m.Frames, f)
				}
				fr[i] = id
				b.Write(binary.AppendUvarint(nil, uint64(id)))
			}
			k := stackKey{tmap[s.Thread], b.String()}
			i, ok := stacks[k]
			if !ok {
				i = len(m.Stacks)
				stacks[k] = i
				m.Stacks = append(m.Stacks, Stack{Thread: k.thread, Frames: fr})
			}
			m.Stacks[i].Count += s.Count
			m.Stacks[i].CPUCount += s.CPUCount
			m.Stacks[i].WaitCount += s.WaitCount
		}
	}
	w.Profile = m
}

// fetchFile is torch's fetcher: a worker in it is fetching a batch (the
// dataset's __getitem__/__iter__, transforms, collate_fn); loopFile holds
// the worker loop.
const (
	fetchFile = "torch/utils/data/_utils/fetch.py"
	loopFile  = "torch/utils/data/_utils/worker.py"
)

// inLoop returns the frames of a worker's loop-thread stack inside the
// worker loop: a forked worker's stack starts with the parent's frames
// (the program's line that started the iterator), which are not the
// worker's work.
func (p *Profile) inLoop(s Stack) []int {
	for i := len(s.Frames) - 1; i >= 0; i-- {
		if strings.HasSuffix(strings.ReplaceAll(p.Frames[s.Frames[i]].File, "\\", "/"), loopFile) {
			return s.Frames[i+1:]
		}
	}
	return s.Frames
}

// busy reports whether a worker's loop-thread stack is producing a batch
// (in torch's fetcher or in the user's code: worker_init_fn, dataset)
// rather than waiting for indices or handing a batch over.
func (p *Profile) busy(frames []int) bool {
	for _, fi := range frames {
		f := strings.ReplaceAll(p.Frames[fi].File, "\\", "/")
		if strings.HasSuffix(f, fetchFile) || !IsLibraryFile(f) {
			return true
		}
	}
	return false
}

// WorkerSummary is what the reports and the diagnosis read of the
// workers: how much of their time they produced batches, and which of the
// program's lines that time went to.
type WorkerSummary struct {
	Processes int `json:"processes"`
	// Samples: samples of the workers' loop threads; BusyShare the share
	// of them producing a batch (fetching: dataset, transforms, collate),
	// the rest waiting for indices or handing batches over; CPUShare the
	// share of the busy samples on a CPU (-1: no CPU clock), WaitShare
	// runnable but waiting for one (the loop thread's schedstat; 0 where
	// not measured).
	Samples   int     `json:"samples"`
	BusyShare float64 `json:"busy_share"`
	CPUShare  float64 `json:"busy_cpu_share"`
	WaitShare float64 `json:"busy_wait_share,omitempty"`
	// Lines are the user lines of the busy samples (innermost frame in the
	// program's own code), with their share of the busy samples (BusyPct).
	Lines     []WorkerLine      `json:"lines,omitempty"`
	PerWorker []WorkerProcShare `json:"per_worker"`
	// PandasShare: the share of the busy samples inside pandas.
	PandasShare float64 `json:"busy_pandas_share,omitempty"`
}

// WorkerLine is one user line of the workers' busy samples.
type WorkerLine struct {
	File    string  `json:"file"`
	Line    int     `json:"line"`
	Func    string  `json:"func"`
	BusyPct float64 `json:"busy_pct"`
}

// WorkerProcShare is one worker process's samples and busy share.
type WorkerProcShare struct {
	PID         int     `json:"pid"`
	WorkerID    *int    `json:"worker_id"`
	StartMethod string  `json:"start_method,omitempty"`
	Samples     int     `json:"samples"`
	BusyShare   float64 `json:"busy_share"`
}

// Summary classifies the workers' loop-thread samples; nil when none.
func (w *Workers) Summary(nLines int) *WorkerSummary {
	if w == nil || w.Profile == nil {
		return nil
	}
	p := w.Profile
	perThread := map[int][2]int{} // thread -> samples, busy
	lines := map[Frame]int{}
	var total, busy, pandas int
	var busyCPU, busyWait float64
	for _, s := range p.Stacks {
		if p.Threads[s.Thread].Role != "worker" || len(s.Frames) == 0 || s.Count == 0 {
			continue
		}
		c := perThread[s.Thread]
		c[0] += s.Count
		total += s.Count
		if in := p.inLoop(s); p.busy(in) {
			c[1] += s.Count
			busy += s.Count
			busyCPU += s.CPUCount
			busyWait += s.WaitCount
			if slices.ContainsFunc(in, func(fi int) bool { return IsPandas(p.Frames[fi].File) }) {
				pandas += s.Count
			}
			for i := len(in) - 1; i >= 0; i-- {
				f := p.Frames[in[i]]
				if !IsLibraryFile(f.File) {
					lines[Frame{File: f.File, Func: f.Func, Line: f.Line}] += s.Count
					break
				}
			}
		}
		perThread[s.Thread] = c
	}
	if total == 0 {
		return nil
	}
	sum := &WorkerSummary{Processes: len(w.Processes), Samples: total, BusyShare: ratio(busy, total), CPUShare: -1, PandasShare: ratio(pandas, busy)}
	if p.CPUClock && busy > 0 {
		sum.CPUShare = busyCPU / float64(busy)
		sum.WaitShare = busyWait / float64(busy)
	}
	for f, c := range lines {
		sum.Lines = append(sum.Lines, WorkerLine{File: f.File, Line: f.Line, Func: f.Func, BusyPct: 100 * ratio(c, busy)})
	}
	slices.SortFunc(sum.Lines, func(a, b WorkerLine) int {
		return cmp.Or(cmp.Compare(b.BusyPct, a.BusyPct), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	if nLines > 0 && len(sum.Lines) > nLines {
		sum.Lines = sum.Lines[:nLines]
	}
	for _, wp := range w.Processes {
		c := perThread[wp.Thread]
		sum.PerWorker = append(sum.PerWorker, WorkerProcShare{PID: wp.PID, WorkerID: wp.Worker.WorkerID,
			StartMethod: wp.Worker.StartMethod, Samples: c[0], BusyShare: ratio(c[1], c[0])})
	}
	return sum
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
