package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/runreport"
)

// RunEvidence is what `bottleneck run`'s agent recorded for one process,
// reduced to what the diagnosis uses (docs/run.md describes the files).
type RunEvidence struct {
	Tag  string `json:"tag"`
	Rank int    `json:"rank"`
	// WindowStepS is the mean step of the recorded window (seconds);
	// DataLoaderWaitS the mean DataLoader wait per window step.
	WindowStepS float64 `json:"window_step_s"`
	// OutsideStepS is the median step outside the recorded window, after
	// the first steps (0 when too few): the steps without the profiler;
	// WindowMedianS the median step inside it.
	OutsideStepS    float64         `json:"outside_step_s,omitempty"`
	WindowMedianS   float64         `json:"window_median_step_s,omitempty"`
	HasDataLoader   bool            `json:"has_dataloader"`
	DataLoaderWaitS float64         `json:"dataloader_wait_s"`
	Loaders         []Loader        `json:"loaders,omitempty"`
	SyncState       string          `json:"sync_state,omitempty"`
	SyncSites       []SyncSite      `json:"sync_sites,omitempty"`
	SyncsPerStep    float64         `json:"syncs_per_step"`
	Python          *PythonEvidence `json:"python,omitempty"`
	Env             *Env            `json:"env,omitempty"`
}

// Loader is one DataLoader's settings.
type Loader struct {
	Dataset           string `json:"dataset"`
	NumWorkers        *int   `json:"num_workers"`
	PinMemory         *bool  `json:"pin_memory"`
	PersistentWorkers *bool  `json:"persistent_workers"`
	BatchSize         *int   `json:"batch_size"`
}

// SyncSite is a user line that caused implicit host-device syncs.
type SyncSite struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Func  string `json:"func"`
	Count int    `json:"count"`
}

// Env is the environment summary's part the rules read.
type Env struct {
	Torch      string         `json:"torch"`
	Build      string         `json:"build"`
	CUDA       string         `json:"cuda,omitempty"`
	CPUs       int            `json:"cpus"`
	NumThreads int            `json:"num_threads"`
	Flags      map[string]any `json:"flags,omitempty"`
	Devices    []EnvDevice    `json:"devices,omitempty"`
}

// EnvDevice is one device torch saw.
type EnvDevice struct {
	Name       string `json:"name"`
	Capability string `json:"capability"`
}

// PythonEvidence is the main thread's Python profile, classified.
type PythonEvidence struct {
	Profiler string `json:"profiler"`
	// Window: the numbers are over the recorded window (else the whole run).
	Window  bool `json:"window"`
	Samples int  `json:"samples"`
	// IOShare and LoaderShare: fractions of the main thread's samples in
	// I/O code and in DataLoader code.
	IOShare     float64 `json:"io_share"`
	LoaderShare float64 `json:"loader_share"`
	// Hot are the user lines with the most self samples outside I/O and
	// DataLoader code; IOLines and LoaderLines the user lines that led
	// into I/O and DataLoader code.
	Hot         []Line `json:"hot"`
	IOLines     []Line `json:"io_lines,omitempty"`
	LoaderLines []Line `json:"loader_lines,omitempty"`
}

// Line is a Python source line and its share of the main thread's samples.
type Line struct {
	File string  `json:"file"`
	Line int     `json:"line"`
	Func string  `json:"func"`
	Pct  float64 `json:"pct"`
}

func matchAny(file string, pats []string) bool {
	f := strings.ReplaceAll(file, "\\", "/")
	for _, p := range pats {
		if strings.Contains(f, p) {
			return true
		}
	}
	return false
}

// FromProfile classifies the main thread's samples of a sampled Python
// profile: I/O, DataLoader, and the rest by user line. It returns nil for
// cProfile output (no stacks) or an empty profile.
func FromProfile(p *pyprofile.Profile) *PythonEvidence {
	if p == nil || p.Profiler != "sample" || len(p.Stacks) == 0 {
		return nil
	}
	window := p.WindowSamples > 0
	type key struct {
		file string
		line int
	}
	var total, io, dl int
	hot, ioL, dlL := map[key]int{}, map[key]int{}, map[key]int{}
	funcs := map[key]string{}
	for _, st := range p.Stacks {
		if p.Threads[st.Thread].Role != "main" || len(st.Frames) == 0 {
			continue
		}
		c := st.Count
		if window {
			c = st.WindowCount
		}
		if c == 0 {
			continue
		}
		total += c
		isIO, isDL := false, false
		for _, fi := range st.Frames {
			f := p.Frames[fi].File
			isIO = isIO || matchAny(f, ioFiles)
			isDL = isDL || matchAny(f, loaderFiles)
		}
		// the innermost user frame: the program's line that led here
		leaf := st.Frames[len(st.Frames)-1]
		for i := len(st.Frames) - 1; i >= 0; i-- {
			if !pyprofile.IsLibraryFile(p.Frames[st.Frames[i]].File) {
				leaf = st.Frames[i]
				break
			}
		}
		fr := p.Frames[leaf]
		k := key{fr.File, fr.Line}
		funcs[k] = fr.Func
		switch {
		case isIO:
			io += c
			ioL[k] += c
		case isDL:
			dl += c
			dlL[k] += c
		default:
			hot[k] += c
		}
	}
	if total == 0 {
		return nil
	}
	lines := func(m map[key]int) []Line {
		var out []Line
		for k, c := range m {
			if pyprofile.IsLibraryFile(k.file) {
				continue
			}
			out = append(out, Line{File: k.file, Line: k.line, Func: funcs[k], Pct: round(100 * float64(c) / float64(total))})
		}
		slices.SortFunc(out, func(a, b Line) int {
			if a.Pct != b.Pct {
				return cmp.Compare(b.Pct, a.Pct)
			}
			return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
		})
		if len(out) > 5 {
			out = out[:5]
		}
		return out
	}
	return &PythonEvidence{Profiler: p.Profiler, Window: window, Samples: total,
		IOShare: float64(io) / float64(total), LoaderShare: float64(dl) / float64(total),
		Hot: lines(hot), IOLines: lines(ioL), LoaderLines: lines(dlL)}
}

