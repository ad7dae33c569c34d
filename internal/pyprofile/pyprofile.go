// Package pyprofile reads the Python profile that `bottleneck run` records
// (pyprofile-<tag>.json in a run directory) and answers the questions the
// reports ask of it: the top call sites by self and total time, per thread
// role, for the whole run or the recorded window.
//
// The format (documented in docs/run.md, "Python profile format"):
//
//	{"format": "bottleneck.pyprofile", "version": 1,
//	 "profiler": "sample" | "cprofile",
//	 "interval_s": 0.02, "window_interval_s": 0.005, "start_unix": ..., "duration_s": ...,
//	 "samples": N, "window_samples": M, "windows": [[start_s, end_s], ...],
//	 "frames":  [{"file", "func", "line", "fline"}, ...],
//	 "threads": [{"id", "native_id", "name", "role", "samples", "window_samples"}, ...],
//	 "stacks":  [{"thread": i, "frames": [root ... leaf], "count": n, "window_count": m}, ...],   // sample
//	 "functions": [{"frame", "ncalls", "pcalls", "tottime_s", "cumtime_s", "callers": [...]}, ...]}  // cprofile
//
// A sampled frame's line is the line executing when the sample was taken;
// a cProfile frame's line is the function's first line. Window times are
// seconds since the profile started.
package pyprofile

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Format is the value of the "format" key.
const Format = "bottleneck.pyprofile"

// Profile is one process's Python profile.
type Profile struct {
	Format    string  `json:"format"`
	Version   int     `json:"version"`
	Profiler  string  `json:"profiler"`
	IntervalS float64 `json:"interval_s"`
	// WindowIntervalS is the sampler period while the window recorded
	// (0 in old files: the same as IntervalS).
	WindowIntervalS float64      `json:"window_interval_s"`
	StartUnix       float64      `json:"start_unix"`
	DurationS       float64      `json:"duration_s"`
	Samples         int          `json:"samples"`
	WindowSamples   int          `json:"window_samples"`
	Windows         [][2]float64 `json:"windows"`
	SamplingCostS   float64      `json:"sampling_cost_s"`
	// ImportPausedSamples: the sampler's ticks skipped while torch was
	// imported (sampling it then could deadlock).
	ImportPausedSamples int `json:"import_paused_samples,omitempty"`
	// CPUClock is true when the sampler read every thread's CPU clock:
	// then each sample is known to be on-CPU or waiting (Stack.CPUCount).
	CPUClock bool `json:"cpu_clock"`
	// Repeats is true when stacks carry their repeat counts (agents
	// before them leave it false).
	Repeats   bool       `json:"repeats"`
	PID       int        `json:"pid"`
	Frames    []Frame    `json:"frames"`
	Threads   []Thread   `json:"threads"`
	Stacks    []Stack    `json:"stacks"`
	Functions []Function `json:"functions"`
	// Worker is set in the profile of a DataLoader worker process
	// (pyworkers-<tag>/<pid>.json; see ReadWorkers).
	Worker *Worker `json:"worker,omitempty"`
}

// Frame is one code location.
type Frame struct {
	File  string `json:"file"`
	Func  string `json:"func"`
	Line  int    `json:"line"`
	FLine int    `json:"fline"`
	// Text is the line's source, stripped, for the program's own files
	// (agents before it leave it empty).
	Text string `json:"text,omitempty"`
}

// ThreadRoles are the roles the agent's sampler gives a thread
// (_bottleneck_sampler.thread_role): the main thread, PyTorch's
// pin-memory thread, any other. Merged DataLoader worker profiles add
// "worker" (Workers).
var ThreadRoles = []string{"main", "pin_memory", "other"}

