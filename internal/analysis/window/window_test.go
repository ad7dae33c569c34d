package window

import (
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/scenario"
)

const mm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"

func check(t *testing.T, s *scenario.Trace) *Result {
	t.Helper()
	tr, err := kineto.ReadFile(s.Write(t), kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return Check(tr, Options{})
}

func excluded(r *Result) map[string]string {
	out := map[string]string{}
	for _, s := range r.Steps {
		if s.Excluded != "" {
			out[s.Step] = s.Excluded
		}
	}
	return out
}

// steadyGPUBound is three steps of back-to-back kernels.
func steadyGPUBound(s *scenario.Trace) float64 {
	end := 0.0
	for n := 1; n <= 3; n++ {
		end = s.GPUStep(n, end, end, 40, 1000)
	}
	return end
}

func TestSteadyStateIsSteady(t *testing.T) {
	var s scenario.Trace
	steadyGPUBound(&s)
	r := check(t, &s)
	if !r.SteadyState || len(r.Used) != 3 || r.Carry != nil || len(r.Startup) != 0 || r.Capture != nil || r.Overhead != nil {
		t.Fatalf("a steady GPU-bound loop judged %+v", r)
	}
}

// Must stay silent: launch calls that block on a full launch queue are
// the steady state of a GPU-bound loop, not lazy module loading, even the
// first launch of each kernel.
func TestFullQueueIsNotModuleLoading(t *testing.T) {
	var s scenario.Trace
	dev := 0.0
	for n := 1; n <= 3; n++ {
		ts := float64(n-1) * 100000
		lt := ts
		for i := range 40 {
			// the first 30 launches return at once and fill the queue;
			// the last 10 block 2 ms each while the device catches up
			dur := 5.0
			if i >= 30 {
				dur = 2000
			}
			s.LaunchLone(lt, dur, mm+itoa(i), max(dev, lt+dur+5), 2400)
			dev = max(dev, lt+dur+5) + 2400
			lt += dur + 10
		}
		s.Step(n, ts, 100000)
	}
	r := check(t, &s)
	if len(r.Startup) != 0 || len(excluded(r)) != 0 {
		t.Fatalf("full-queue launches taken for start-up: %+v %+v", r.Startup, excluded(r))
	}
}

// Must stay silent: a program that allocates every step has an allocator
// problem, not a start-up cost.
func TestAllocationEveryStepIsNotStartup(t *testing.T) {
	var s scenario.Trace
	end := 0.0
	for n := 1; n <= 3; n++ {
		s.Runtime("cudaMalloc", end+2, 5000)
		end = s.GPUStep(n, end, end+5100, 40, 1000)
	}
	r := check(t, &s)
	if r.StartupUs != 0 || len(excluded(r)) != 0 {
		t.Fatalf("per-step cudaMalloc taken for start-up: %+v", r.Startup)
	}
	// and in the first step only, it is start-up
	var s2 scenario.Trace
	s2.Runtime("cudaMalloc", 2, 30000)
	end = 0
	for n := 1; n <= 3; n++ {
		from := end
		if n == 1 {
			from = 30100
		}
		end = s2.GPUStep(n, end, from, 40, 1000)
	}
	r = check(t, &s2)
	if excluded(r)["1"] != StartUp || len(r.Used) != 2 {
		t.Fatalf("first-step allocator growth: %+v, used %v", excluded(r), r.Used)
	}
}

// Must stay silent: a first .item() that waits longer on the device is a
// sync, not a one-time cost.
func TestBlockedFirstCallIsNotStartup(t *testing.T) {
	var s scenario.Trace
	end := 0.0
	for n := 1; n <= 4; n++ {
		end = s.GPUStep(n, end, end, 20, 1000)
		wait := 50.0
		if n == 1 {
			wait = 20000
		}
		s.Op("aten::item", end+1, wait+10)
		s.Runtime("cudaStreamSynchronize", end+2, wait)
		end += wait + 20
	}
	r := check(t, &s)
	if len(r.Startup) != 0 {
		t.Fatalf("a blocked first call taken for start-up: %+v", r.Startup)
	}
}

// A slow first call is start-up when the trace starts at the profiler's
// first step (#0); after earlier steps (a schedule's wait and warmup, or
// bottleneck run's skipped steps) the op ran before, and the same slow
// call is an outlier step (a garbage collection), not start-up.
func TestFirstCallIsStartup(t *testing.T) {
	for _, c := range []struct {
		first int
		want  string
	}{{0, StartUp}, {7, Outlier}} {
		var s scenario.Trace
		end := 0.0
		for n := c.first; n < c.first+4; n++ {
			d := 300.0
			if n == c.first {
				d = 90000 // cuDNN autotuning on the first call
			}
			s.Op("aten::conv2d", end+1, d)
			end = s.GPUStep(n, end, end+d+5, 20, 1000)
		}
		r := check(t, &s)
		step := fmt.Sprint(c.first)
		if got := excluded(r)[step]; got != c.want || (c.want == StartUp) != (len(r.Startup) > 0 && r.Startup[0].Kind == "first-call") {
			t.Errorf("trace from step %d: slow first conv2d gives %+v, step %s excluded as %q, want %q", c.first, r.Startup, step, got, c.want)
		}
	}
}

// Must stay silent: device work that started before the trace but covers
// under a tenth of the first step does not exclude it, and GPU-only
// traces (no launch links) are not judged.
func TestSmallCarryOverKeepsTheStep(t *testing.T) {
	var s scenario.Trace
	s.Device("kernel", mm, 0, 900, 0)
	end := 0.0
	for n := 1; n <= 3; n++ {
		end = s.GPUStep(n, end, max(end, 1000), 40, 1000)
	}
	r := check(t, &s)
	if r.Carry == nil || len(excluded(r)) != 0 {
		t.Fatalf("a 1 ms carry-over in a 40 ms step: carry %+v, excluded %v", r.Carry, excluded(r))
	}
	var g scenario.Trace
	for i := range 40 {
		g.Device("kernel", mm, float64(i)*1000, 1000, 0)
	}
	if r := check(t, &g); r.Carry != nil {
		t.Fatalf("a GPU-only trace judged mid-flight: %+v", r.Carry)
	}
}

func TestOutliers(t *testing.T) {
	var s scenario.Trace
	end := 0.0
	for n := 1; n <= 4; n++ {
		k := 40
		if n == 2 {
			k = 70 // 1.75x: not an outlier
		}
		if n == 4 {
			k = 100 // 2.5x: an outlier
		}
		end = s.GPUStep(n, end, end, k, 1000)
	}
	r := check(t, &s)
	if ex := excluded(r); len(ex) != 1 || ex["4"] != Outlier || !r.SteadyState {
		t.Fatalf("outliers: %v (steady %v)", ex, r.SteadyState)
	}
}

// Steps that take over twice the others' median every other step are two
// kinds of step taken in turn (an actor updated every second iteration),
// both used and named; slow steps in a row (a busy spell), every third
// step (periodic work) or a lone one are outliers as before.
func TestAlternatingSteps(t *testing.T) {
	for _, c := range []struct {
		name        string
		slow        []int // of steps 1-8
		alternating []string
		outliers    int
	}{
		{"every other step", []int{2, 4, 6, 8}, []string{"2", "4", "6", "8"}, 0},
		{"every other step, three of them", []int{3, 5, 7}, []string{"3", "5", "7"}, 0},
		{"in a row", []int{4, 5}, nil, 2},
		{"every third step", []int{2, 5, 8}, nil, 3},
		{"a lone one", []int{4}, nil, 1},
		{"two, two apart, of eight", []int{3, 5}, nil, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s scenario.Trace
			end := 0.0
			for n := 1; n <= 8; n++ {
				k := 40
				if slices.Contains(c.slow, n) {
					k = 120
				}
				end = s.GPUStep(n, end, end, k, 1000)
			}
			r := check(t, &s)
			if ex := excluded(r); !slices.Equal(r.Alternating, c.alternating) || len(ex) != c.outliers {
				t.Errorf("alternating %v, excluded %v; want %v and %d outliers", r.Alternating, ex, c.alternating, c.outliers)
			}
			if c.alternating != nil && len(r.Used) != 8 {
				t.Errorf("used %v, want all 8 steps", r.Used)
			}
		})
	}
}

