package pyprofile

import (
	"math"
	"strings"
	"testing"
)

func load(t *testing.T) *Profile {
	t.Helper()
	p, err := ReadFile("testdata/sample.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func find(sites []Site, file string, line int) *Site {
	for i := range sites {
		if strings.HasSuffix(sites[i].File, file) && sites[i].Line == line {
			return &sites[i]
		}
	}
	return nil
}

func TestTopSitesLeafMainThread(t *testing.T) {
	p := load(t)
	top := p.TopSites(Options{Role: "main"})
	if top.Samples != 8 || !near(top.TotalS, 0.08) || top.Threads != 1 {
		t.Fatalf("samples %d total %v threads %d", top.Samples, top.TotalS, top.Threads)
	}
	first := top.BySelf[0]
	if !strings.HasSuffix(first.File, "module.py") || first.Line != 1750 || !near(first.SelfS, 0.05) || first.User {
		t.Fatalf("top self = %+v", first)
	}
	mod := find(top.ByTotal, "train.py", 40)
	if mod == nil || !near(mod.TotalS, 0.08) || !near(mod.TotalPct, 100) || mod.SelfS != 0 {
		t.Fatalf("<module> = %+v", mod)
	}
	if s := find(top.BySelf, "train.py", 14); s == nil || !near(s.SelfPct, 37.5) {
		t.Fatalf("train.py:14 = %+v", s)
	}
}

func TestTopSitesUserAttribution(t *testing.T) {
	p := load(t)
	top := p.TopSites(Options{Role: "main", Attribution: User})
	s := top.BySelf[0]
	if !strings.HasSuffix(s.File, "train.py") || s.Line != 12 || !near(s.SelfS, 0.05) || !s.User {
		t.Fatalf("user attribution top = %+v", s)
	}
}

func TestTopSitesWindowRolesAndFunctions(t *testing.T) {
	p := load(t)
	w := p.TopSites(Options{Window: true})
	if w.Samples != 4 {
		t.Fatalf("window samples %d", w.Samples)
	}
	pin := p.TopSites(Options{Role: "pin_memory"})
	if pin.Samples != 2 || !strings.HasSuffix(pin.BySelf[0].File, "queue.py") {
		t.Fatalf("pin_memory = %+v", pin)
	}
	fn := p.TopSites(Options{Role: "main", ByFunction: true})
	step := find(fn.ByTotal, "train.py", 10)
	if step == nil || !near(step.TotalS, 0.08) || !near(step.SelfS, 0.03) {
		t.Fatalf("by function step = %+v", step)
	}
	if got := p.Roles(); len(got) != 2 || got[0] != "main" {
		t.Fatalf("roles %v", got)
	}
	n := p.TopSites(Options{N: 1})
	if len(n.BySelf) != 1 || len(n.ByTotal) != 1 || !n.Truncated {
		t.Fatalf("N=1: %+v", n)
	}
}

func TestReadRejectsBadInput(t *testing.T) {
	for name, src := range map[string]string{
		"format":  `{"format": "x", "version": 1}`,
		"version": `{"format": "bottleneck.pyprofile", "version": 9}`,
		"frame":   `{"format": "bottleneck.pyprofile", "version": 1, "frames": [], "threads": [{"role": "main"}], "stacks": [{"thread": 0, "frames": [3], "count": 1}]}`,
		"thread":  `{"format": "bottleneck.pyprofile", "version": 1, "frames": [], "threads": [], "stacks": [{"thread": 0, "frames": [], "count": 1}]}`,
		"json":    `{"format": `,
	} {
		if _, err := Read(strings.NewReader(src)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestCProfileVariant(t *testing.T) {
	src := `{"format": "bottleneck.pyprofile", "version": 1, "profiler": "cprofile", "duration_s": 2.0,
	 "frames": [{"file": "/home/u/a.py", "func": "f", "line": 3, "fline": 3}, {"file": "~", "func": "<built-in method time.sleep>", "line": 0, "fline": 0}],
	 "threads": [{"id": 1, "name": "MainThread", "role": "main"}],
	 "functions": [{"frame": 0, "ncalls": 10, "pcalls": 10, "tottime_s": 0.5, "cumtime_s": 1.5, "callers": []},
	               {"frame": 1, "ncalls": 10, "pcalls": 10, "tottime_s": 1.0, "cumtime_s": 1.0, "callers": [{"frame": 0, "ncalls": 10, "tottime_s": 1.0, "cumtime_s": 1.0}]}]}`
	p, err := Read(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	top := p.TopSites(Options{Role: "main"})
	if len(top.BySelf) != 2 || top.BySelf[0].Calls != 10 || !near(top.BySelf[0].SelfPct, 50) {
		t.Fatalf("cprofile by self = %+v", top.BySelf)
	}
	if f := top.ByTotal[0]; f.Func != "f" || !near(f.TotalS, 1.5) {
		t.Fatalf("cprofile by total = %+v", top.ByTotal)
	}
	if w := p.TopSites(Options{Window: true}); len(w.BySelf) != 0 {
		t.Fatalf("cprofile has no window data: %+v", w)
	}
}

func TestIsLibraryFile(t *testing.T) {
	for f, want := range map[string]bool{
		"/venv/lib/python3.11/site-packages/torch/x.py": true,
		"/tmp/torchinductor_root/ug/cugc5pjgaq2i5e.py":  true, // torch.compile's generated code
		"/usr/lib/python3.12/threading.py":              true,
		"/usr/lib/python3.13t/threading.py":             true,
		"<frozen importlib._bootstrap>":                 true,
		"/home/u/lib/pythonic/train.py":                 false,
		"/home/u/train.py":                              false,
	} {
		if got := IsLibraryFile(f); got != want {
			t.Errorf("IsLibraryFile(%q) = %v", f, got)
		}
	}
}

func TestWindowSamplesWeighWindowInterval(t *testing.T) {
	p := load(t)
	p.WindowIntervalS = 0.0025
	// main thread: stack 0 = 2 samples outside (0.02s) + 3 in the window
	// (0.0075s); stack 1 = 2 outside (0.02s) + 1 in (0.0025s)
	top := p.TopSites(Options{Role: "main"})
	if !near(top.TotalS, 0.05) {
		t.Fatalf("total %v, want 0.05", top.TotalS)
	}
	if s := find(top.BySelf, "module.py", 1750); s == nil || !near(s.SelfS, 0.0275) || !near(s.SelfPct, 55) {
		t.Fatalf("module.py = %+v", s)
	}
	w := p.TopSites(Options{Role: "main", Window: true})
	if w.Samples != 4 || !near(w.TotalS, 0.01) {
		t.Fatalf("window: samples %d total %v", w.Samples, w.TotalS)
	}
	if s := find(w.BySelf, "module.py", 1750); s == nil || !near(s.SelfPct, 75) {
		t.Fatalf("window module.py = %+v", s)
	}
}

// On-CPU ranking counts each sample by its on-CPU weight, and a thread
// that mostly waited is Waiting; without a CPU clock nothing is.
func TestOnCPUAndWaiting(t *testing.T) {
	p := &Profile{Profiler: "sample", IntervalS: 0.01, CPUClock: true,
		Frames: []Frame{{File: "/u/train.py", Func: "<module>", Line: 3}, {File: "/u/train.py", Func: "busy", Line: 9},
			{File: "/u/train.py", Func: "wait", Line: 20}},
		Threads: []Thread{{Name: "MainThread", Role: "main", Samples: 100, CPUSamples: 80},
			{Name: "refresh", Role: "other", Samples: 100, CPUSamples: 2}},
		Stacks: []Stack{{Thread: 0, Frames: []int{0, 1}, Count: 60, CPUCount: 60},
			{Thread: 0, Frames: []int{0, 2}, Count: 40, CPUCount: 20},
			{Thread: 1, Frames: []int{2}, Count: 100, CPUCount: 2}}}
	top := p.TopSites(Options{OnCPU: true, Threads: func(i int) bool { return !p.Waiting(i) }})
	if !near(top.TotalS, 0.8) || top.Threads != 1 || len(top.Names) != 1 || top.Names[0] != "MainThread" || !top.OnCPU {
		t.Fatalf("top: %+v", top)
	}
	if s := find(top.BySelf, "train.py", 9); s == nil || !near(s.SelfPct, 75) {
		t.Errorf("busy line: %+v", s)
	}
	if !p.Waiting(1) || p.Waiting(0) {
		t.Errorf("waiting: %v %v", p.Waiting(0), p.Waiting(1))
	}
	// a main thread that wanted a CPU most of the time, on a busy machine,
	// computes: it is not waiting
	p.Threads[0].CPUSamples = 5
	p.Stacks[0].WaitCount, p.Stacks[1].WaitCount = 50, 30
	if p.Waiting(0) {
		t.Error("a starved main thread, runnable most of the time, is waiting")
	}
	p.Stacks[0].WaitCount, p.Stacks[1].WaitCount = 0, 0
	if !p.Waiting(0) {
		t.Error("a main thread off the CPU and not runnable is not waiting")
	}
	wall := p.TopSites(Options{})
	if !near(wall.TotalS, 2.0) {
		t.Errorf("wall-clock total %v, want 2s", wall.TotalS)
	}
	p.CPUClock = false
	if p.Waiting(1) {
		t.Error("waiting without a CPU clock")
	}
}

// Samples taken during an import go to the user's import line; with
// SkipImports they are left out of the counts and the total.
func TestSkipImports(t *testing.T) {
	p := &Profile{Profiler: "sample", IntervalS: 0.01,
		Frames: []Frame{{File: "/u/train.py", Func: "<module>", Line: 1}, {File: "<frozen importlib._bootstrap>", Func: "_find_and_load", Line: 1176},
			{File: "/venv/lib/python3.11/site-packages/torch/__init__.py", Func: "<module>", Line: 40}, {File: "/u/train.py", Func: "<module>", Line: 9}},
		Threads: []Thread{{Name: "MainThread", Role: "main", Samples: 100}},
		Stacks: []Stack{{Thread: 0, Frames: []int{0, 1, 2}, Count: 70},
			{Thread: 0, Frames: []int{3}, Count: 30}}}
	if !p.Importing(p.Stacks[0].Frames) || p.Importing(p.Stacks[1].Frames) {
		t.Fatal("Importing: want the first stack only")
	}
	all := p.TopSites(Options{Role: "main", Attribution: User})
	if s := find(all.BySelf, "train.py", 1); s == nil || !near(s.SelfS, 0.7) {
		t.Errorf("import line without SkipImports: %+v", s)
	}
	top := p.TopSites(Options{Role: "main", Attribution: User, SkipImports: true})
	if find(top.BySelf, "train.py", 1) != nil || !near(top.TotalS, 0.3) || top.Samples != 30 {
		t.Errorf("SkipImports: %+v", top)
	}
	if s := find(top.BySelf, "train.py", 9); s == nil || !near(s.SelfPct, 100) {
		t.Errorf("loop line: %+v", s)
	}
}

// A main thread waiting in the joins of the processes it started gives
// the share of its samples after its imports and the program's line that
// waited; one that computes gives none.
func TestChildWait(t *testing.T) {
	p := &Profile{Profiler: "sample", IntervalS: 0.01,
		Frames: []Frame{{File: "/u/train.py", Func: "<module>", Line: 15}, {File: "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py", Func: "join", Line: 200},
			{File: "/usr/lib/python3.11/multiprocessing/connection.py", Func: "wait", Line: 947}, {File: "/u/train.py", Func: "<module>", Line: 3},
			{File: "<frozen importlib._bootstrap>", Func: "_find_and_load", Line: 1176}, {File: "/u/train.py", Func: "main", Line: 9}},
		Threads: []Thread{{Name: "MainThread", Role: "main", Samples: 100}, {Name: "pin", Role: "other", Samples: 100}},
		Stacks: []Stack{{Thread: 0, Frames: []int{0, 1, 2}, Count: 90},
			{Thread: 0, Frames: []int{3, 4}, Count: 50}, // importing torch: left out
			{Thread: 0, Frames: []int{5}, Count: 10},
			{Thread: 1, Frames: []int{2}, Count: 100}}} // another thread's waits are not the main thread's
	share, at := p.ChildWait()
	if !near(share, 0.9) || at.File != "/u/train.py" || at.Line != 15 {
		t.Errorf("share %v at %+v", share, at)
	}
	p.Stacks[0].Frames = []int{0}
	if share, at := p.ChildWait(); share != 0 || at.File != "" {
		t.Errorf("no child waits: share %v at %+v", share, at)
	}
}

// The window check's outlier steps leave the window with their samples:
// a checkpoint's step held 5 of a stack's 8 window samples.
func TestLeavingWindowSteps(t *testing.T) {
	p := &Profile{WindowSamples: 10, Threads: []Thread{{Role: "main", WindowSamples: 10}},
		Stacks: []Stack{
			{Thread: 0, WindowCount: 8, WindowCPUCount: 4, WindowSteps: [][2]int{{9, 1}, {10, 5}, {11, 2}}},
			{Thread: 0, WindowCount: 2, WindowCPUCount: 2, WindowSteps: [][2]int{{9, 1}, {11, 1}}},
		}}
	if !p.HasWindowSteps() {
		t.Fatal("HasWindowSteps: false")
	}
	if q := p.LeavingWindowSteps(map[int]bool{12: true}); q != p {
		t.Fatal("a step with no samples left out: not p itself")
	}
	q := p.LeavingWindowSteps(map[int]bool{10: true})
	if q.Stacks[0].WindowCount != 3 || !near(q.Stacks[0].WindowCPUCount, 1.5) || q.Stacks[1].WindowCount != 2 ||
		q.WindowSamples != 5 || q.Threads[0].WindowSamples != 5 {
		t.Fatalf("left out step 10: %+v, %d window samples", q.Stacks, q.WindowSamples)
	}
	if p.Stacks[0].WindowCount != 8 || p.WindowSamples != 10 || p.Threads[0].WindowSamples != 10 {
		t.Fatal("p changed")
	}
	// a file whose steps hold more than the stack's window count
	p.Stacks[1].WindowSteps = [][2]int{{10, 7}}
	if q := p.LeavingWindowSteps(map[int]bool{10: true}); q.Stacks[1].WindowCount != 0 || q.WindowSamples != 3 {
		t.Fatalf("more samples in the step than the window: %+v, %d", q.Stacks[1], q.WindowSamples)
	}
}