// Thread is one Python thread seen by the sampler.
type Thread struct {
	ID            uint64 `json:"id"`
	NativeID      *int64 `json:"native_id"`
	Name          string `json:"name"`
	Role          string `json:"role"` // one of ThreadRoles
	Samples       int    `json:"samples"`
	WindowSamples int    `json:"window_samples"`
	// CPUSamples are its samples weighted by how much of the time since
	// the thread's previous sample it ran on a CPU, and CPUS its CPU time
	// over the sampled span (with Profile.CPUClock).
	CPUSamples float64 `json:"cpu_samples"`
	CPUS       float64 `json:"cpu_s"`
}

// Waiting reports whether thread i spent its sampled time mostly blocked
// (in a wait, sleep, I/O or for the GIL): under a tenth of it on a CPU or
// runnable and waiting for one. The run-queue wait (the main thread's,
// from schedstat) keeps a computing thread on a busy machine from
// counting as waiting: beside 24 spinning processes on 2 CPUs a training
// loop's main thread ran under a tenth of its time, and the report left
// its call sites out. False when the profile has no CPU clock.
func (p *Profile) Waiting(i int) bool {
	t := p.Threads[i]
	if !p.CPUClock || t.Samples == 0 {
		return false
	}
	wanted := t.CPUSamples
	for _, st := range p.Stacks {
		if st.Thread == i {
			wanted += st.WaitCount
		}
	}
	return wanted*10 < float64(t.Samples)
}

// Stack is one distinct sampled stack of one thread, root first.
type Stack struct {
	Thread      int   `json:"thread"`
	Frames      []int `json:"frames"`
	Count       int   `json:"count"`
	WindowCount int   `json:"window_count"`
	// CPUCount and WindowCPUCount are Count and WindowCount with each
	// sample weighted by its thread's on-CPU share (see Thread.CPUSamples).
	CPUCount       float64 `json:"cpu_count"`
	WindowCPUCount float64 `json:"window_cpu_count"`
	// WaitCount and WindowWaitCount weight the main thread's samples by
	// its share of the time runnable but waiting for a CPU (Linux
	// schedstat; 0 for other threads and from agents before it): on-CPU
	// plus waiting is the share the thread wanted a CPU, not blocked.
	WaitCount       float64 `json:"wait_count,omitempty"`
	WindowWaitCount float64 `json:"window_wait_count,omitempty"`
	// RepeatCount counts the samples whose thread's previous sample had
	// this same stack, and RepeatCPUCount and RepeatWaitCount weight them
	// as CPUCount and WaitCount do. A repeat's shares measure this stack
	// alone; any other sample's cover the time since the previous one,
	// which may have been spent in the line before.
	RepeatCount     int     `json:"repeat_count,omitempty"`
	RepeatCPUCount  float64 `json:"repeat_cpu_count,omitempty"`
	RepeatWaitCount float64 `json:"repeat_wait_count,omitempty"`
	// SlowCount counts the samples taken in steps over twice the median
	// of the steps before them (the agent's last 31), window or not: what
	// work every N steps does.
	SlowCount int `json:"slow_count,omitempty"`
	// StartupCount counts the samples taken before the first step ended:
	// what the program did before its steps (imports, building its data).
	StartupCount int `json:"startup_count,omitempty"`
	// WindowSteps: the window's samples of this stack by step, [step,
	// samples] (agents before them record none).
	WindowSteps [][2]int `json:"window_steps,omitempty"`
}

// HasWindowSteps reports whether the agent recorded the window's samples
// by step (Stack.WindowSteps).
func (p *Profile) HasWindowSteps() bool {
	return slices.ContainsFunc(p.Stacks, func(s Stack) bool { return len(s.WindowSteps) > 0 })
}

