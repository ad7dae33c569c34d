// Package runreport renders the part of the `bottleneck run` report that
// comes from the agent rather than from the traces: the environment
// summary, the steps and the recorded window, DataLoader wait, CUDA
// implicit-sync call sites, the top Python call sites per thread role, and
// what could not be recorded and why. It reads a run directory (files
// documented in docs/run.md) and knows nothing of processes or flags.
package runreport

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Schema names the JSON form of the run section.
const Schema = "bottleneck.run-report/1"

// Report is the run section of report.json.
type Report struct {
	Schema    string           `json:"schema"`
	RunDir    string           `json:"run_dir"`
	Command   []string         `json:"command"`
	Exit      *rundir.Exit     `json:"exit,omitempty"`
	DurationS float64          `json:"duration_s"`
	Processes []ProcessReport  `json:"processes"`
	Missing   []rundir.Missing `json:"missing"`
	Warnings  []string         `json:"warnings,omitempty"`
	Manifest  *rundir.Manifest `json:"-"`
	Host      map[string]any   `json:"host,omitempty"`
	// Interrupted says why a manifest still reads "running" (bottleneck
	// itself was killed, or the run is still going); empty once it ended.
	Interrupted string `json:"interrupted,omitempty"`
	// Tried are the changes `run --verify` tried, measured against
	// predicted (tried.json).
	Tried []rundir.TriedChange `json:"tried,omitempty"`
	// Repro are the hot ops' scripts in the run directory (run --repro),
	// relative to it.
	Repro []string `json:"repro,omitempty"`
}

// ProcessReport is one profiled process (one rank).
type ProcessReport struct {
	Tag        string           `json:"tag"`
	PID        int              `json:"pid"`
	Env        *rundir.Env      `json:"env,omitempty"`
	Evidence   *rundir.Evidence `json:"evidence,omitempty"`
	Python     []pyprofile.Top  `json:"python,omitempty"` // window and whole run, per role
	PythonNote string           `json:"python_note,omitempty"`
	// Waiting are the threads that mostly waited (profiles with a CPU
	// clock); the Python tables leave them out.
	Waiting []WaitingThread `json:"waiting_threads,omitempty"`
	// Workers summarises the DataLoader worker processes' samples (nil:
	// none sampled).
	Workers *pyprofile.WorkerSummary `json:"dataloader_workers,omitempty"`
	// StepSeries summarises every step of the run (the evidence's
	// step_times), not only the window's.
	StepSeries *steptimes.Summary `json:"step_series,omitempty"`
}

