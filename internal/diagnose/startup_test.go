package diagnose

import (
	"math"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
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
		name                   string
		firstS, share, off, st float64
		want                   bool
	}{
		{"data built item by item", 4.1, 0.6, 0.05, 0.12, true},
		{"a wait", 4.1, 0.6, 0.98, 0.12, true},
		{"a long run", 4.1, 0.6, 0.05, 30, false},
		{"a short start-up", 1.5, 0.5, 0.05, 0.1, false},
	} {
		run := &runevidence.RunEvidence{FirstStepS: c.firstS, StepsS: c.st, Python: &runevidence.PythonEvidence{StartupShare: c.share, StartupOffCPU: c.off, StartupLines: lines}}
		d := Compute(cpuTrace(run))
		f := findingOf(d, "run.startup")
		if (f != nil) != c.want || strings.Contains(d.Verdict.Why, "before its first step") != c.want {
			t.Fatalf("%s: finding %+v, why %q", c.name, f, d.Verdict.Why)
		}
		if !c.want {
			continue
		}
		verb, change := "works", "vectorise"
		if c.off == 0.98 {
			verb, change = "waits", "it waits rather than computes (98% of it off the CPU)"
		}
		if d.Findings[1].Rule != "run.startup" || math.Abs(f.OnceS-2.46) > 1e-9 || f.AtStakeUs != 0 || f.Where[0].Line != 7 ||
			!strings.Contains(f.Title, verb+" 2.46 s in its own code, more than all its steps take (120 ms)") || !strings.Contains(f.AllChanges(), change) {
			t.Errorf("%s: %+v (findings %v)", c.name, f, d.Findings)
		}
	}
}
