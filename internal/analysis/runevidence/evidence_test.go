package runevidence

import (
	"math"
	"slices"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

func TestFitLine(t *testing.T) {
	a, b, r2 := fitLine([]float64{1, 2, 3, 4}, []float64{3, 5, 7, 9})
	if math.Abs(a-1) > 1e-9 || math.Abs(b-2) > 1e-9 || math.Abs(r2-1) > 1e-9 {
		t.Errorf("fit %v %v %v, want 1 2 1", a, b, r2)
	}
	if _, b, r2 := fitLine([]float64{1, 2, 3, 4}, []float64{5, 5, 5, 5}); b != 0 || r2 != 0 {
		t.Errorf("flat: slope %v r2 %v", b, r2)
	}
	if _, b, _ := fitLine([]float64{2, 2}, []float64{1, 3}); b != 0 {
		t.Errorf("one x: slope %v", b)
	}
}

// The trend skips start-up steps, prefers CUDA memory when the program
// used CUDA, and needs 8 steps.
func TestMemoryTrend(t *testing.T) {
	grow := func(s int) float64 { return 1e9 + 4e6*float64(s) }
	m := memoryTrend(rows(30, func(s int) float64 {
		if s <= startupSteps {
			return 5e9 // start-up spike, left out
		}
		return grow(s)
	}, false), nil)
	if m == nil || m.Source != "rss" || math.Abs(m.SlopeBytes-4e6) > 1 || m.Steps != 27 {
		t.Fatalf("rss trend %+v", m)
	}
	if m := memoryTrend(rows(30, grow, true), nil); m == nil || m.Source != "cuda_allocated" {
		t.Errorf("cuda trend %+v", m)
	}
	if m := memoryTrend(rows(startupSteps+7, grow, false), nil); m != nil {
		t.Errorf("7 steps gave a trend: %+v", m)
	}
	// A 12-step window (8-19) of a 39-step leak raises the RSS by 300 MB
	// once: the steps after it alone give the leak's slope, and its later
	// half grows as fast (CI: the line through all of them made the later
	// half look flat).
	windowed := rows(39, func(s int) float64 {
		switch {
		case s >= 8 && s <= 19:
			return grow(s) + 25e6*float64(s-7)
		case s > 19:
			return grow(s) + 300e6
		}
		return grow(s)
	}, false)
	for i := range windowed {
		windowed[i].InWindow = windowed[i].Step >= 8 && windowed[i].Step <= 19
	}
	if m := memoryTrend(windowed, nil); m == nil || m.Steps != 20 || math.Abs(m.SlopeBytes-4e6) > 1 || math.Abs(m.LateSlopeBytes-4e6) > 1 {
		t.Errorf("windowed trend %+v", m)
	}
}

func TestGCPauses(t *testing.T) {
	var st []steptimes.Step
	var rs []rundir.StepRow
	for i := 1; i <= 10; i++ {
		st = append(st, steptimes.Step{N: i, DurS: 0.1})
		p := 0.02
		if i <= startupSteps {
			p = 5 // imports: not the step's
		}
		rs = append(rs, rundir.StepRow{Step: i, GCPauseS: p, GCCount: 2, CUDA: -1})
	}
	g := gcPauses(rs, st, nil)
	if g == nil || g.Steps != 7 || math.Abs(g.Share-0.2) > 1e-9 || g.CollectionsPerStep != 2 {
		t.Fatalf("gc %+v", g)
	}
	if gcPauses(rs, nil, nil) != nil {
		t.Error("no step times gave GC pauses")
	}
}

func rows(n int, mem func(step int) float64, cuda bool) []rundir.StepRow {
	var out []rundir.StepRow
	for i := 1; i <= n; i++ {
		r := rundir.StepRow{Step: i, RSS: 1 << 30, CUDA: -1}
		if cuda {
			r.CUDA = mem(i)
		} else {
			r.RSS = mem(i)
		}
		out = append(out, r)
	}
	return out
}

func TestStepMedians(t *testing.T) {
	step := func(n int, d float64, in bool) steptimes.Step { return steptimes.Step{N: n, DurS: d, InWindow: in} }
	// steps 1-3 are start-up; 4-7 before the window, 8-10 in it, 11-13 after
	times := []steptimes.Step{step(1, 5, false), step(2, 0.2, false), step(3, 0.2, false),
		step(4, 0.1, false), step(5, 0.12, false), step(6, 0.1, false), step(7, 0.11, false),
		step(8, 0.3, true), step(9, 0.35, true), step(10, 0.3, true),
		step(11, 0.2, false), step(12, 0.21, false), step(13, 0.19, false)}
	if out, in := stepMedians(times); out != 0.2 || in != 0.3 {
		t.Errorf("medians outside, inside the window = %v, %v, want 0.2 (the slower side), 0.3", out, in)
	}
	if out, _ := stepMedians(times[:5]); out != 0 {
		t.Errorf("with two steps after start-up: %v, want 0", out)
	}
	// the steps next to the window, not a later drift
	drift := slices.Clone(times)
	for n := 14; n <= 60; n++ {
		drift = append(drift, step(n, map[bool]float64{true: 0.2, false: 0.29}[n <= 20], false))
	}
	if out, _ := stepMedians(drift); out != 0.2 {
		t.Errorf("steps slower from step 21 on: %v, want 0.2 (the ten after the window)", out)
	}
	// a run that ends with its window (--stop-after-profile): the steps
	// before it but the first, start-up's too
	ended := []steptimes.Step{step(1, 5, false), step(2, 0.2, false), step(3, 0.15, false), step(4, 0.1, false), step(5, 0.12, false),
		step(6, 0.3, true), step(7, 0.35, true), step(8, 0.3, true)}
	if out, in := stepMedians(ended); out != 0.15 || in != 0.3 {
		t.Errorf("a run ended with its window: %v, %v, want 0.15 (steps 2-5), 0.3", out, in)
	}
	// ... not when steps follow the window, too few of them
	if out, _ := stepMedians(append(ended, step(9, 0.2, false))); out != 0 {
		t.Errorf("a step after the window: %v, want 0", out)
	}
	// a window on batches loaded before it: the steps next to it waited
	// for their DataLoader, the window's did not; less their waits, the
	// window is the slower
	prefetched := slices.Clone(times)
	for i := range prefetched {
		if st := &prefetched[i]; !st.InWindow && st.N > 3 {
			st.DurS, st.LoaderWaitS = st.DurS+0.2, 0.2
		}
	}
	if out, in := stepMedians(prefetched); out <= in {
		t.Errorf("as recorded: outside %v, inside %v, want the window the shorter", out, in)
	}
	if out, in := stepMedians(lessLoaderWaits(prefetched)); math.Abs(out-0.2) > 1e-9 || in != 0.3 {
		t.Errorf("less the waits: outside %v, inside %v, want 0.2 and 0.3", out, in)
	}
}

// A window whose recording ended inside a step is named with what ended
// it and the steps it recorded whole; one that ran its steps is not.
func TestCutTraces(t *testing.T) {
	ev := &rundir.Evidence{}
	ev.Profiler.Windows = []rundir.ProfilerWindow{
		{Index: 1, File: "trace-rank0.pt.trace.json.gz", Steps: []int{8, 9, 10, 11, 12}},
		{Index: 2, File: "trace-rank0-2.pt.trace.json.gz", Steps: []int{20}, ClosedBy: "memory", ClosedDetail: "grew 1 GiB"},
		{Index: 3, File: "trace-rank0-3.pt.trace.json.gz", ClosedBy: "idle", ClosedDetail: "no step for 2 s"},
		{Index: 4, File: "trace-rank0-4.pt.trace.json.gz", Partial: true, Steps: []int{40}},
	}
	got := FromProcess(&rundir.ProcessFiles{Tag: "rank0", Evidence: ev}).CutTraces
	want := map[string]CutWindow{
		"trace-rank0-2.pt.trace.json.gz": {Why: "the window's memory bound closed it: grew 1 GiB", Steps: 1, InStep: true, By: "memory"},
		"trace-rank0-3.pt.trace.json.gz": {Why: "the window's idle bound closed it: no step for 2 s"},
		"trace-rank0-4.pt.trace.json.gz": {Why: "the program ended during it", Steps: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("cut traces %+v, want %+v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
}

// The allocator's own settings: glibc's variables, its malloc tunables
// and a preloaded allocator; not other tunables or preloads.
func TestAllocatorSettings(t *testing.T) {
	got := allocatorSettings(map[string]string{"MALLOC_ARENA_MAX": "2", "GLIBC_TUNABLES": "glibc.pthread.rseq=0",
		"LD_PRELOAD": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "OMP_NUM_THREADS": "1"})
	if want := "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 MALLOC_ARENA_MAX=2"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := allocatorSettings(map[string]string{"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1", "LD_PRELOAD": "libfoo.so"}); got != "GLIBC_TUNABLES=glibc.malloc.hugetlb=1" {
		t.Errorf("got %q", got)
	}
}

func TestIsDataTransform(t *testing.T) {
	for module, want := range map[string]bool{
		"torchvision.transforms.transforms": true, "torchvision.transforms.v2._geometry": true, "torchaudio.transforms._transforms": true,
		"kornia.augmentation._2d.intensity.normalize": true,
		"torchvision.models.resnet":                   false, "torchvision.transformsx": false, "torch.nn.modules.container": false, "__main__": false,
	} {
		if got := IsDataTransform(module); got != want {
			t.Errorf("%s: %v, want %v", module, got, want)
		}
	}
}

// What a DataLoader's restarts cost the steps around them: from each
// iterator's making to the end of its step, and the step after, less
// what those take without it; what the step did before the making, a
// loader that is not the steps' own, and the window's steps left out.
func TestRestartSteps(t *testing.T) {
	// 2 s steps, step N starting at 2(N-1) s; the epoch's second iterator
	// made at step 8's start, which took 3.2 s
	series := func(durs map[int]float64, window ...int) []steptimes.Step {
		var steps []steptimes.Step
		start := 0.0
		for n := 1; n <= 12; n++ {
			d := 2.0
			if v, ok := durs[n]; ok {
				d = v
			}
			steps = append(steps, steptimes.Step{N: n, StartS: start, DurS: d, InWindow: slices.Contains(window, n)})
			start += d
		}
		return steps
	}
	loader := rundir.LoaderInfo{Batches: 24, Iterators: 2, Starts: [][2]float64{{1, 0}, {8, 14}}}
	evalFirst := loader
	evalFirst.Starts = [][2]float64{{1, 0}, {8, 15}} // an evaluation's 1 s before the making
	evalLoader := loader
	evalLoader.Batches = 4 // 2 batches an epoch, all in one step
	for _, c := range []struct {
		name   string
		steps  []steptimes.Step
		l      rundir.LoaderInfo
		source string
		want   float64
		n      int
	}{
		{"made at the step's start", series(map[int]float64{8: 3.2}), loader, "optimizer", 1.2, 1},
		{"the next step slow too", series(map[int]float64{8: 3.2, 9: 2.5}), loader, "optimizer", 1.7, 1},
		{"an evaluation before the making", series(map[int]float64{8: 3.2}), evalFirst, "optimizer", 0.2, 1},
		// the DataLoader's next batch ends the step: 0.5 s from the
		// making to the step's end, a 2.7 s step after it
		{"the DataLoader as the step source", series(map[int]float64{8: 2.5, 9: 2.7}), rundir.LoaderInfo{Batches: 24, Iterators: 2, Starts: [][2]float64{{1, 0}, {8, 16}}}, "dataloader", 1.2, 1},
		{"no cost", series(nil), loader, "optimizer", 0, 1},
		{"in the window", series(map[int]float64{8: 3.2}, 8), loader, "optimizer", 0, 0},
		{"an evaluation's loader", series(map[int]float64{8: 3.2}), evalLoader, "optimizer", 0, 0},
		{"one iterator", series(map[int]float64{8: 3.2}), rundir.LoaderInfo{Batches: 24, Iterators: 1, Starts: [][2]float64{{1, 0}}}, "optimizer", 0, 0},
		{"an agent before starts", series(map[int]float64{8: 3.2}), rundir.LoaderInfo{Batches: 24, Iterators: 2}, "optimizer", 0, 0},
	} {
		got, n := restartSteps(c.steps, c.l, 2, c.source)
		if math.Abs(got-c.want) > 1e-9 || n != c.n {
			t.Errorf("%s: %v s over %d restarts, want %v over %d", c.name, got, n, c.want, c.n)
		}
	}
}