// FromRun builds the run section of a run directory already read.
func FromRun(run *rundir.Run) *Report {
	m := run.Manifest
	r := &Report{Schema: Schema, RunDir: run.Dir, Command: m.Command.Argv, Exit: m.Exit, DurationS: m.DurationS, Manifest: m, Host: run.Host}
	if m.State == "running" {
		r.Interrupted = rundir.Interrupted(run.Dir, m)
	}
	r.Warnings = append(r.Warnings, m.Warnings...) // the runner's: a full disk, env.json, the file list
	r.Repro = run.Repro
	if run.Tried != nil {
		r.Tried = run.Tried.Changes
	} else if run.TriedErr != nil {
		r.Warnings = append(r.Warnings, run.TriedErr.Error())
	}
	for _, pf := range run.Processes {
		tag := pf.Tag
		p := ProcessReport{Tag: tag, Env: pf.Env}
		if ev := pf.Evidence; ev != nil {
			p.Evidence = ev
			p.PID = ev.PID
			p.StepSeries = steptimes.Summarize(ev.StepSeries())
			for _, mm := range ev.Missing {
				r.Missing = append(r.Missing, rundir.Missing{Tag: tag, What: mm.What, Why: mm.Why})
			}
			if !ev.Final {
				r.Missing = append(r.Missing, rundir.Missing{Tag: tag, What: "final agent data",
					Why: "the process ended before the agent could save (killed?); files hold the last checkpoint"})
			}
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: no evidence file: %v", tag, pf.EvidenceErr))
		}
		switch {
		case pf.Profile != nil:
			p.Python = pythonTops(pf.Profile)
			p.Waiting = waitingThreads(pf.Profile)
			if m := childWork(pf); m != nil {
				r.Missing = append(r.Missing, *m)
			}
		case !rundir.NotWritten(pf.ProfileErr):
			r.Warnings = append(r.Warnings, pf.ProfileErr.Error())
		case p.Evidence != nil && p.Evidence.PythonProfiler == "off":
			p.PythonNote = "Python profiler off (--python-profiler off)"
		default:
			r.Missing = append(r.Missing, rundir.Missing{Tag: tag, What: "Python profile", Why: "no pyprofile file was written"})
		}
		p.Workers = pf.Workers.Summary(topN)
		if pf.WorkersErr != nil && !rundir.NotWritten(pf.WorkersErr) {
			r.Warnings = append(r.Warnings, pf.WorkersErr.Error())
		}
		if pf.Workers != nil {
			r.Warnings = append(r.Warnings, pf.Workers.Errors...)
		}
		r.Processes = append(r.Processes, p)
	}
	if len(r.Processes) == 0 {
		why := "no Python process ran the agent"
		if m.Command.Mode == "launcher" {
			why += " (launcher mode profiles Python processes that run a script or -m module; " +
				"check that the launcher starts Python with the inherited PYTHONPATH)"
		}
		r.Missing = append(r.Missing, rundir.Missing{What: "all agent data", Why: why})
	}
	return r
}

// childWork says where the program's work went when its main process
// took no step and mostly waited for the child processes it started
// (torch.multiprocessing.spawn's ranks, a Hogwild trainer's
// multiprocessing.Process): the run profiles the process it starts and
// DataLoader workers, not those children, so the report would otherwise
// say only that no step was seen. nil otherwise.
func childWork(pf *rundir.ProcessFiles) *rundir.Missing {
	if pf.Evidence == nil || len(pf.Evidence.StepSeries()) > 0 {
		return nil
	}
	share, at := pf.Profile.ChildWait()
	if share < 0.5 {
		return nil
	}
	where := ""
	if at.File != "" {
		where = fmt.Sprintf(" at %s:%d", filepath.Base(at.File), at.Line)
	}
	oversubscribed := ""
	if c, cpus := pf.Evidence.Children, pf.Env.CPUs(); c.Oversubscribed(cpus) {
		// what the agent could read of them (run.startup's change too)
		oversubscribed = fmt.Sprintf("; the children oversubscribed the CPUs, %d at once keeping %.1f threads wanting a CPU on %d CPUs, waiting for one %.0f%% of their time "+
			"(each with torch's default of an intra-op thread per CPU): torch.set_num_threads(%d) first in the function each runs",
			c.MostAlive, c.Runnable(), cpus, 100*c.WaitShare(), c.ThreadsEach(cpus))
	}
	return &rundir.Missing{Tag: pf.Tag, What: "the program's work",
		Why: fmt.Sprintf("the main process waited for the child processes it started%s %.0f%% of its time: `bottleneck run` profiles the process it starts "+
			"and its DataLoader workers, not children started with multiprocessing or torch.multiprocessing.spawn; "+
			"launch the ranks with torchrun instead (bottleneck run -- torchrun --nproc-per-node=N script.py profiles each rank), "+
			"or call the training function in the main process to profile one%s", where, 100*share, oversubscribed)}
}

// topN is how many call sites each list keeps in the report.
const topN = 10

func pythonTops(p *pyprofile.Profile) []pyprofile.Top {
	var out []pyprofile.Top
	// With thread CPU clocks, tables rank on-CPU time of the threads that
	// work; threads that mostly wait are listed apart (waitingThreads).
	waiting := make([]bool, len(p.Threads))
	for i := range p.Threads {
		waiting[i] = p.Waiting(i)
	}
	working := func(i int) bool { return !waiting[i] }
	for _, window := range []bool{true, false} {
		if window && (p.Profiler == "cprofile" || p.WindowSamples == 0) {
			continue
		}
		for _, role := range p.Roles() {
			o := pyprofile.Options{Role: role, Window: window, Attribution: pyprofile.User, N: topN}
			if p.CPUClock {
				o.OnCPU, o.Threads = true, working
			}
			t := p.TopSites(o)
			if t.Samples == 0 && t.TotalS == 0 {
				continue
			}
			out = append(out, t)
		}
	}
	return out
}