// FromProcess builds the evidence of one process of a run report (and its
// Python profile, nil when absent).
func FromProcess(pr *runreport.ProcessReport, prof *pyprofile.Profile) *RunEvidence {
	r := &RunEvidence{Tag: pr.Tag, Rank: -1}
	if _, err := fmt.Sscanf(pr.Tag, "rank%d", &r.Rank); err != nil {
		r.Rank = -1
	}
	if ev := pr.Evidence; ev != nil {
		var sum, wait float64
		var syncs int
		for _, w := range ev.WindowSteps {
			sum += w.DurationS
			wait += w.DataLoaderWaitS
			syncs += w.Syncs
		}
		if n := len(ev.WindowSteps); n > 0 {
			r.WindowStepS = sum / float64(n)
			r.DataLoaderWaitS = wait / float64(n)
			r.SyncsPerStep = float64(syncs) / float64(n)
		}
		r.OutsideStepS, r.WindowMedianS = stepMedians(ev.StepTimes)
		r.HasDataLoader = ev.DataLoader.Batches > 0 || len(ev.DataLoader.Loaders) > 0
		for _, l := range ev.DataLoader.Loaders {
			r.Loaders = append(r.Loaders, Loader{Dataset: l.Dataset, NumWorkers: l.NumWorkers, PinMemory: l.PinMemory,
				PersistentWorkers: l.PersistentWorkers, BatchSize: l.BatchSize})
		}
		r.SyncState = ev.Syncs.State
		for _, s := range ev.Syncs.Sites {
			r.SyncSites = append(r.SyncSites, SyncSite{File: s.File, Line: s.Line, Func: s.Func, Count: s.Count})
		}
	}
	if e := pr.Env; e != nil {
		env := &Env{CPUs: e.CPUCount}
		if e.CPUAffinity > 0 {
			env.CPUs = e.CPUAffinity
		}
		if t := e.Torch; t != nil {
			env.Torch, env.Build, env.NumThreads, env.Flags = t.Version, t.Build, t.NumThreads, t.Flags
			if t.CUDA != nil {
				env.CUDA = *t.CUDA
			}
			for _, d := range t.Devices {
				env.Devices = append(env.Devices, EnvDevice{Name: d.Name, Capability: d.Capability})
			}
		}
		r.Env = env
	}
	r.Python = FromProfile(prof)
	return r
}

// stepMedians returns the median duration of the steps outside the
// profiler window and of the steps inside it (0 for fewer than 3 steps).
// Outside is the larger of the medians before the window (after the
// first warmupSteps, start-up) and after it: programs speed up or slow
// down over a run, and only a window slower than both is inflated by the
// profiler.
func stepMedians(times [][]any) (outside, inside float64) {
	const warmupSteps = 3
	var before, in, after []float64
	for _, st := range times {
		if len(st) < 4 {
			continue
		}
		n, _ := st[0].(float64)
		d, _ := st[2].(float64)
		w, _ := st[3].(bool)
		switch {
		case d <= 0:
		case w:
			in = append(in, d)
		case len(in) > 0:
			after = append(after, d)
		case n > warmupSteps:
			before = append(before, d)
		}
	}
	return max(median(before), median(after)), median(in)
}

func median(xs []float64) float64 {
	if len(xs) < 3 {
		return 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// LoadRun reads a run directory's evidence, keyed by rank (a process
// without a rank tag gets rank 0 when it is the only one).
func LoadRun(dir string) (map[int]*RunEvidence, error) {
	rr, err := runreport.Build(dir)
	if err != nil {
		return nil, err
	}
	out := map[int]*RunEvidence{}
	for i := range rr.Processes {
		pr := &rr.Processes[i]
		prof, _ := pyprofile.ReadFile(dir + "/pyprofile-" + pr.Tag + ".json")
		ev := FromProcess(pr, prof)
		rank := ev.Rank
		if rank < 0 && len(rr.Processes) == 1 {
			rank = 0
		}
		if rank >= 0 {
			out[rank] = ev
		}
	}
	return out, nil
}
