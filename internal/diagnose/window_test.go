package diagnose

import (
	"math"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// The profiler-inflation note fires when the window's steps are much
// slower than the steps without the profiler, and stays silent otherwise;
// it blames the profiler only when the recorded ops per step can explain
// the slowdown. A window as slow as the steps next to it but slower than
// the run's median fell in a slow stretch.
func TestProfilerInflation(t *testing.T) {
	br := &breakdown.Result{AveragedSteps: 3, Average: breakdown.Costs{CPUExecUs: 90e3, OtherUs: 10e3, TotalUs: 100e3},
		Steps: []breakdown.Step{{Name: "4"}, {Name: "5"}, {Name: "6"}}}
	w := &window.Result{SteadyState: true, Used: []string{"4", "5", "6"}, MedianUs: 100e3}
	for _, c := range []struct {
		outside, run float64 // the slower of the medians before and after the window; the run's median
		calls        int     // recorded ops over the 3 steps
		want         string
	}{
		{0.05, 0.05, 3 * 5000, "per-op overhead (5000 ops per step)"},
		{0.05, 0.05, 3 * 20, "something else slowed the window"},
		{0.09, 0.09, 3 * 5000, ""},
		{0, 0, 3 * 5000, ""},
		// the steps before the window were as slow as it (a slow stretch):
		// the run's median still says the window is not the usual step
		{0.09, 0.05, 3 * 20, "the window fell in a slow stretch"},
		// ... unless the profiler's per-op cost explains the excess over it
		{0.09, 0.05, 3 * 5000, "2.0x the run's median step (median 100 ms against 50.0 ms): the profiler's per-op overhead"},
		{0.09, 0.08, 3 * 20, ""},
	} {
		d := Compute(Analyses{Events: 1000, Window: w, Breakdown: br, Ops: &optable.OpTable{Calls: c.calls},
			Run: &runevidence.RunEvidence{WindowStepS: 0.1, WindowMedianS: 0.1, OutsideStepS: c.outside, RunMedianStepS: c.run}})
		text := strings.Join(d.Window.Notes, "\n")
		fired := strings.Contains(text, "the recorded steps take")
		if fired != (c.want != "") || d.Window.SteadyState == fired || !strings.Contains(text, c.want) {
			t.Errorf("outside step %v s, run median %v s, %d ops: steady %v, notes %q, want %q", c.outside, c.run, c.calls, d.Window.SteadyState, text, c.want)
		}
	}
}

// A window its memory bound closed inside its only step: the agent timed
// only its warm-up steps, so the trace's step is compared with the run's;
// slower, and closed by the memory bound, the note says the process grew
// (johnma2006/mamba-minimal under torch.profiler: 12.9 s against 1.21 s,
// RSS 1.3 -> 9.4 GB). Another bound, an uncut window or a step as fast as
// the run's stay with the other notes or none.
func TestWindowGrewInItsStep(t *testing.T) {
	br := &breakdown.Result{AveragedSteps: 1, Average: breakdown.Costs{CPUExecUs: 12.8e6, OtherUs: 0.1e6, TotalUs: 12.9e6}, Steps: []breakdown.Step{{Name: "7"}}}
	for _, c := range []struct {
		name      string
		cut, by   string
		medianUs  float64 // the trace's step
		want, not string
	}{
		{"grew", "the window's memory bound closed it", "memory", 12.9e6, "the process grew past the window's memory bound while it recorded", ""},
		{"wall bound", "the window's wall bound closed it", "wall", 12.9e6, "something else slowed the window", "grew past"},
		{"not cut", "", "", 12.9e6, "", "the recorded steps take"},
		{"as fast", "the window's memory bound closed it", "memory", 1.3e6, "", "the recorded steps take"},
	} {
		w := &window.Result{SteadyState: true, Used: []string{"7"}, MedianUs: c.medianUs, LastStepCut: c.cut, LastStepCutBy: c.by}
		d := Compute(Analyses{Events: 1000, Window: w, Breakdown: br, Ops: &optable.OpTable{Calls: 20},
			Run: &runevidence.RunEvidence{WindowStepS: 1.5, WindowMedianS: 1.5, OutsideStepS: 1.21, RunMedianStepS: 1.21}})
		text := strings.Join(append(d.Window.Notes, d.Window.Reprofile), "\n")
		if !strings.Contains(text, c.want) || c.not != "" && strings.Contains(text, c.not) {
			t.Errorf("%s: notes %q, want %q without %q", c.name, text, c.want, c.not)
		}
		if grew := strings.Contains(text, "read the ops' ranking, not their times"); grew != (c.name == "grew") {
			t.Errorf("%s: re-profile advice %q", c.name, d.Window.Reprofile)
		}
	}
}

// The CPU-wait note fires when the main thread waited for a CPU a tenth
// of the window or more, names who held the CPUs, and marks the window
// unsteady only when it waited far more than over the run; it stays
// silent on a quiet window and without a window record. A waiting main
// thread also takes back the advice to add intra-op threads.
func TestCPUWait(t *testing.T) {
	load := 7.5
	sched := func(wall, wait, proc float64) *rundir.ThreadSched {
		return &rundir.ThreadSched{WallS: wall, CPUS: wall - wait, WaitS: wait, ProcessCPUS: proc, LoadAverage: &load}
	}
	env := &runevidence.Env{CPUs: 4, NumThreads: 2, LocalRanks: 1, LoadAverage: 0.5}
	for _, c := range []struct {
		name         string
		wait         *rundir.CPUWait
		threads      int
		note, steady bool
		want         string
	}{
		{"quiet", &rundir.CPUWait{Run: sched(10, 0.2, 9), Window: sched(1, 0.03, 0.9)}, 2, false, true, ""},
		{"no window record", &rundir.CPUWait{Run: sched(10, 5, 9)}, 2, false, true, ""},
		{"busy window", &rundir.CPUWait{Run: sched(10, 0.5, 9), Window: sched(1, 0.4, 0.6)}, 2, true, false,
			"waited for a CPU 40% of the window (5% over the run)"},
		{"busy window: other processes", &rundir.CPUWait{Run: sched(10, 0.5, 9), Window: sched(1, 0.4, 0.6)}, 2, true, false,
			"(load average 7.5 on 4 CPUs; this process used 0.6, its DataLoader workers aside)"},
		{"busy run", &rundir.CPUWait{Run: sched(10, 3, 9), Window: sched(1, 0.35, 0.6)}, 2, true, true, "35% of the window"},
		{"own threads", &rundir.CPUWait{Run: sched(10, 3, 9), Window: sched(1, 0.35, 0.6)}, 8, true, true, "the program's own threads want 8 CPUs of 4"},
		// the process itself used all CPUs but one (the profiler's threads
		// add to it in the window): no sign of a busy machine
		{"own process", &rundir.CPUWait{Run: sched(10, 0.5, 9), Window: sched(1, 0.4, 3.5)}, 2, true, true, "this process's own threads used 3.5 of the 4 CPUs"},
	} {
		e := *env
		e.NumThreads = c.threads
		d := Compute(cpuTrace(&runevidence.RunEvidence{Env: &e, CPUWait: c.wait}))
		text := strings.Join(d.Window.Notes, "\n")
		if fired := strings.Contains(text, "waited for a CPU"); fired != c.note || (d.Window.CPUWaitPct > 0) != c.note || !strings.Contains(text, c.want) || d.Window.SteadyState != c.steady {
			t.Errorf("%s: steady %v, notes %q; want note %v (%q), steady %v", c.name, d.Window.SteadyState, text, c.note, c.want, c.steady)
		}
		if f := findingOf(d, "cpu.native"); f != nil && c.note && strings.Contains(f.AllChanges(), " free: ") {
			t.Errorf("%s: advises more threads while the main thread waits for a CPU: %q", c.name, f.AllChanges())
		}
	}
	// a window slower than the steps around it while the machine was busy
	// is put down to the machine, not to the profiler's per-op cost
	e := *env
	run := &runevidence.RunEvidence{Env: &e, WindowMedianS: 0.1, OutsideStepS: 0.05, CPUWait: &rundir.CPUWait{Run: sched(10, 0.5, 9), Window: sched(1, 0.4, 0.6)}}
	a := cpuTrace(run)
	a.Ops = &optable.OpTable{Calls: 3 * 5000}
	d := Compute(a)
	if text := strings.Join(d.Window.Notes, "\n"); !strings.Contains(text, "the machine was busy during the window") || strings.Contains(text, "per-op overhead") {
		t.Errorf("busy and slower window: notes %q", text)
	}
	// the same program on a quiet machine is told to use the free CPUs
	d = Compute(cpuTrace(&runevidence.RunEvidence{Env: &e, CPUWait: &rundir.CPUWait{Run: sched(10, 0.1, 9), Window: sched(1, 0.01, 0.9)}}))
	if f := findingOf(d, "cpu.native"); f == nil || !strings.Contains(f.AllChanges(), " free: ") {
		t.Errorf("quiet machine: cpu.native %+v, want the free-CPU advice", f)
	}
}

// A window in a slow stretch is re-profiled where the run's steps settle:
// after a slow first phase, the first step of the fast one (a single slow
// step later does not move it); never, when the steps stay uneven.
func TestSettledStep(t *testing.T) {
	series := func(n int, dur func(i int) float64) []steptimes.Step {
		var out []steptimes.Step
		for i := 1; i <= n; i++ {
			out = append(out, steptimes.Step{N: i, DurS: dur(i), InWindow: i >= 8 && i <= 12})
		}
		return out
	}
	slowStart := func(i int) float64 {
		switch {
		case i <= 40:
			return 0.03
		case i == 60:
			return 0.5 // one outlier
		}
		return 0.01
	}
	uneven := func(i int) float64 { return 0.01 * float64(1+(i/5)%3) } // 5 steps at 10, 20, 30 ms in turn
	for _, c := range []struct {
		name string
		n    int
		dur  func(int) float64
		want int
	}{
		{"slow first phase", 80, slowStart, 41},
		{"never settles", 80, uneven, 0},
		{"too few steps after the window", 20, slowStart, 0},
	} {
		if got := runevidence.FirstSettledStep(series(c.n, c.dur)); got != c.want {
			t.Errorf("%s: settled at %d, want %d", c.name, got, c.want)
		}
	}
	s := &state{in: Analyses{Run: &runevidence.RunEvidence{SettledStep: 41}}}
	if got := s.laterWindow(); !strings.Contains(got, "--skip-first 41") {
		t.Errorf("advice %q", got)
	}
	s.in.Run.SettledStep = 0
	if got := s.laterWindow(); strings.Contains(got, "--skip-first") {
		t.Errorf("advice for steps that never settle: %q", got)
	}
}

// A window whose steps took batches prefetched before it: the run's
// DataLoader wait decides the input share, the window is not steady
// state, the other shares become the run's step's, and the advice skips
// past the queue. Silent when the window waited about as much as the
// run, its slow steps counted (N workers make every Nth step wait).
func TestRunInputOutweighsTheWindows(t *testing.T) {
	four, eight := 4, 8
	for _, c := range []struct {
		name     string
		run, win float64
		want     bool
	}{
		{"prefetched window", 0.81, 0.19, true},
		{"a bursty loader, its waits in the window", 0.97, 0.90, false},
		{"a little more over the run", 0.30, 0.20, false},
	} {
		run := &runevidence.RunEvidence{HasDataLoader: true, WindowStepS: 0.1, DataLoaderWaitS: 0.1 * c.win,
			RunLoaderWaitShare: c.run, WindowLoaderWaitShare: c.win,
			Loaders: []runevidence.Loader{{Dataset: "Images", NumWorkers: &four, PrefetchFactor: &eight}}}
		d := Compute(cpuTrace(run))
		note := strings.Contains(strings.Join(d.Window.Notes, "\n"), "the run waited for its DataLoader")
		if note != c.want || d.Window.SteadyState == c.want {
			t.Errorf("%s: window %+v", c.name, d.Window)
		}
		if !c.want {
			continue
		}
		f := findingOf(d, "input.loader")
		if d.Verdict.Primary != Input || f == nil || !strings.HasPrefix(f.Title, "The step waits for data 81% of the run's step time (19% in the recorded window") {
			t.Errorf("%s: verdict %s, input finding %+v", c.name, d.Verdict.Primary, f)
		}
		// native ops were 60% of the window's step that waited 19%: of the
		// run's, 60% x 0.19/0.81
		if f := findingOf(d, "cpu.native"); f == nil || math.Abs(f.AtStakeUs-60e3*0.19/0.81) > 1 {
			t.Errorf("%s: native ops not scaled to the run's step: %+v", c.name, f)
		}
		if !strings.Contains(d.Window.Reprofile, "--skip-first 64") {
			t.Errorf("%s: reprofile %q", c.name, d.Window.Reprofile)
		}
	}
}