// WaitingThread is a thread that spent its sampled time mostly off the
// CPU, with the site where it waited most.
type WaitingThread struct {
	Name  string         `json:"name"`
	Role  string         `json:"role"`
	WallS float64        `json:"wall_s"`
	CPUS  float64        `json:"cpu_s"`
	Where pyprofile.Site `json:"where"`
}

func waitingThreads(p *pyprofile.Profile) []WaitingThread {
	var out []WaitingThread
	for i, th := range p.Threads {
		if !p.Waiting(i) {
			continue
		}
		t := p.TopSites(pyprofile.Options{Threads: func(j int) bool { return j == i }, N: 1})
		w := WaitingThread{Name: th.Name, Role: th.Role, WallS: t.TotalS, CPUS: th.CPUS}
		if len(t.BySelf) > 0 {
			w.Where = t.BySelf[0]
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].WallS > out[j].WallS })
	return out
}

// WriteText writes the run section as text.
func WriteText(w io.Writer, r *Report) {
	w = textsafe.Writer(w)
	if r.Manifest != nil && r.Manifest.Command.Mode == "in-process" { // runner.InProcess
		// recorded by the Python API around a block of a running program
		fmt.Fprintf(w, "bottleneck_profiler.profile() in: %s\n", strings.Join(quoteArgs(r.Command), " "))
		fmt.Fprintf(w, "  block of %s; run directory %s\n", units.Seconds(r.DurationS), r.RunDir)
	} else {
		fmt.Fprintf(w, "bottleneck run: %s\n", strings.Join(quoteArgs(r.Command), " "))
	}
	if r.Exit != nil {
		how := fmt.Sprintf("exit status %d", r.Exit.Code)
		if r.Exit.Signal != "" {
			how += " (" + r.Exit.Signal + ")"
		}
		if r.Exit.Reason != "exited" && r.Exit.Reason != "signaled" {
			how += ", " + r.Exit.Reason
		}
		fmt.Fprintf(w, "  %s after %s; run directory %s\n", how, units.Seconds(r.DurationS), r.RunDir)
	}
	if m := r.Manifest; m != nil {
		for _, f := range m.Files {
			if f.Kind == rundir.KindCrash && f.Bytes > 0 {
				fmt.Fprintf(w, "  %s crashed: every thread's Python stack at the crash is in %s\n", f.Tag, filepath.Join(r.RunDir, f.Path))
			}
		}
	}
	if r.Interrupted != "" {
		fmt.Fprintf(w, "  %s\n", r.Interrupted)
	}
	writeTried(w, r.Tried)
	if len(r.Repro) > 0 {
		fmt.Fprintln(w, "Repro scripts of the hot ops (python3 SCRIPT times the op as recorded and its variants; docs/repro.md):")
		for _, p := range r.Repro {
			fmt.Fprintf(w, "  %s\n", filepath.Join(r.RunDir, p))
		}
	}
	for _, p := range r.Processes {
		fmt.Fprintln(w)
		if len(r.Processes) > 1 {
			fmt.Fprintf(w, "== %s (pid %d)\n", p.Tag, p.PID)
		}
		writeEnv(w, p.Env, r.Host)
		if p.Evidence != nil {
			writeSteps(w, p.Evidence)
			writeSeries(w, p.StepSeries)
			writeDataLoader(w, p.Evidence)
			writeWorkers(w, p.Workers)
			writePhases(w, p.Evidence.FrameworkPhases)
			writeSyncs(w, p.Evidence)
		}
		writePython(w, p)
	}
	if len(r.Missing) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Not recorded:")
		for _, m := range r.Missing {
			tag := ""
			if m.Tag != "" && len(r.Processes) > 1 {
				tag = "[" + m.Tag + "] "
			}
			fmt.Fprintf(w, "  - %s%s: %s\n", tag, m.What, m.Why)
		}
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
}

