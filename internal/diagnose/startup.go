package diagnose

import (
	"fmt"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// A program that builds its data item by item in Python before training
// (tokenising a corpus, a list of floats per sample) can spend more of
// its run there than in all its steps, which the window's verdict cannot
// see. The start-up is the main thread's samples before the first step
// ended, imports left out (torch's import is no change the program can
// make).

// minStartupS: the program's own start-up worth a finding;
// waitingStartup: above this share of it off the CPU, it waits rather
// than computes; childStartup: above this share of it in multiprocessing
// (starting or joining the program's own processes), the work is theirs.
const minStartupS, waitingStartup, childStartup = 1.0, 0.5, 0.5

// childrenOversubscribed returns the processes the program started when
// their threads oversubscribed the CPUs (rundir.Children.Oversubscribed),
// and the CPUs.
func (s *state) childrenOversubscribed() (*rundir.Children, int, bool) {
	r := s.in.Run
	if r == nil || r.Env == nil {
		return nil, 0, false
	}
	return r.Children, r.Env.CPUs, r.Children.Oversubscribed(r.Env.CPUs)
}

// startupInChildren: the start-up is mostly the main process starting or
// waiting for its multiprocessing children (Hogwild training in
// mp.Process workers while it joins them): their steps are in no
// process bottleneck profiled.
func (s *state) startupInChildren() bool {
	return s.in.Run != nil && s.in.Run.Python != nil && s.in.Run.Python.StartupChildShare > childStartup
}

// startup is the program's own start-up, in seconds: the time before its
// first step times the share of the samples then in its own code, when
// it takes at least minStartupS and at least all its steps' time. Not
// when bottleneck ended the program after its window: those steps are not
// all the program's (nanoGPT on an H100, stopped after 20 of its 5,000
// steps, was told its 2.2 s before the first step outweighed them).
func (s *state) startup() (float64, bool) {
	steps, ok := s.runStepsS()
	r := s.in.Run
	if !ok || r.Python == nil || len(r.Python.StartupLines) == 0 {
		return 0, false
	}
	own := r.FirstStepS * r.Python.StartupShare
	return own, own >= minStartupS && own >= steps
}

var _ = addRule(Rule{
	ID: "run.startup", Class: Host, Factor: 0,
	When:   "Python profile (run): the main thread's samples before the first step ended, imports left out, x the sampling interval >= 1 s and >= all the run's steps' time, the program not ended by bottleneck after its window; once per run: no per-step saving, never the verdict. Where that time is mostly waiting for its multiprocessing children, their threads' schedstat (read >= 1 s) decides whether they oversubscribe the CPUs: more threads runnable on average than CPUs + 0.5, waiting for one >= 20% of their runnable time",
	Change: "what builds data one item at a time in Python before training: vectorise it, build it once and save it, or build it lazily in a Dataset loaded by DataLoader workers",
	detect: (*state).startupFinding,
	Fires:  "TestStartupFinding", Silent: "TestStartupFinding",
})

// startupFinding: the program's own start-up took at least minStartupS
// and at least as long as all its steps. Once per run, not per step: a
// short profiling run weighs it more than the full job will, so it is
// not ranked by a per-step saving and never the verdict.
func (s *state) startupFinding() {
	own, ok := s.startup()
	if !ok {
		return
	}
	r := s.in.Run
	py := r.Python
	where, names := namedLines(py.StartupLines, 3, "main-thread samples before the first step, imports left out")
	ms := []Evidence{{"time before the first step", r.FirstStepS * 1e6, "us", "evidence"},
		{"main-thread samples before it outside imports", pct(py.StartupShare), "%", "pyprofile"},
		{"all the run's steps", r.StepsS * 1e6, "us", "evidence"}}
	title := fmt.Sprintf("Before its first step the program works %s in its own code, more than all its steps take (%s)", units.Seconds(own), units.Seconds(r.StepsS))
	change := fmt.Sprintf("start-up (%s) outweighs the steps in this run: what builds data one item at a time in Python, vectorise (NumPy or torch over whole arrays), or build once and save (torch.save / np.save, loaded at start) or build lazily in a Dataset loaded by DataLoader workers; a longer run spreads it over more steps", names)
	if py.StartupOffCPU > waitingStartup {
		// a sleep before training ("3 s to load a checkpoint") got
		// "vectorise what builds data one item at a time"
		ms = append(ms, Evidence{"of it off the CPU (waiting)", pct(py.StartupOffCPU), "%", "pyprofile"})
		title = fmt.Sprintf("Before its first step the program waits %s in its own code, more than all its steps take (%s)", units.Seconds(own), units.Seconds(r.StepsS))
		change = fmt.Sprintf("start-up (%s) outweighs the steps in this run, and it waits rather than computes (%.0f%% of it off the CPU): on files, the network, a subprocess or a sleep; keep what it fetches on local disk, start it in a background thread beside the model's set-up, or drop the wait; a longer run spreads it over more steps", names, pct(py.StartupOffCPU))
	}
	if s.startupInChildren() {
		// mnist_hogwild: 170 s in p.join() while two spawned workers
		// trained got "keep what it fetches on local disk", and the
		// verdict spoke of the test loop the main process ran after
		ms = append(ms, Evidence{"of it starting or waiting for its multiprocessing children", pct(py.StartupChildShare), "%", "pyprofile"})
		title = fmt.Sprintf("Before its first step the program waits %s for processes it started, more than all its steps take (%s)", units.Seconds(own), units.Seconds(r.StepsS))
		change = fmt.Sprintf("start-up (%s) is %.0f%% the main process starting or waiting for its multiprocessing children: bottleneck profiles this process only, so their work (training in mp.Process workers, a Pool's tasks) is in no step of this report, whose steps are what this process ran itself; to profile that work, run one child's loop in the main process under bottleneck run, or start the processes with torchrun (bottleneck run -- torchrun ...: every rank is profiled)", names, pct(py.StartupChildShare))
		if c, cpus, ok := s.childrenOversubscribed(); ok {
			// each child starts with an intra-op thread per CPU; OpenMP's
			// spin while they wait took mnist_hogwild from 17 s to 86-160
			threads := c.ThreadsEach(cpus)
			ms = append(ms, Evidence{"its children's threads wanting a CPU, on average", c.Runnable(), "", "evidence"},
				Evidence{"of their time waiting for a CPU", pct(c.WaitShare()), "%", "evidence"})
			title = fmt.Sprintf("Before its first step the program waits %s for processes it started, whose threads wait for a CPU %.0f%% of their time", units.Seconds(own), pct(c.WaitShare()))
			change = fmt.Sprintf("its children oversubscribe the CPUs: %d of them at once kept %.1f threads wanting a CPU on %d CPUs, each running torch's default of an intra-op thread per CPU (OpenMP's threads spin while they wait, taking the CPU from those that work): torch.set_num_threads(%d) first in the function each child runs, or OMP_NUM_THREADS=%d in their environment (pytorch/examples' mnist_hogwild, 2 children on 2 CPUs: 86-160 s as is, 17 s with one thread each); ",
				c.MostAlive, c.Runnable(), cpus, threads, threads) + change
		}
	}
	f := s.finding("run.startup", title, 0, ms, where, change)
	f.OnceS = own
	s.emit(f)
}