// The program ended during a run's window: its last step is cut short
// and left out, the steps before it kept; a window with only that step
// has no step to use, unless that step's part is a real step's start (a
// bound closed the window inside it). Without LastStepCut nothing is
// left out.
func TestLastStepCut(t *testing.T) {
	for _, tc := range []struct {
		steps       int
		ended, keep bool
		used        int
		steady      bool
	}{{3, true, false, 2, true}, {1, true, false, 0, false}, {3, true, true, 2, true}, {1, true, true, 1, true}, {3, false, false, 3, true}} {
		var s scenario.Trace
		end := 0.0
		for n := 1; n <= tc.steps; n++ {
			end = s.GPUStep(n, end, end, 40, 1000)
		}
		tr, err := kineto.ReadFile(s.Write(t), kineto.Options{})
		if err != nil {
			t.Fatal(err)
		}
		o := Options{KeepCutStep: tc.keep}
		if tc.ended {
			o.LastStepCut = "the program ended during it"
		}
		r := Check(tr, o)
		ex := excluded(r)
		if len(r.Used) != tc.used || r.SteadyState != tc.steady || len(ex) != tc.steps-tc.used || len(ex) > 0 && ex[strconv.Itoa(tc.steps)] != Cut {
			t.Errorf("%d steps, ended %v, keep %v: used %v, left out %v, steady %v", tc.steps, tc.ended, tc.keep, r.Used, ex, r.SteadyState)
		}
	}
}