// writeTried writes each change `run --verify` tried: measured against
// predicted (docs/try.md).
func writeTried(w io.Writer, tried []rundir.TriedChange) {
	if len(tried) == 0 {
		return
	}
	fmt.Fprintln(w, "Tried (run --verify), measured against predicted:")
	for _, c := range tried {
		what := textsafe.String(rundir.TriedWhat(c.Set, c.Args))
		if c.Numerics {
			what += " (changes numerics)"
		}
		if c.Error != "" {
			fmt.Fprintf(w, "  %s (%s): not measured: %s\n", what, c.Rule, c.Error)
			continue
		}
		measured := measuredText("", c.MeanBaseUs, c.MeanNewUs, " a step on average", c.MeanSpeedup, c.MeanLow, c.MeanHigh, c.Significant)
		if wk := c.Work; wk != nil {
			// a step is not the same unit in both runs: a call is what
			// compares with the prediction (rundir.StepWork)
			measured = measuredText("a call of the model ", wk.BaseUs, wk.NewUs, "", wk.Speedup, wk.Low, wk.High, wk.Significant)
		}
		fmt.Fprintf(w, "  %s (%s): %s; predicted %.2fx (%.0f%% of the step, %s)\n", what, c.Rule, measured, c.PredictedSpeedup, c.PredictedSavingPct, cmp.Or(c.PredictedMethod, "share"))
		if wk := c.Work; wk != nil {
			fmt.Fprintf(w, "    the steps did different work: %.1f %s a step as it is, %.1f changed: %s -> %s a step on average, %.2fx\n",
				wk.BasePerStep, wk.Unit, wk.NewPerStep, units.Duration(c.MeanBaseUs), units.Duration(c.MeanNewUs), c.MeanSpeedup)
		}
		if c.NewVerdict != "" && c.NewVerdict != c.BaseVerdict {
			fmt.Fprintf(w, "    verdict %s -> %s\n", c.BaseVerdict, c.NewVerdict)
		}
		if c.Caveat != "" {
			fmt.Fprintf(w, "    %s\n", c.Caveat)
		}
		fmt.Fprintf(w, "    run: %s\n", c.Dir)
	}
}

// measuredText is "WHAT BASE -> NEW UNIT" with the speed-up and its 95%
// interval (low 0: not known).
func measuredText(what string, baseUs, newUs float64, unit string, speedup, low, high float64, significant bool) string {
	s := fmt.Sprintf("%s%s -> %s%s", what, units.Duration(baseUs), units.Duration(newUs), unit)
	switch {
	case low <= 0:
		return s + fmt.Sprintf(", %.2fx", speedup)
	case !significant:
		return s + fmt.Sprintf(": no significant change (95%% interval %.2fx to %.2fx)", low, high)
	}
	return s + fmt.Sprintf(", %.2fx (95%% interval %.2fx to %.2fx)", speedup, low, high)
}