// LeavingWindowSteps returns a copy of p without the samples of the
// window's steps leave names in its window counts (its on-CPU and waiting
// counts in proportion), as the window check leaves its outlier steps
// out of the trace's figures; p itself where none are left out.
func (p *Profile) LeavingWindowSteps(leave map[int]bool) *Profile {
	var out *Profile
	for i, s := range p.Stacks {
		n := 0
		for _, ws := range s.WindowSteps {
			if leave[ws[0]] && ws[1] > 0 {
				n += ws[1]
			}
		}
		if n = min(n, s.WindowCount); n <= 0 {
			continue
		}
		if out == nil {
			c := *p
			c.Stacks, c.Threads = slices.Clone(p.Stacks), slices.Clone(p.Threads)
			out = &c
		}
		st := &out.Stacks[i]
		keep := float64(s.WindowCount-n) / float64(s.WindowCount)
		st.WindowCount -= n
		st.WindowCPUCount *= keep
		st.WindowWaitCount *= keep
		out.Threads[s.Thread].WindowSamples = max(0, out.Threads[s.Thread].WindowSamples-n)
		out.WindowSamples = max(0, out.WindowSamples-n)
	}
	if out == nil {
		return p
	}
	return out
}

// Function is one cProfile entry.
type Function struct {
	Frame    int      `json:"frame"`
	NCalls   int64    `json:"ncalls"`
	PCalls   int64    `json:"pcalls"`
	TotTimeS float64  `json:"tottime_s"`
	CumTimeS float64  `json:"cumtime_s"`
	Callers  []Caller `json:"callers"`
}

// Caller is one caller edge of a cProfile entry.
type Caller struct {
	Frame    int     `json:"frame"`
	NCalls   int64   `json:"ncalls"`
	TotTimeS float64 `json:"tottime_s"`
	CumTimeS float64 `json:"cumtime_s"`
}

// Read decodes and validates a profile.
func Read(r io.Reader) (*Profile, error) {
	var p Profile
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return nil, fmt.Errorf("pyprofile: %w", err)
	}
	if p.Format != Format {
		return nil, fmt.Errorf("pyprofile: not a bottleneck Python profile (format %q)", p.Format)
	}
	if p.Version != 1 {
		return nil, fmt.Errorf("pyprofile: unsupported version %d", p.Version)
	}
	for i, s := range p.Stacks {
		if s.Thread < 0 || s.Thread >= len(p.Threads) {
			return nil, fmt.Errorf("pyprofile: stack %d: thread %d out of range", i, s.Thread)
		}
		for _, f := range s.Frames {
			if f < 0 || f >= len(p.Frames) {
				return nil, fmt.Errorf("pyprofile: stack %d: frame %d out of range", i, f)
			}
		}
	}
	for i, fn := range p.Functions {
		if fn.Frame < 0 || fn.Frame >= len(p.Frames) {
			return nil, fmt.Errorf("pyprofile: function %d: frame %d out of range", i, fn.Frame)
		}
		for _, c := range fn.Callers {
			if c.Frame < 0 || c.Frame >= len(p.Frames) {
				return nil, fmt.Errorf("pyprofile: function %d: caller frame %d out of range", i, c.Frame)
			}
		}
	}
	return &p, nil
}

// ReadFile reads the profile at path.
func ReadFile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// IsFile reports whether the file at path is a Python profile rather
// than a trace: by its name (pyprofile-<tag>.json, as a run directory
// holds it), else by the format key in its first bytes.
func IsFile(path string) bool {
	if name := filepath.Base(path); strings.HasPrefix(name, "pyprofile-") && strings.HasSuffix(name, ".json") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false // a pipe or stdin is read once, as a trace
	}
	head := make([]byte, 256)
	n, _ := io.ReadFull(f, head)
	return strings.Contains(string(head[:n]), `"format": "`+Format+`"`) || strings.Contains(string(head[:n]), `"format":"`+Format+`"`)
}

// IsLibraryFile reports whether a file belongs to Python's standard
// library, an installed package or a frozen/generated module, as opposed to
// the user's own code.
func IsLibraryFile(file string) bool {
	if strings.HasPrefix(file, "<") {
		return true
	}
	if IsPackageFile(file) {
		return true
	}
	// .../lib/python3.11/xxx.py (the standard library)
	f := strings.ReplaceAll(file, "\\", "/")
	if i := strings.Index(f, "/lib/python"); i >= 0 {
		rest := f[i+len("/lib/python"):]
		if j := strings.IndexByte(rest, '/'); j > 0 && strings.Trim(rest[:j], "0123456789.t") == "" {
			return true
		}
	}
	return false
}

