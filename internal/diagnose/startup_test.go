package diagnose

import (
	"math"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// The start-up share counts the main thread's samples before the first
// step in the program's own code (innermost frame), against all of them
// and torch's unsampled import: a library's set-up (a framework's
// Trainer), and the standard library working for a library (inductor
// waiting for its compiler's subprocess), are not the program's own.
func TestStartupEvidence(t *testing.T) {
	p := &pyprofile.Profile{Profiler: "sample", CPUClock: true, ImportPausedSamples: 20, Threads: []pyprofile.Thread{{Role: "main"}, {Role: "other"}}}
	add := func(thread, n, startup int, files ...string) {
		st := pyprofile.Stack{Thread: thread, Count: n, StartupCount: startup, CPUCount: float64(n) / 2}
		for _, f := range files {
			p.Frames = append(p.Frames, pyprofile.Frame{File: f, Line: 7, Func: "<module>"})
			st.Frames = append(st.Frames, len(p.Frames)-1)
		}
		p.Stacks = append(p.Stacks, st)
	}
	add(0, 50, 50, "/home/u/prep.py")                                                                                // building the data
	add(0, 10, 10, "/home/u/prep.py", "/usr/lib/python3.11/random.py")                                               // ... with the standard library
	add(0, 20, 20, "/home/u/prep.py", sitePkgs+"/transformers/trainer.py")                                           // a library's set-up
	add(0, 20, 20, "/home/u/prep.py", sitePkgs+"/torch/_inductor/codecache.py", "/usr/lib/python3.12/subprocess.py") // torch.compile's compiler
	add(0, 100, 0, "/home/u/prep.py")                                                                                // the steps
	add(1, 50, 50, "/home/u/prep.py")                                                                                // another thread
	ev := runevidence.FromWholeRun(p)
	if math.Abs(ev.StartupShare-0.5) > 1e-9 || len(ev.StartupLines) != 1 || ev.StartupLines[0].Pct != 100 || ev.StartupLines[0].Line != 7 {
		t.Errorf("start-up share %.3f (want 60 of 100 samples and 20 import ticks), lines %+v", ev.StartupShare, ev.StartupLines)
	}
	if math.Abs(ev.StartupOffCPU-0.5) > 1e-9 {
		t.Errorf("start-up off the CPU %.3f, want 0.5 (each stack's share over the run)", ev.StartupOffCPU)
	}
	if ev.StartupChildShare != 0 {
		t.Errorf("start-up with no multiprocessing frame: child share %.3f, want 0", ev.StartupChildShare)
	}
	// Hogwild: the main process joins the mp.Process workers that train;
	// torch.multiprocessing.spawn's join is a package's, not the program's
	add(0, 180, 180, "/home/u/prep.py", "/usr/lib/python3.11/multiprocessing/process.py", "/usr/lib/python3.11/multiprocessing/popen_fork.py")
	add(0, 40, 40, "/home/u/prep.py", sitePkgs+"/torch/multiprocessing/spawn.py", "/usr/lib/python3.11/multiprocessing/connection.py")
	if ev := runevidence.FromWholeRun(p); math.Abs(ev.StartupChildShare-0.75) > 1e-9 {
		t.Errorf("child share %.3f, want 180 of the program's 240 start-up samples", ev.StartupChildShare)
	}
	p.Stacks = p.Stacks[:len(p.Stacks)-2]
	p.CPUClock = false
	if ev := runevidence.FromWholeRun(p); ev.StartupOffCPU != 0 {
		t.Errorf("without a CPU clock: %.3f, want 0 (unknown)", ev.StartupOffCPU)
	}
}

// run.startup: the program's own start-up over 1 s and over all its steps'
// time follows the first finding and is named in the verdict; a longer
// run, or a short start-up, is silent.
func TestStartupFinding(t *testing.T) {
	lines := []runevidence.Line{{File: "/home/u/prep.py", Line: 7, Func: "<module>", Pct: 97}}
	for _, c := range []struct {
		name                          string
		firstS, share, off, child, st float64
		want                          bool
	}{
		{"data built item by item", 4.1, 0.6, 0.05, 0, 0.12, true},
		{"a wait", 4.1, 0.6, 0.98, 0, 0.12, true},
		{"a wait partly for children", 4.1, 0.6, 0.98, 0.4, 0.12, true},
		{"waiting for its children", 4.1, 0.6, 0.98, 0.99, 0.12, true},
		{"a long run", 4.1, 0.6, 0.05, 0, 30, false},
		{"a long run with children", 4.1, 0.6, 0.98, 0.99, 30, false},
		{"a short start-up", 1.5, 0.5, 0.05, 0, 0.1, false},
		// bottleneck ended the program after its window: its steps are
		// not all the program's
		{"stopped after the window", 4.1, 0.6, 0.05, 0, 0.12, false},
	} {
		run := &runevidence.RunEvidence{FirstStepS: c.firstS, StepsS: c.st, StoppedAfterProfile: c.name == "stopped after the window",
			Python: &runevidence.PythonEvidence{StartupShare: c.share, StartupOffCPU: c.off, StartupChildShare: c.child, StartupLines: lines}}
		d := Compute(cpuTrace(run))
		f := findingOf(d, "run.startup")
		if (f != nil) != c.want || strings.Contains(d.Verdict.Why, "before its first step") != c.want {
			t.Fatalf("%s: finding %+v, why %q", c.name, f, d.Verdict.Why)
		}
		if !c.want {
			continue
		}
		verb, change := "works 2.46 s in its own code", "vectorise"
		if c.off == 0.98 {
			verb, change = "waits 2.46 s in its own code", "it waits rather than computes (98% of it off the CPU)"
		}
		children := c.child > 0.5
		if children {
			verb, change = "waits 2.46 s for processes it started", "99% the main process starting or waiting for its multiprocessing children: bottleneck profiles this process only"
		}
		if d.Findings[1].Rule != "run.startup" || math.Abs(f.OnceS-2.46) > 1e-9 || f.AtStakeUs != 0 || f.Where[0].Line != 7 ||
			!strings.Contains(f.Title, verb+", more than all its steps take (120 ms)") || !strings.Contains(f.AllChanges(), change) {
			t.Errorf("%s: %+v (findings %v)", c.name, f, d.Findings)
		}
		if strings.Contains(d.Verdict.Why, "multiprocessing children") != children || strings.Contains(f.AllChanges(), "multiprocessing children") != children {
			t.Errorf("%s: children named %v, want %v: why %q, change %q", c.name, !children, children, d.Verdict.Why, f.AllChanges())
		}
	}
}

// The children the program waits for before its first step oversubscribe
// the CPUs when their threads want more than there are and wait for one
// (mnist_hogwild's two children on 2 CPUs: 3.5 threads runnable, 54% of
// their time waiting): the change is one intra-op thread each; silent
// where they fit (a thread each), on a short span, where they wait little
// (another process's load), and where the start-up is not theirs.
func TestChildrenOversubscribed(t *testing.T) {
	lines := []runevidence.Line{{File: "/home/u/main.py", Line: 99, Func: "<module>", Pct: 100}}
	hogwild := rundir.Children{Processes: 2, MostAlive: 2, WallS: 52.4, CPUS: 84.4, WaitS: 100.3}
	for _, c := range []struct {
		name     string
		children rundir.Children
		child    float64 // the start-up's share in multiprocessing
		want     bool
	}{
		{"hogwild, 2 threads each on 2 CPUs", hogwild, 0.99, true},
		{"a thread each", rundir.Children{Processes: 2, MostAlive: 2, WallS: 16, CPUS: 31, WaitS: 0.5}, 0.99, false},
		{"a second of them", rundir.Children{Processes: 2, MostAlive: 2, WallS: 0.8, CPUS: 1.3, WaitS: 1.5}, 0.99, false},
		{"runnable, waiting little", rundir.Children{Processes: 4, MostAlive: 4, WallS: 20, CPUS: 60, WaitS: 5}, 0.99, false},
		{"the start-up not the children's", hogwild, 0.3, false},
	} {
		run := &runevidence.RunEvidence{FirstStepS: 60, StepsS: 9, Children: &c.children, Env: &runevidence.Env{CPUs: 2},
			Python: &runevidence.PythonEvidence{StartupShare: 0.9, StartupOffCPU: 0.98, StartupChildShare: c.child, StartupLines: lines}}
		d := Compute(cpuTrace(run))
		f := findingOf(d, "run.startup")
		if f == nil {
			t.Fatalf("%s: no start-up finding", c.name)
		}
		got := strings.Contains(f.AllChanges(), "its children oversubscribe the CPUs")
		if got != c.want || strings.Contains(d.Verdict.Why, "waited for a CPU") != c.want {
			t.Errorf("%s: oversubscribed %v, want %v: %s; why %q", c.name, got, c.want, f.AllChanges(), d.Verdict.Why)
		}
		if got && (!strings.Contains(f.AllChanges(), "2 of them at once kept 3.5 threads wanting a CPU on 2 CPUs") || !strings.Contains(f.AllChanges(), "torch.set_num_threads(1) first in the function each child runs") ||
			!strings.Contains(f.Title, "whose threads wait for a CPU 54% of their time")) {
			t.Errorf("%s: %s: %s", c.name, f.Title, f.AllChanges())
		}
	}
}