func quoteArgs(a []string) []string {
	out := make([]string, len(a))
	for i, s := range a {
		if s == "" || strings.ContainsAny(s, " \t\"'$\\") {
			s = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
		out[i] = s
	}
	return out
}

func writeEnv(w io.Writer, e *rundir.Env, host map[string]any) {
	if e == nil {
		fmt.Fprintln(w, "Environment: not recorded")
		return
	}
	fmt.Fprintf(w, "Environment: %s %s, %d CPUs", e.Python.Implementation, e.Python.Version, e.CPUCount)
	if e.CPUAffinity > 0 && e.CPUAffinity != e.CPUCount {
		fmt.Fprintf(w, " (%d usable)", e.CPUAffinity)
	}
	fmt.Fprintf(w, ", %s\n", e.Platform)
	t := e.Torch
	if t == nil {
		fmt.Fprintln(w, "  torch: not imported by the program")
	} else {
		fmt.Fprintf(w, "  torch %s (%s build", t.Version, t.Build)
		if t.CUDA != nil {
			fmt.Fprintf(w, ", CUDA %s", *t.CUDA)
		}
		if t.HIP != nil {
			fmt.Fprintf(w, ", ROCm %s", *t.HIP)
		}
		if t.CuDNN != nil {
			fmt.Fprintf(w, ", cuDNN %v", t.CuDNN)
		}
		if t.NCCL != nil {
			fmt.Fprintf(w, ", NCCL %v", t.NCCL)
		}
		fmt.Fprintf(w, "), threads %d intra-op / %d inter-op", t.NumThreads, t.NumInteropThreads)
		if !t.KinetoAvailable {
			fmt.Fprint(w, ", no Kineto profiler")
		}
		fmt.Fprintln(w)
		if len(t.Devices) == 0 {
			if t.CUDAInitialized {
				fmt.Fprintln(w, "  devices: none")
			} else {
				fmt.Fprintln(w, "  devices: CUDA not used by the program")
			}
		}
		for _, d := range t.Devices {
			fmt.Fprintf(w, "  cuda:%d %s, %.1f GiB, compute capability %s\n", d.Index, d.Name,
				float64(d.TotalMemory)/(1<<30), d.Capability)
		}
		if len(t.Flags) > 0 {
			keys := make([]string, 0, len(t.Flags))
			for k := range t.Flags {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				if t.Flags[k] != nil {
					parts = append(parts, fmt.Sprintf("%s=%v", k, t.Flags[k]))
				}
			}
			fmt.Fprintf(w, "  flags: %s\n", strings.Join(parts, " "))
		}
		if t.Distributed != nil {
			fmt.Fprintf(w, "  distributed: backend %v, rank %v of %v\n", t.Distributed["backend"],
				t.Distributed["rank"], t.Distributed["world_size"])
		}
	}
	if gpus, ok := host["nvidia_smi"].([]any); ok && len(gpus) > 0 {
		if g, ok := gpus[0].(map[string]any); ok {
			fmt.Fprintf(w, "  driver %v (nvidia-smi, %d GPUs)\n", g["driver_version"], len(gpus))
		}
	}
	if len(e.EnvVars) > 0 {
		fmt.Fprintf(w, "  env: %s\n", joinSorted(e.EnvVars, "=", " "))
	}
	if len(e.Packages) > 0 {
		fmt.Fprintf(w, "  packages: %s\n", joinSorted(e.Packages, " ", ", "))
	}
}

// joinSorted renders m as "k<kv>v" pairs in key order, separated by sep.
func joinSorted(m map[string]string, kv, sep string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + kv + m[k]
	}
	return strings.Join(parts, sep)
}

// writeSeries draws the run's step times and says what stands out.
func writeSeries(w io.Writer, s *steptimes.Summary) {
	if s == nil || s.Steps < 2 {
		return
	}
	per := ""
	if s.StepsPerColumn > 1 {
		per = fmt.Sprintf(", %d steps per column, the slowest shown", s.StepsPerColumn)
	}
	fmt.Fprintf(w, "  step times (every step of the run, median %s%s):\n    %s\n", units.Seconds(s.MedianS), per, s.Spark)
	if s.Window != "" {
		fmt.Fprintf(w, "    %s profiled window\n", s.Window)
	}
	for _, n := range s.Notes() {
		fmt.Fprintf(w, "  %s\n", n)
	}
}

// StepSource says what the agent counted as a step, in words ("none
// detected" without a source), and how many the program made: the
// source's calls, one more than the steps timed (the first has no start).
func StepSource(ev *rundir.Evidence) (string, int) {
	if ev.StepSource == nil {
		return "none detected", ev.Steps
	}
	return StepSourceName(*ev.StepSource), max(ev.Steps, ev.StepCounts[*ev.StepSource])
}

