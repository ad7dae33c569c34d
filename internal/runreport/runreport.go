// Package runreport renders the part of the `bottleneck run` report that
// comes from the agent rather than from the traces: the environment
// summary, the steps and the recorded window, DataLoader wait, CUDA
// implicit-sync call sites, the top Python call sites per thread role, and
// what could not be recorded and why. It reads a run directory (files
// documented in docs/run.md) and knows nothing of processes or flags.
package runreport

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
)

// Schema names the JSON form of the run section.
const Schema = "bottleneck.run-report/1"

// Report is the run section of report.json.
type Report struct {
	Schema    string           `json:"schema"`
	RunDir    string           `json:"run_dir"`
	Command   []string         `json:"command"`
	Exit      *runner.Exit     `json:"exit,omitempty"`
	DurationS float64          `json:"duration_s"`
	Processes []ProcessReport  `json:"processes"`
	Missing   []Missing        `json:"missing"`
	Warnings  []string         `json:"warnings,omitempty"`
	Manifest  *runner.Manifest `json:"-"`
	Host      map[string]any   `json:"host,omitempty"`
}

// Missing is something the run could not record, and why.
type Missing struct {
	Tag  string `json:"tag,omitempty"`
	What string `json:"what"`
	Why  string `json:"why"`
}

// ProcessReport is one profiled process (one rank).
type ProcessReport struct {
	Tag        string          `json:"tag"`
	PID        int             `json:"pid"`
	Env        *Env            `json:"env,omitempty"`
	Evidence   *Evidence       `json:"evidence,omitempty"`
	Python     []pyprofile.Top `json:"python,omitempty"` // window and whole run, per role
	PythonNote string          `json:"python_note,omitempty"`
}

// Env is the subset of env-<tag>.json the report shows.
type Env struct {
	Python struct {
		Version        string `json:"version"`
		Implementation string `json:"implementation"`
		Executable     string `json:"executable"`
	} `json:"python"`
	Platform    string            `json:"platform"`
	CPUCount    int               `json:"cpu_count"`
	CPUAffinity int               `json:"cpu_affinity"`
	EnvVars     map[string]string `json:"env"`
	Packages    map[string]string `json:"packages"`
	Torch       *struct {
		Version           string         `json:"version"`
		Build             string         `json:"build"`
		CUDA              *string        `json:"cuda"`
		HIP               *string        `json:"hip"`
		CuDNN             any            `json:"cudnn"`
		NCCL              any            `json:"nccl"`
		NumThreads        int            `json:"num_threads"`
		NumInteropThreads int            `json:"num_interop_threads"`
		KinetoAvailable   bool           `json:"kineto_available"`
		Activities        []string       `json:"profiler_activities"`
		CUDAInitialized   bool           `json:"cuda_initialized"`
		Flags             map[string]any `json:"flags"`
		Devices           []struct {
			Index       int    `json:"index"`
			Name        string `json:"name"`
			TotalMemory int64  `json:"total_memory"`
			Capability  string `json:"capability"`
		} `json:"devices"`
		Distributed map[string]any `json:"distributed"`
	} `json:"torch"`
}

// Evidence mirrors evidence-<tag>.json (docs/run.md, "Evidence").
type Evidence struct {
	Format     string         `json:"format"`
	Tag        string         `json:"tag"`
	PID        int            `json:"pid"`
	Final      bool           `json:"final"`
	Exit       map[string]any `json:"exit"`
	StepSource *string        `json:"step_source"`
	StepCounts map[string]int `json:"step_counts"`
	Steps      int            `json:"steps"`
	StepStats  struct {
		Count int      `json:"count"`
		SumS  float64  `json:"sum_s"`
		MinS  *float64 `json:"min_s"`
		MaxS  *float64 `json:"max_s"`
		MeanS *float64 `json:"mean_s"`
	} `json:"step_stats"`
	Profiler struct {
		State      string         `json:"state"`
		Schedule   map[string]int `json:"schedule"`
		Activities []string       `json:"activities"`
		Windows    []struct {
			Index   int     `json:"index"`
			File    string  `json:"file"`
			Partial bool    `json:"partial"`
			Steps   []int   `json:"steps"`
			Bytes   int64   `json:"bytes"`
			ExportS float64 `json:"export_s"`
			Error   string  `json:"error"`
		} `json:"windows"`
	} `json:"profiler"`
	WindowSteps []WindowStep `json:"window_steps"`
	// StepTimes: [step, start s, duration s, in window] of every step
	// (the agent keeps the first 20000).
	StepTimes  [][]any `json:"step_times"`
	DataLoader struct {
		Batches       int          `json:"batches"`
		WaitS         float64      `json:"wait_s"`
		WindowBatches int          `json:"window_batches"`
		WindowWaitS   float64      `json:"window_wait_s"`
		Loaders       []LoaderInfo `json:"loaders"`
	} `json:"dataloader"`
	Syncs struct {
		State string     `json:"state"`
		Total int        `json:"total"`
		Sites []SyncSite `json:"sites"`
	} `json:"syncs"`
	PythonProfiler string    `json:"python_profiler"`
	Missing        []Missing `json:"missing"`
	Errors         []string  `json:"errors"`
	Notes          []string  `json:"notes"`
}