// IsPackageFile reports whether a file belongs to an installed package or
// to code torch.compile generated (inductor's cache, /tmp/torchinductor_USER
// by default): a library's, not a line the user can change, nor the
// standard library.
func IsPackageFile(file string) bool {
	f := strings.ReplaceAll(file, "\\", "/")
	return strings.Contains(f, "/site-packages/") || strings.Contains(f, "/dist-packages/") || strings.Contains(f, "/torchinductor_")
}

// InstalledPath is file's path under the directory packages are installed
// in (".../site-packages/torch/nn/x.py" -> "torch/nn/x.py"; ok false for
// other files).
func InstalledPath(file string) (string, bool) {
	f := strings.ReplaceAll(file, "\\", "/")
	for _, m := range []string{"/site-packages/", "/dist-packages/"} {
		if i := strings.LastIndex(f, m); i >= 0 {
			return f[i+len(m):], true
		}
	}
	return "", false
}

// IsPandas reports whether a file is pandas' own code: a Dataset that
// reads a DataFrame row by row spends its time there.
func IsPandas(file string) bool {
	f := strings.ReplaceAll(file, "\\", "/")
	return IsPackageFile(f) && strings.Contains(f, "/pandas/")
}

// Importing reports whether a sampled stack (frame indexes) was taken
// while a module was being imported: it runs through the import system.
func (p *Profile) Importing(frames []int) bool {
	for _, fi := range frames {
		if strings.HasPrefix(p.Frames[fi].File, "<frozen importlib") {
			return true
		}
	}
	return false
}

// childWaitFiles are the files a main thread waits in for the processes
// it started with multiprocessing or torch.multiprocessing.spawn (join,
// the pipes' wait).
var childWaitFiles = []string{"/multiprocessing/popen_fork.py", "/multiprocessing/popen_spawn_posix.py", "/multiprocessing/popen_forkserver.py",
	"/multiprocessing/process.py", "/multiprocessing/connection.py", "/torch/multiprocessing/spawn.py"}

// ChildWait is the share of the main thread's samples after its imports
// spent waiting for child processes, and the program's line that waited
// most (zero Frame: none).
func (p *Profile) ChildWait() (float64, Frame) {
	var total, waiting int
	at := map[Frame]int{}
	for _, s := range p.Stacks {
		if s.Thread >= len(p.Threads) || p.Threads[s.Thread].Role != "main" || len(s.Frames) == 0 || p.Importing(s.Frames) {
			continue
		}
		total += s.Count
		if !slices.ContainsFunc(s.Frames, func(fi int) bool {
			f := strings.ReplaceAll(p.Frames[fi].File, "\\", "/")
			return slices.ContainsFunc(childWaitFiles, func(w string) bool { return strings.HasSuffix(f, w) })
		}) {
			continue
		}
		waiting += s.Count
		for i := len(s.Frames) - 1; i >= 0; i-- {
			if f := p.Frames[s.Frames[i]]; !IsLibraryFile(f.File) {
				at[Frame{File: f.File, Func: f.Func, Line: f.Line}] += s.Count
				break
			}
		}
	}
	var top Frame
	for f, c := range at {
		if c > at[top] || c == at[top] && (f.File < top.File || f.File == top.File && f.Line < top.Line) {
			top = f
		}
	}
	if total == 0 {
		return 0, top
	}
	return float64(waiting) / float64(total), top
}

// Attribution says which frame of a sampled stack a sample's self time goes to.
type Attribution int