func writeSteps(w io.Writer, ev *rundir.Evidence) {
	src, n := StepSource(ev)
	fmt.Fprintf(w, "Steps: %d %s, %d timed", n, src, ev.Steps)
	if ev.StepStats.MeanS != nil {
		fmt.Fprintf(w, ", mean %s, min %s, max %s", units.Seconds(*ev.StepStats.MeanS), units.Seconds(*ev.StepStats.MinS), units.Seconds(*ev.StepStats.MaxS))
	}
	fmt.Fprintln(w)
	if sw := ev.StepSourceSwitch; sw != nil && sw.AfterSteps > 0 { // none counted: nothing was dropped
		fmt.Fprintf(w, "  steps were %s until an optimizer stepped %s into the run (%d of them, not counted): they were not training iterations "+
			"(an evaluation before training, a long first batch, gradient accumulation's micro-batches); the steps and the window are optimizer.step() calls from then on\n", StepSourceName(sw.From), units.Seconds(sw.AtS), sw.AfterSteps)
	}
	for _, st := range ev.StepStages {
		which := st.Optimizer
		if st.Site != nil {
			which += fmt.Sprintf(" at %s:%d", filepath.Base(st.Site.File), st.Site.Line)
		}
		fmt.Fprintf(w, "  from step %d, %s into the run, the steps are another optimizer's (%s) optimizer.step() calls: the first stopped stepping and this one stepped %d times in a row "+
			"(a later stage of training; those %d are not timed)\n", st.AfterStep+1, units.Seconds(st.AtS), which, st.Untimed, st.Untimed)
	}
	for _, win := range ev.Profiler.Windows {
		first, last := 0, 0
		if len(win.Steps) > 0 {
			first, last = win.Steps[0], win.Steps[len(win.Steps)-1]
		}
		fmt.Fprintf(w, "  window %d: steps %d-%d -> %s", win.Index, first, last, win.File)
		if win.Bytes > 0 {
			fmt.Fprintf(w, " (%s, written in %s)", units.Bytes(win.Bytes), units.Seconds(win.ExportS))
		}
		if win.Partial {
			fmt.Fprint(w, " [partial: the program ended during the window]")
		}
		if win.ClosedBy != "" {
			fmt.Fprintf(w, " [closed after %d steps by the %s bound: %s]", len(win.Steps), win.ClosedBy, win.ClosedDetail)
		}
		if e := ev.Profiler.EarlyStart; win.Index == 1 && e != nil {
			took := make([]string, len(e.StepS))
			for i, s := range e.StepS {
				took[i] = units.Seconds(s)
			}
			fmt.Fprintf(w, " [started early: the steps before it took %s, past their warm-up]", strings.Join(took, " and "))
		}
		if n, a := ev.Profiler.ActiveSteps, ev.Profiler.Schedule["active"]; win.Index == 1 && a > 0 && n > a {
			fmt.Fprintf(w, " [%d steps, not %d: %d took under --min-window]", n, a, a)
		}
		if win.Error != "" {
			fmt.Fprintf(w, " [error: %s]", win.Error)
		}
		fmt.Fprintln(w)
	}
}

// StepSourceName says what a step source's steps are ("optimizer":
// "optimizer.step() calls"); unknown names come back quoted.
func StepSourceName(source string) string {
	if n, ok := map[string]string{"optimizer": "optimizer.step() calls", "dataloader": "DataLoader batches",
		"forward": "outermost nn.Module forward calls", "closure": "evaluations of the closure of one long optimizer.step(closure)"}[source]; ok {
		return n
	}
	return strconv.Quote(source)
}

