package pyprofile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two workers: the first forked (its stacks start with the parent's line
// that started the iterator, train.py:67, which is no work of the worker),
// busy 6 of 10 samples; the second busy 8 of 10. A truncated file is
// reported, not fatal; other files are ignored.
func TestWorkersSummary(t *testing.T) {
	w, err := ReadWorkers("testdata/workers")
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Errors) != 1 || !strings.Contains(w.Errors[0], "103.json") {
		t.Errorf("errors: %v", w.Errors)
	}
	s := w.Summary(5)
	if s.Processes != 2 || s.Samples != 20 || !near(s.BusyShare, 14.0/20) || !near(s.CPUShare, 1) || s.PandasShare != 0 {
		t.Fatalf("summary %+v", s)
	}
	if len(s.Lines) != 2 || s.Lines[0].Line != 24 || !near(s.Lines[0].BusyPct, 100*13.0/14) || s.Lines[1].Line != 25 {
		t.Errorf("lines %+v", s.Lines)
	}
	for _, l := range s.Lines {
		if l.Line == 67 {
			t.Errorf("the parent's frame is counted as the worker's work: %+v", l)
		}
	}
	if len(s.PerWorker) != 2 || s.PerWorker[0].PID != 101 || *s.PerWorker[0].WorkerID != 0 || !near(s.PerWorker[0].BusyShare, 0.6) ||
		s.PerWorker[1].PID != 102 || !near(s.PerWorker[1].BusyShare, 0.8) || s.PerWorker[0].StartMethod != "fork" {
		t.Errorf("per worker %+v", s.PerWorker)
	}
	// the merged profile keeps each worker's threads apart; frames are shared
	if got := len(w.Profile.Threads); got != 3 {
		t.Errorf("threads %d", got)
	}
	top := w.Profile.TopSites(Options{Role: "worker", Attribution: User})
	if top.Samples != 20 || top.Threads != 2 {
		t.Errorf("top %+v", top)
	}
}

func TestWorkersAbsent(t *testing.T) {
	if _, err := ReadWorkers(filepath.Join(t.TempDir(), "pyworkers-rank0")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "error-1.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWorkers(d); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no profile: %v", err)
	}
	var none *Workers
	if none.Summary(3) != nil {
		t.Error("nil workers have a summary")
	}
}

// pandas' own files are pandas; a user's folder of that name is not.
func TestIsPandas(t *testing.T) {
	for file, want := range map[string]bool{
		"/venv/lib/python3.11/site-packages/pandas/core/indexing.py":          true,
		`C:\venv\Lib\site-packages\pandas\core\series.py`:                     true,
		"/home/u/pandas/train.py":                                             false,
		"/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py": false,
	} {
		if got := IsPandas(file); got != want {
			t.Errorf("%s: %v, want %v", file, got, want)
		}
	}
}

// A worker's samples keep their wait for a CPU through the merge: busy
// workers starved of CPUs are runnable, not asleep in reads (a Dataset
// computing in Python on 2 busy CPUs was told its workers "mostly wait"
// and to add more).
func TestWorkersSummaryKeepsTheWait(t *testing.T) {
	worker := func(pid int) *Profile {
		return &Profile{Profiler: "sample", CPUClock: true, PID: pid,
			Frames: []Frame{{File: "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", Func: "_worker_loop", Line: 375},
				{File: "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", Func: "fetch", Line: 35},
				{File: "/home/u/train.py", Func: "Synth.__iter__", Line: 8}},
			Threads: []Thread{{Name: "MainThread", Role: "main", Samples: 10}},
			Stacks:  []Stack{{Thread: 0, Frames: []int{0, 1, 2}, Count: 10, CPUCount: 4, WaitCount: 5}}}
	}
	w := &Workers{}
	w.merge([]*Profile{worker(101), worker(102)})
	s := w.Summary(5)
	if !near(s.CPUShare, 0.4) || !near(s.WaitShare, 0.5) {
		t.Errorf("on a CPU %v, waiting for one %v: want 0.4 and 0.5", s.CPUShare, s.WaitShare)
	}
}