const (
	// Leaf: the innermost frame (the line Python was executing).
	Leaf Attribution = iota
	// User: the innermost frame in the user's own code (not the standard
	// library or an installed package): the line of the program that led
	// to the time, e.g. the `loss.item()` line rather than torch internals.
	// Stacks with no user frame fall back to the leaf.
	User
)

// Options selects what TopSites counts.
type Options struct {
	Role        string // "" all threads, else a thread role (main, pin_memory, other)
	Window      bool   // only samples taken during the recorded window
	Attribution Attribution
	ByFunction  bool // group by function (file + first line) instead of file:line
	N           int  // at most N sites per list (0: all)
	// OnCPU counts only samples taken while the thread ran on a CPU
	// (profiles with a CPU clock), so waiting threads and blocked lines
	// do not crowd out the code that costs CPU time.
	OnCPU bool
	// Threads, when set, keeps only the threads (indexes into
	// Profile.Threads) it returns true for.
	Threads func(i int) bool
	// SkipImports leaves out the samples taken while a module was being
	// imported (see Importing): start-up, not the program's steps.
	SkipImports bool
}

// Site is one call site with its self and total time.
type Site struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Func string `json:"func"`
	// User is false for standard-library and installed-package code.
	User bool `json:"user"`
	// SelfS and TotalS are seconds: samples × interval for the sampler
	// (wall-clock), tottime and cumtime for cProfile.
	SelfS  float64 `json:"self_s"`
	TotalS float64 `json:"total_s"`
	// SelfPct and TotalPct are shares of the selected threads' time.
	SelfPct  float64 `json:"self_pct"`
	TotalPct float64 `json:"total_pct"`
	// Calls is cProfile's call count (0 for the sampler).
	Calls int64 `json:"calls,omitempty"`
}

// Top is the answer of TopSites.
type Top struct {
	Role      string  `json:"role"`
	Window    bool    `json:"window"`
	Profiler  string  `json:"profiler"`
	Samples   int     `json:"samples"`   // samples counted (sampler)
	TotalS    float64 `json:"total_s"`   // the time the percentages are of
	BySelf    []Site  `json:"by_self"`   // sorted by self time
	ByTotal   []Site  `json:"by_total"`  // sorted by total time
	Threads   int     `json:"threads"`   // threads matched
	Truncated bool    `json:"truncated"` // N cut the lists
	OnCPU     bool    `json:"on_cpu"`    // only on-CPU samples were counted
	// Names are the names of the threads matched, in first-seen order.
	Names []string `json:"thread_names,omitempty"`
}

// Roles returns the thread roles present, "main" first.
func (p *Profile) Roles() []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range p.Threads {
		if !seen[t.Role] {
			seen[t.Role] = true
			out = append(out, t.Role)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i] == "main") != (out[j] == "main") {
			return out[i] == "main"
		}
		return out[i] < out[j]
	})
	return out
}

type siteKey struct {
	file string
	line int
}