func writeDataLoader(w io.Writer, ev *rundir.Evidence) {
	dl := ev.DataLoader
	if dl.Batches == 0 && len(dl.Loaders) == 0 {
		fmt.Fprintln(w, "DataLoader: not used")
		return
	}
	var stepSum, waitSum float64
	n := 0
	for _, s := range ev.WindowSteps {
		stepSum += s.DurationS
		waitSum += s.DataLoaderWaitS
		n++
	}
	if n > 0 && stepSum > 0 {
		fmt.Fprintf(w, "DataLoader: waited %s per step in the window (%.0f%% of step time; whole run %s over %d batches)\n",
			units.Seconds(waitSum/float64(n)), 100*waitSum/stepSum, units.Seconds(dl.WaitS), dl.Batches)
	} else {
		fmt.Fprintf(w, "DataLoader: waited %s over %d batches (%s per batch)\n", units.Seconds(dl.WaitS), dl.Batches,
			units.Seconds(dl.WaitS/float64(max(dl.Batches, 1))))
	}
	for _, l := range dl.Loaders {
		fmt.Fprintf(w, "  loader %d: %s, %d batches, wait %s (max %s); num_workers=%s pin_memory=%s persistent_workers=%s batch_size=%s",
			l.ID, l.Dataset, l.Batches, units.Seconds(l.WaitS), units.Seconds(l.MaxWaitS), ptr(l.NumWorkers), ptr(l.PinMemory),
			ptr(l.PersistentWorkers), ptr(l.BatchSize))
		if l.MultiprocessingCtx != "" {
			fmt.Fprintf(w, " start_method=%s", l.MultiprocessingCtx)
		}
		fmt.Fprintln(w)
	}
}

// writeWorkers writes the "DataLoader workers" section: the worker
// processes' samples, how much of them produced batches, and the lines.
func writeWorkers(w io.Writer, s *pyprofile.WorkerSummary) {
	if s == nil {
		return
	}
	cpu := ""
	if s.CPUShare >= 0 {
		cpu = fmt.Sprintf(", %.0f%% of that on a CPU", 100*s.CPUShare)
	}
	fmt.Fprintf(w, "DataLoader workers: %d worker processes, %d samples; producing batches %.0f%% of their time%s, the rest waiting for indices\n",
		s.Processes, s.Samples, 100*s.BusyShare, cpu)
	for i, l := range s.Lines {
		if i == 5 {
			break
		}
		fmt.Fprintf(w, "  %5.1f%% of busy  %s:%d %s\n", l.BusyPct, shortPath(l.File), l.Line, l.Func)
	}
	if len(s.PerWorker) > 1 {
		var b strings.Builder
		for i, p := range s.PerWorker {
			if i == 8 {
				fmt.Fprintf(&b, " ... %d more", len(s.PerWorker)-8)
				break
			}
			fmt.Fprintf(&b, " %s pid %d %.0f%% busy (%d samples);", ptr(p.WorkerID), p.PID, 100*p.BusyShare, p.Samples)
		}
		fmt.Fprintf(w, "  per worker (id, pid):%s\n", strings.TrimSuffix(b.String(), ";"))
	}
}

// phaseRows is how many phases the text report lists.
const phaseRows = 10

// frameworkTitle names the frameworks of FrameworkPhases.
var frameworkTitle = map[string]string{"lightning": "Lightning", "transformers": "Hugging Face Trainer"}

// writePhases writes the largest phases by self time, the rest in one
// line, and the time outside any phase: the lines add up to the wall time.
func writePhases(w io.Writer, fp *rundir.FrameworkPhases) {
	if fp == nil || len(fp.Phases) == 0 || fp.WallS <= 0 {
		return
	}
	name := frameworkTitle[fp.Framework]
	if name == "" {
		name = fp.Framework
	}
	fmt.Fprintf(w, "%s phases (whole run, self time adds up to the wall time %s):\n", name, units.Seconds(fp.WallS))
	fmt.Fprintf(w, "  %10s %6s %7s %10s  %s\n", "self", "share", "calls", "total", "phase")
	share := func(s float64) string { return fmt.Sprintf("%.1f%%", 100*s/fp.WallS) }
	phases := slices.Clone(fp.Phases)
	slices.SortStableFunc(phases, func(a, b rundir.Phase) int { return cmp.Compare(b.SelfS, a.SelfS) })
	for i, ph := range phases {
		if i == phaseRows {
			var rest float64
			for _, r := range phases[i:] {
				rest += r.SelfS
			}
			fmt.Fprintf(w, "  %10s %6s %7s %10s  %d other phases\n", units.Seconds(rest), share(rest), "", "", len(phases)-i)
			break
		}
		fmt.Fprintf(w, "  %10s %6s %7d %10s  %s\n", units.Seconds(ph.SelfS), share(ph.SelfS), ph.Calls, units.Seconds(ph.TotalS),
			report.ElideMiddle(ph.Name, 70))
	}
	fmt.Fprintf(w, "  %10s %6s %7s %10s  outside any phase\n", units.Seconds(fp.OutsideS), share(fp.OutsideS), "", "")
}