// A CPU loop fed by 4 DataLoader workers that cannot keep up: every 4th
// step waits for the next round of batches. Those steps are the loop's
// steady state, not outliers; a step slow in its own work still is, and
// so is a lone long wait (an epoch's restart).
func TestLoaderWaitsAreNotOutliers(t *testing.T) {
	var s scenario.Trace
	ts := 0.0
	for n := 1; n <= 12; n++ {
		wait, work := 50.0, 1000.0
		switch {
		case n%4 == 0:
			wait = 6000 // the next round of batches
		case n == 10:
			work = 5000 // a checkpoint
		}
		s.Step(n, ts, wait+work)
		s.Host("user_annotation", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", ts, wait, nil)
		s.Op("aten::addmm", ts+wait, work)
		ts += wait + work
	}
	r := check(t, &s)
	if ex := excluded(r); len(ex) != 1 || ex["10"] != Outlier {
		t.Fatalf("excluded %v, want step 10 only (an outlier of its own work)", ex)
	}

	// one long wait, an epoch's first batch while its workers start: an
	// outlier still
	var e scenario.Trace
	ts = 0
	for n := 1; n <= 12; n++ {
		wait := 50.0
		if n == 6 {
			wait = 6000
		}
		e.Step(n, ts, wait+1000)
		e.Host("user_annotation", "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", ts, wait, nil)
		e.Op("aten::addmm", ts+wait, 1000)
		ts += wait + 1000
	}
	if ex := excluded(check(t, &e)); len(ex) != 1 || ex["6"] != Outlier {
		t.Fatalf("excluded %v, want the lone wait (step 6)", ex)
	}
}

func itoa(i int) string { return string(rune('a' + i)) }

// Compilation in the window's leading steps is start-up; compilation in
// every step, or in a step after one that ran without compiling (a new
// input shape), recurs: it is a recompilation, not start-up.
func TestCompile(t *testing.T) {
	for _, c := range []struct {
		name      string
		compiles  []bool // per step 1-5
		startup   []string
		recompile int    // steps that recompiled
		id        string // compile id of the later compilations ("": not recorded)
	}{
		{"first step", []bool{true, false, false, false, false}, []string{"1"}, 0, ""},
		{"first two steps", []bool{true, true, false, false, false}, []string{"1", "2"}, 0, ""},
		{"every step", []bool{true, true, true, true, true}, nil, 5, ""},
		{"later steps", []bool{false, true, false, true, false}, nil, 2, ""},
		{"first and a later step", []bool{true, false, false, true, false}, []string{"1"}, 1, ""},
		// compile ids (newer torch): a later step's compile of another
		// function (1/0) is start-up, a frame's fourth compile (0/3) not
		{"another function later", []bool{true, false, false, true, false}, []string{"1", "4"}, 0, "1/0"},
		{"a recompile by its id", []bool{true, false, false, true, false}, []string{"1"}, 1, "0/3"},
	} {
		var s scenario.Trace
		end := 0.0
		for n := 1; n <= 5; n++ {
			if c.compiles[n-1] {
				s.Host("user_annotation", "_compile.compile_inner", end+1, 30000, nil)
				if c.id != "" && n > 1 {
					s.Host("user_annotation", "entire_frame_compile_data: fn_name=_compile.compile_inner, compile_id="+c.id, end+2, 10, nil)
				}
				end = s.GPUStep(n, end, end+30010, 40, 1000)
				continue
			}
			end = s.GPUStep(n, end, end, 40, 1000)
		}
		r := check(t, &s)
		var startup []string
		for step, why := range excluded(r) {
			if why == StartUp {
				startup = append(startup, step)
			}
		}
		slices.Sort(startup)
		if !slices.Equal(startup, c.startup) || r.RecompileSteps != c.recompile {
			t.Errorf("%s: start-up steps %v, recompiled %d (%+v), want %v and %d", c.name, startup, r.RecompileSteps, r.Recompiles, c.startup, c.recompile)
		}
		if c.recompile > 0 && (r.RecompileUs < 30000*float64(c.recompile)-1 || r.Recompiles[0].Kind != "recompile") {
			t.Errorf("%s: recompile time %v, costs %+v", c.name, r.RecompileUs, r.Recompiles)
		}
	}
}

// The profiler's buffer requests and flushes lengthen a step only while
// the device waits: beside a busy device (a GPT's 92 ms of kernels a step
// on an H100, 14.8% of it overhead) the window stays steady; in a step
// with no device work running they make it not steady state.
func TestProfilerOverheadBesideDeviceWork(t *testing.T) {
	for _, c := range []struct {
		name   string
		at     float64 // overhead start, µs into each step
		steady bool
	}{
		{"beside kernels", 5000, true},
		{"device idle", 100000 - 6000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s scenario.Trace
			for n := 1; n <= 3; n++ {
				ts := float64(n-1) * 100000
				s.LaunchLone(ts+10, 5, mm, ts+20, 80000) // the device runs 80 ms of the 100 ms step
				s.Op("aten::mm", ts+5, 20)
				s.Host("overhead", "Activity Buffer Request", ts+c.at, 5000, nil)
				s.Step(n, ts, 100000)
			}
			r := check(t, &s)
			if r.Overhead == nil || r.Overhead.Pct < 4.9 || r.SteadyState != c.steady {
				t.Fatalf("overhead %+v, steady %v, want steady %v", r.Overhead, r.SteadyState, c.steady)
			}
		})
	}
}

// The outliers' work is summed in one order, not a map's: the same
// figures to the last bit on every analysis of a trace (testdata/diff/ddp/b's
// recorded_us varied in its last digit from run to run).
func TestOutlierWorkSumsInOneOrder(t *testing.T) {
	var s scenario.Trace
	ts := 0.0
	for n := 1; n <= 20; n++ {
		dur := 1000.0
		if n%5 == 0 {
			dur = 4000 // every 5th step does 30 more ops' work
		}
		s.Step(n, ts, dur)
		s.Op("aten::mm", ts+1, 500)
		if n%5 == 0 {
			for k := range 30 {
				s.Op("extra"+strconv.Itoa(k), ts+600+float64(k)*100, 0.1+float64(k)*0.37)
			}
		}
		ts += dur
	}
	tr, err := kineto.ReadFile(s.Write(t), kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first := Check(tr, Options{}).OutlierWork
	if first == nil || first.RecordedUs <= 0 {
		t.Fatalf("outlier work %+v: want the extra ops", first)
	}
	for range 10 {
		if w := Check(tr, Options{}).OutlierWork; w.RecordedUs != first.RecordedUs {
			t.Fatalf("recorded %v, then %v", first.RecordedUs, w.RecordedUs)
		}
	}
}