// TopSites returns the call sites with the most self and total time.
func (p *Profile) TopSites(o Options) Top {
	if p.Profiler == "cprofile" {
		return p.topCProfile(o)
	}
	top := Top{Role: o.Role, Window: o.Window, Profiler: p.Profiler, OnCPU: o.OnCPU}
	self := map[siteKey]float64{}
	total := map[siteKey]float64{}
	names := map[siteKey]string{}
	threads := map[int]bool{}
	keyOf := func(fi int) siteKey {
		f := p.Frames[fi]
		k := siteKey{f.File, f.Line}
		if o.ByFunction {
			k.line = f.FLine
		}
		if _, ok := names[k]; !ok {
			names[k] = f.Func
		}
		return k
	}
	seen := map[siteKey]bool{}
	var n int
	var tot float64
	win := p.WindowIntervalS
	if win <= 0 {
		win = p.IntervalS
	}
	for _, s := range p.Stacks {
		th := p.Threads[s.Thread]
		if (o.Role != "" && th.Role != o.Role) || (o.Threads != nil && !o.Threads(s.Thread)) {
			continue
		}
		count, windowCount := float64(s.Count), float64(s.WindowCount)
		n0 := s.Count
		if o.Window {
			n0 = s.WindowCount
		}
		if o.OnCPU {
			count, windowCount = s.CPUCount, s.WindowCPUCount
		}
		// c is this stack's time: window samples were taken every
		// WindowIntervalS, the others every IntervalS
		c := (count-windowCount)*p.IntervalS + windowCount*win
		if o.Window {
			c = windowCount * win
		}
		if c == 0 {
			continue
		}
		if n0 == 0 || len(s.Frames) == 0 || (o.SkipImports && p.Importing(s.Frames)) {
			continue
		}
		threads[s.Thread] = true
		n += n0
		tot += c
		leaf := s.Frames[len(s.Frames)-1]
		if o.Attribution == User {
			for i := len(s.Frames) - 1; i >= 0; i-- {
				if !IsLibraryFile(p.Frames[s.Frames[i]].File) {
					leaf = s.Frames[i]
					break
				}
			}
		}
		self[keyOf(leaf)] += c
		clear(seen)
		for _, fi := range s.Frames {
			k := keyOf(fi)
			if !seen[k] {
				seen[k] = true
				total[k] += c
			}
		}
	}
	top.Samples = n
	top.Threads = len(threads)
	for i, th := range p.Threads {
		if threads[i] {
			top.Names = append(top.Names, th.Name)
		}
	}
	top.TotalS = tot
	var sites []Site
	for k, t := range total {
		s := Site{File: k.file, Line: k.line, Func: names[k], User: !IsLibraryFile(k.file),
			SelfS: self[k], TotalS: t}
		if tot > 0 {
			s.SelfPct = 100 * self[k] / tot
			s.TotalPct = 100 * t / tot
		}
		sites = append(sites, s)
	}
	top.BySelf, top.ByTotal, top.Truncated = rank(sites, o.N)
	return top
}

func (p *Profile) topCProfile(o Options) Top {
	top := Top{Role: o.Role, Window: o.Window, Profiler: p.Profiler, Threads: 1}
	if (o.Role != "" && o.Role != "main") || o.Window {
		// cProfile records the main thread only, for the whole run
		return top
	}
	var sites []Site
	for _, fn := range p.Functions {
		f := p.Frames[fn.Frame]
		sites = append(sites, Site{File: f.File, Line: f.FLine, Func: f.Func, User: !IsLibraryFile(f.File),
			SelfS: fn.TotTimeS, TotalS: fn.CumTimeS, Calls: fn.NCalls})
	}
	top.TotalS = p.DurationS
	if top.TotalS > 0 {
		for i := range sites {
			sites[i].SelfPct = 100 * sites[i].SelfS / top.TotalS
			sites[i].TotalPct = 100 * sites[i].TotalS / top.TotalS
		}
	}
	top.BySelf, top.ByTotal, top.Truncated = rank(sites, o.N)
	return top
}

func rank(sites []Site, n int) (bySelf, byTotal []Site, truncated bool) {
	less := func(a, b Site, selfFirst bool) bool {
		x, y := a.TotalS, b.TotalS
		if selfFirst {
			x, y = a.SelfS, b.SelfS
		}
		if x != y {
			return x > y
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	}
	bySelf = make([]Site, 0, len(sites))
	for _, s := range sites {
		if s.SelfS > 0 {
			bySelf = append(bySelf, s)
		}
	}
	sort.Slice(bySelf, func(i, j int) bool { return less(bySelf[i], bySelf[j], true) })
	byTotal = append([]Site(nil), sites...)
	sort.Slice(byTotal, func(i, j int) bool { return less(byTotal[i], byTotal[j], false) })
	if n > 0 {
		if len(bySelf) > n {
			bySelf, truncated = bySelf[:n], true
		}
		if len(byTotal) > n {
			byTotal, truncated = byTotal[:n], true
		}
	}
	return bySelf, byTotal, truncated
}