func ptr[T any](p *T) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func writeSyncs(w io.Writer, ev *rundir.Evidence) {
	s := ev.Syncs
	switch s.State {
	case "recorded", "on":
		if s.Total == 0 {
			fmt.Fprintln(w, "CUDA implicit syncs in the window: none")
			return
		}
		fmt.Fprintf(w, "CUDA implicit syncs in the window: %d\n", s.Total)
		for i, site := range s.Sites {
			if i == 5 {
				fmt.Fprintf(w, "  ... %d more sites\n", len(s.Sites)-5)
				break
			}
			fmt.Fprintf(w, "  %5d  %s:%d (%s)\n", site.Count, site.File, site.Line, site.Func)
		}
	}
}

func writePython(w io.Writer, p ProcessReport) {
	if p.PythonNote != "" {
		fmt.Fprintln(w, p.PythonNote)
	}
	for _, t := range p.Python {
		if len(t.BySelf) == 0 {
			continue
		}
		scope := "whole run"
		if t.Window {
			scope = "recorded window"
		}
		kind := "wall-clock samples"
		if t.OnCPU {
			kind = "on-CPU samples"
		}
		if t.Profiler == "cprofile" {
			kind = "cProfile"
		}
		threads := ""
		if t.Threads > 1 {
			threads = fmt.Sprintf(", %d threads", t.Threads)
		}
		role := t.Role + " thread"
		if t.Role == "other" {
			role = "other threads"
		}
		if t.Role != "main" && len(t.Names) > 0 {
			role += " (" + threadNames(t.Names) + ")"
		}
		fmt.Fprintf(w, "Python call sites, %s, %s (%s, %s%s):\n", role, scope, kind, units.Seconds(t.TotalS), threads)
		fmt.Fprintf(w, "  %7s %7s  %s\n", "self%", "total%", "site")
		n := 0
		for _, s := range t.BySelf {
			if n == 5 {
				break
			}
			if s.SelfPct < 1 && n > 0 {
				break
			}
			n++
			fmt.Fprintf(w, "  %6.1f%% %6.1f%%  %s:%d %s\n", s.SelfPct, s.TotalPct, shortPath(s.File), s.Line, s.Func)
		}
	}
	if len(p.Waiting) > 0 {
		fmt.Fprintln(w, "Waiting threads (under 10% of their samples on a CPU; left out of the tables above):")
		for i, t := range p.Waiting {
			if i == 5 {
				fmt.Fprintf(w, "  ... %d more\n", len(p.Waiting)-5)
				break
			}
			where := ""
			if t.Where.File != "" {
				where = fmt.Sprintf(", mostly at %s:%d %s", shortPath(t.Where.File), t.Where.Line, t.Where.Func)
			}
			fmt.Fprintf(w, "  %s (%s): %s CPU in %s%s\n", report.Printable(t.Name), t.Role, units.Seconds(t.CPUS), units.Seconds(t.WallS), where)
		}
	}
}

// threadNames lists up to three thread names.
func threadNames(names []string) string {
	var b strings.Builder
	for i, n := range names {
		if i == 3 {
			fmt.Fprintf(&b, ", +%d", len(names)-3)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(report.Printable(n))
	}
	return b.String()
}

func shortPath(f string) string {
	if i := strings.Index(f, "/site-packages/"); i >= 0 {
		return f[i+len("/site-packages/"):]
	}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, f); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return f
}