// WindowStep is one step of the recorded window.
type WindowStep struct {
	Window            int     `json:"window"`
	Step              int     `json:"step"`
	DurationS         float64 `json:"duration_s"`
	DataLoaderWaitS   float64 `json:"dataloader_wait_s"`
	DataLoaderBatches int     `json:"dataloader_batches"`
	Syncs             int     `json:"syncs"`
}

// LoaderInfo is one DataLoader the program iterated.
type LoaderInfo struct {
	ID                 int     `json:"id"`
	Iterator           string  `json:"iterator"`
	NumWorkers         *int    `json:"num_workers"`
	PinMemory          *bool   `json:"pin_memory"`
	PersistentWorkers  *bool   `json:"persistent_workers"`
	PrefetchFactor     *int    `json:"prefetch_factor"`
	BatchSize          *int    `json:"batch_size"`
	Dataset            string  `json:"dataset"`
	MultiprocessingCtx string  `json:"multiprocessing_context"`
	Batches            int     `json:"batches"`
	WaitS              float64 `json:"wait_s"`
	MaxWaitS           float64 `json:"max_wait_s"`
}

// SyncSite is the user call site of implicit host-device syncs.
type SyncSite struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Func  string `json:"func"`
	Count int    `json:"count"`
}

// Build reads the run directory.
func Build(dir string) (*Report, error) {
	m, err := runner.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	r := &Report{Schema: Schema, RunDir: dir, Command: m.Command.Argv, Exit: m.Exit, DurationS: m.DurationS, Manifest: m}
	var envSum struct {
		Host map[string]any `json:"host"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "env.json")); err == nil {
		_ = json.Unmarshal(b, &envSum)
		r.Host = envSum.Host
	}
	tags := map[string]bool{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		kind, tag := runner.FileKind(e.Name())
		if kind == "evidence" || kind == "pyprofile" || kind == "process-env" {
			tags[tag] = true
		}
	}
	var order []string
	for t := range tags {
		order = append(order, t)
	}
	sort.Slice(order, func(i, j int) bool { return tagLess(order[i], order[j]) })
	for _, tag := range order {
		p := ProcessReport{Tag: tag}
		var env Env
		if readJSON(filepath.Join(dir, "env-"+tag+".json"), &env) == nil {
			p.Env = &env
		}
		var ev Evidence
		if err := readJSON(filepath.Join(dir, "evidence-"+tag+".json"), &ev); err == nil {
			p.Evidence = &ev
			p.PID = ev.PID
			for _, mm := range ev.Missing {
				r.Missing = append(r.Missing, Missing{Tag: tag, What: mm.What, Why: mm.Why})
			}
			if !ev.Final {
				r.Missing = append(r.Missing, Missing{Tag: tag, What: "final agent data",
					Why: "the process ended before the agent could save (killed?); files hold the last checkpoint"})
			}
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: no evidence file: %v", tag, err))
		}
		pp := filepath.Join(dir, "pyprofile-"+tag+".json")
		if prof, err := pyprofile.ReadFile(pp); err == nil {
			p.Python = pythonTops(prof)
		} else if !os.IsNotExist(err) {
			r.Warnings = append(r.Warnings, err.Error())
		} else if p.Evidence != nil && p.Evidence.PythonProfiler == "off" {
			p.PythonNote = "Python profiler off (--python-profiler off)"
		} else {
			r.Missing = append(r.Missing, Missing{Tag: tag, What: "Python profile", Why: "no pyprofile file was written"})
		}
		r.Processes = append(r.Processes, p)
	}
	if len(r.Processes) == 0 {
		why := "no Python process ran the agent"
		if m.Command.Mode == string(runner.Launcher) {
			why += " (launcher mode profiles Python processes that run a script or -m module; " +
				"check that the launcher starts Python with the inherited PYTHONPATH)"
		}
		r.Missing = append(r.Missing, Missing{What: "all agent data", Why: why})
	}
	return r, nil
}

// tagLess orders rank0 < rank1 < rank10 < others.
func tagLess(a, b string) bool {
	var ra, rb int
	_, ea := fmt.Sscanf(a, "rank%d", &ra)
	_, eb := fmt.Sscanf(b, "rank%d", &rb)
	if ea == nil && eb == nil && ra != rb {
		return ra < rb
	}
	return a < b
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// topN is how many call sites each list keeps in the report.
const topN = 10

func pythonTops(p *pyprofile.Profile) []pyprofile.Top {
	var out []pyprofile.Top
	for _, window := range []bool{true, false} {
		if window && (p.Profiler == "cprofile" || p.WindowSamples == 0) {
			continue
		}
		for _, role := range p.Roles() {
			t := p.TopSites(pyprofile.Options{Role: role, Window: window, Attribution: pyprofile.User, N: topN})
			if t.Samples == 0 && t.TotalS == 0 {
				continue
			}
			out = append(out, t)
		}
	}
	return out
}

// WriteJSON writes the run section as JSON.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the run section as text.
func WriteText(w io.Writer, r *Report) {
	fmt.Fprintf(w, "bottleneck run: %s\n", strings.Join(quoteArgs(r.Command), " "))
	if r.Exit != nil {
		how := fmt.Sprintf("exit status %d", r.Exit.Code)
		if r.Exit.Signal != "" {
			how += " (" + r.Exit.Signal + ")"
		}
		if r.Exit.Reason != "exited" && r.Exit.Reason != "signaled" {
			how += ", " + r.Exit.Reason
		}
		fmt.Fprintf(w, "  %s after %.1fs; run directory %s\n", how, r.DurationS, r.RunDir)
	}
	for _, p := range r.Processes {
		fmt.Fprintln(w)
		if len(r.Processes) > 1 {
			fmt.Fprintf(w, "== %s (pid %d)\n", p.Tag, p.PID)
		}
		writeEnv(w, p.Env, r.Host)
		if p.Evidence != nil {
			writeSteps(w, p.Evidence)
			writeDataLoader(w, p.Evidence)
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

func writeEnv(w io.Writer, e *Env, host map[string]any) {
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

func ms(s float64) string { return fmt.Sprintf("%.1f ms", s*1e3) }

func writeSteps(w io.Writer, ev *Evidence) {
	src := "none detected"
	if ev.StepSource != nil {
		src = map[string]string{"optimizer": "optimizer.step() calls", "dataloader": "DataLoader batches",
			"forward": "outermost nn.Module forward calls"}[*ev.StepSource]
	}
	fmt.Fprintf(w, "Steps: %d (%s)", ev.Steps, src)
	if ev.StepStats.MeanS != nil {
		fmt.Fprintf(w, ", mean %s, min %s, max %s", ms(*ev.StepStats.MeanS), ms(*ev.StepStats.MinS), ms(*ev.StepStats.MaxS))
	}
	fmt.Fprintln(w)
	for _, win := range ev.Profiler.Windows {
		first, last := 0, 0
		if len(win.Steps) > 0 {
			first, last = win.Steps[0], win.Steps[len(win.Steps)-1]
		}
		fmt.Fprintf(w, "  window %d: steps %d-%d -> %s", win.Index, first, last, win.File)
		if win.Bytes > 0 {
			fmt.Fprintf(w, " (%.1f kB, written in %.2fs)", float64(win.Bytes)/1e3, win.ExportS)
		}
		if win.Partial {
			fmt.Fprint(w, " [partial: the program ended during the window]")
		}
		if win.Error != "" {
			fmt.Fprintf(w, " [error: %s]", win.Error)
		}
		fmt.Fprintln(w)
	}
}

func writeDataLoader(w io.Writer, ev *Evidence) {
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
			ms(waitSum/float64(n)), 100*waitSum/stepSum, ms(dl.WaitS), dl.Batches)
	} else {
		fmt.Fprintf(w, "DataLoader: waited %s over %d batches (%s per batch)\n", ms(dl.WaitS), dl.Batches,
			ms(dl.WaitS/float64(max(dl.Batches, 1))))
	}
	for _, l := range dl.Loaders {
		fmt.Fprintf(w, "  loader %d: %s, %d batches, wait %s (max %s); num_workers=%s pin_memory=%s persistent_workers=%s batch_size=%s",
			l.ID, l.Dataset, l.Batches, ms(l.WaitS), ms(l.MaxWaitS), ptr(l.NumWorkers), ptr(l.PinMemory),
			ptr(l.PersistentWorkers), ptr(l.BatchSize))
		if l.MultiprocessingCtx != "" {
			fmt.Fprintf(w, " start_method=%s", l.MultiprocessingCtx)
		}
		fmt.Fprintln(w)
	}
}

func ptr[T any](p *T) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func writeSyncs(w io.Writer, ev *Evidence) {
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
		fmt.Fprintf(w, "Python call sites, %s, %s (%s, %.2fs%s):\n", role, scope, kind, t.TotalS, threads)
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
