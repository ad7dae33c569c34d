// Package window decides, before any verdict is drawn, whether a trace's
// recorded window shows the program's steady state, and which steps can be
// trusted. A verdict drawn from a window that began mid-flight, holds
// one-time start-up costs or a graph capture, or is inflated by the
// profiler itself describes the capture, not the program.
//
// The checks (DefinitionVersion; thresholds in Options, docs/metrics.md):
//
//   - Carry-over: device work running at the start of the window that was
//     launched before it (no launch call in the trace), or a stream's
//     first launched device event that starts long after its launch with
//     nothing recorded ahead of it on its device (the device, or the event
//     the stream waits for, was busy with unrecorded work). Steps whose span overlaps the carry-over by at least
//     CarryStepShare are excluded: their idle and sync figures describe
//     work the window did not see being issued.
//   - Start-up: one-time costs: context creation and other runtime calls
//     of at least MinStartupUs outside the launch/sync/copy classes
//     (cudaDeviceGetStreamPriorityRange on first use, cudaFree(0),
//     cudaStreamCreate, module loading), kernel launches of at least
//     MinStartupUs that are the first of their kernel and not held up by
//     a full launch queue (lazy module loading), allocator growth
//     (cudaMalloc/hipMalloc) in a step when later steps allocate
//     nothing, torch.compile / autotuning regions, CUPTI "Driver Compiler"
//     overhead, and an op whose first call takes FirstCallRatio times its
//     median later call (cuDNN/cuBLAS handle creation, autotuning,
//     DataLoader worker start). A step whose start-up costs reach
//     StartupStepShare of it is excluded. Compilation is start-up only in
//     the window's leading steps: in a step after one that ran without
//     compiling, or in every step, it recurs (Recompiles: new input
//     shapes or failed guards) and is left to the outlier check.
//   - Graph capture: cudaStreamBeginCapture .. EndCapture spans (and the
//     hip equivalents): launches recorded into a graph, not executed.
//     Steps overlapping a capture are excluded.
//   - Profiler overhead: CUPTI/Kineto overhead events (category "overhead":
//     Activity Buffer Request, Buffer Flush, Instrumentation, Resource)
//     inside the steps; reported when they reach OverheadShare of the
//     step time.
//   - Outliers: with at least three steps left, a step longer than
//     OutlierRatio times the median of the others is excluded (warm-up, a
//     checkpoint, a collection pause), unless at least half of its excess
//     over that median is in DataLoader __next__ and another step's is
//     too: N workers that cannot keep up deliver a round of N batches at
//     once, so every Nth step waits; that is the steady state of an
//     input-bound loop (a lone such step is an epoch's restart, an
//     outlier).
//   - Cut short: with Options.LastStepCut, the last step, which the
//     recording's end cut short (the program ended, or a bound closed
//     the window, during it).
//
// A window with no step left is not steady state; the diagnosis then gives
// no verdict and says how to re-profile.
package window

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// DefinitionVersion names the checks in JSON output.
const DefinitionVersion = "window/3"

// Options are the thresholds; zero values take the defaults.
type Options struct {
	MinCarryUs       float64 // carry-over below this is ignored (default 500 µs)
	CarryStepShare   float64 // exclude a step overlapped this much by carry-over (default 0.10)
	MinStartupUs     float64 // a one-time call must take this long (default 1000 µs)
	StartupStepShare float64 // exclude a step this much start-up (default 0.10)
	FirstCallRatio   float64 // first call / median of later calls (default 10)
	OverheadShare    float64 // report profiler overhead from this share (default 0.02)
	OutlierRatio     float64 // step / median of the others (default 2)
	// LastStepCut says why the trace's last step was cut short, when it
	// was (a `bottleneck run` window the program ended during, or that a
	// bound closed): that step is excluded (Cut), unless it is the only
	// step and KeepCutStep says its part is a real step's start (a
	// memory or time bound closed the window inside it).
	LastStepCut string
	KeepCutStep bool
	// CutBy names the bound that closed the window inside that step
	// ("memory" or "wall"; empty otherwise).
	CutBy string
}

func (o *Options) defaults() {
	def := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MinCarryUs, 500)
	def(&o.CarryStepShare, 0.10)
	def(&o.MinStartupUs, 1000)
	def(&o.StartupStepShare, 0.10)
	def(&o.FirstCallRatio, 10)
	def(&o.OverheadShare, 0.02)
	def(&o.OutlierRatio, 2)
}

// Exclusion reasons.
const (
	CarryOver = "carry-over"
	StartUp   = "start-up"
	Capture   = "graph capture"
	Outlier   = "outlier"
	Cut       = "cut short"
)

// Step is one step's check.
type Step struct {
	// Step is the ProfilerStep number as text ("0" for the synthetic whole-trace step).
	Step string `json:"step"`
	// Us is the step's span: its host start to the later of its host end and the end of the device work it launched.
	Us float64 `json:"us"`
	// Excluded is the reason the step is left out of the steady-state
	// figures ("" when used): carry-over, start-up, graph capture, outlier or cut short.
	Excluded string `json:"excluded,omitempty"`
	// StartupUs is the part of the step's span covered by start-up costs (their union).
	StartupUs float64 `json:"startup_us,omitempty"`
	// RecompileUs is the part of the step's span covered by recurring compilations (Recompiles).
	RecompileUs float64 `json:"recompile_us,omitempty"`
	// CarryUs is the part of the step's span covered by carry-over, set when that excluded the step.
	CarryUs float64 `json:"carry_over_us,omitempty"`
}

// Cost is one start-up cost.
type Cost struct {
	// Kind is the cost's kind: context, module-load, allocator, compile, first-call or jit; recompile in recompiles.
	Kind string `json:"kind"`
	// Name is the event's name: the runtime call, op, region or frame.
	Name string `json:"name"`
	// Step is the number of the step whose span holds the cost's start (absent outside every step).
	Step string `json:"step,omitempty"`
	// StartUs is the cost's start, from the trace's first event.
	StartUs float64 `json:"start_us"`
	// Us is the cost: the event's duration; for first-call, the first call's own time (less its blocking syncs) minus the median of the later calls.
	Us float64 `json:"us"`
	// Note says what the cost is, in plain words.
	Note string `json:"note,omitempty"`

	span interval.Span // what it occupied (ns), for the union per step
	step int           // index of the step holding its start (-1: none)
}

// Carry is the device work the window inherited from before it began.
type Carry struct {
	// UntilUs: the device was busy with inherited work until this time
	// (from the trace start).
	UntilUs float64 `json:"until_us"`
	// Events is the number of inherited device events recorded: device work with no launch call in the trace that starts before the first launched work on its device.
	Events int `json:"events"`
	// DelayedUs is how late the first launched device event started after its launch call when nothing recorded ran ahead of it (absent when inherited events explain the start).
	DelayedUs float64 `json:"delayed_us,omitempty"`
	// HostWaitUs is the time the host spent in sync calls issued before
	// the window's first launch and before UntilUs: waiting on the
	// inherited work.
	HostWaitUs float64 `json:"host_wait_us,omitempty"`
	// BusyAfterPct: device busy share from UntilUs to the end of the
	// trace, the part of the window that is the program's own.
	BusyAfterPct float64 `json:"busy_after_pct"`
	// UntilNs is UntilUs on the trace's clock (ns): blocking calls that
	// start before it wait on the inherited work (syncs.Options).
	UntilNs int64 `json:"-"`
}

// GraphCapture is the time spent capturing CUDA/HIP graphs.
type GraphCapture struct {
	// Captures is the number of stream capture spans, from cudaStreamBeginCapture to cudaStreamEndCapture (hip too).
	Captures int `json:"captures"`
	// Us is the union of the capture spans.
	Us float64 `json:"us"`
	// Launches is the number of launch calls recorded into the graphs.
	Launches int `json:"launches"`
}

// Overhead is the profiler's own activity in the steps.
type Overhead struct {
	// Events is the number of profiler overhead events (category "overhead", Driver Compiler apart) starting inside a step.
	Events int `json:"events"`
	// Us is their union.
	Us float64 `json:"us"`
	// Pct is Us as a percentage of the summed step spans.
	Pct float64 `json:"pct_of_steps"`
	// IdlePct is the part of Pct while no device work ran: only that part
	// can lengthen a step (all of it on a CPU-only trace). A GPT on an H100
	// with 92 ms of kernels a step: 14.8% of overhead, none of it exposed.
	IdlePct float64 `json:"idle_pct_of_steps"`
}

// Result is the window check of one trace.
type Result struct {
	// Definition names the version of the checks (docs/metrics.md, "Window check").
	Definition string `json:"definition"`
	// SteadyState: no step had to be excluded for carry-over, start-up or
	// capture, and the profiler's overhead is below its threshold.
	SteadyState bool `json:"steady_state"`
	// Steps are every step's check, in time order.
	Steps []Step `json:"steps"`
	// Used are the numbers of the steps not excluded, which the breakdown, the GPU window and the verdict use.
	Used []string `json:"used_steps"`
	// MedianUs is the median step span over the steps not excluded for carry-over, start-up or capture (outliers included).
	MedianUs float64 `json:"median_step_us"`
	// Synthetic: the trace has no ProfilerStep marks (one whole-trace step).
	Synthetic bool `json:"synthetic_step"`
	// StepMarks: the trace has no ProfilerStep marks and its steps are the iterations between repeats of this event (Optimizer.step, a DataLoader's __next__, a record_function range, the outermost module); absent otherwise.
	StepMarks string `json:"step_marks,omitempty"`
	// Carry is the inherited device work (absent when there is none of at least 500 µs).
	Carry *Carry `json:"carry_over,omitempty"`
	// Startup are the start-up costs, largest first, at most 10.
	Startup []Cost `json:"startup,omitempty"`
	// StartupUs is the union of all start-up costs over the trace.
	StartupUs float64 `json:"startup_us"`
	// Recompiles are the compilations of torch.compile that recur: in a step after one of the window's steps ran without compiling, or in every step. New input shapes or failed guards recompile; not start-up. Largest first, at most 10.
	Recompiles []Cost `json:"recompiles,omitempty"`
	// RecompileUs is the union of the recurring compilations' spans.
	RecompileUs float64 `json:"recompile_us,omitempty"`
	// RecompileSteps is the number of steps that recompiled.
	RecompileSteps int `json:"recompile_steps,omitempty"`
	// Capture is the graph capture found (absent when none).
	Capture *GraphCapture `json:"graph_capture,omitempty"`
	// LastStepCut says why the last step was cut short (Options.LastStepCut; absent when it was not): it is left out, or, when it is the only step and its part is a real step's start, used.
	LastStepCut string `json:"last_step_cut,omitempty"`
	// LastStepCutBy names the bound that closed the window inside the last step (Options.CutBy: "memory" or "wall"; absent otherwise).
	LastStepCutBy string `json:"last_step_cut_by,omitempty"`
	// Overhead is the profiler's overhead in the steps (absent when it recorded none).
	Overhead *Overhead `json:"profiler_overhead,omitempty"`
	// OutlierWork is what the outlier steps do beyond an ordinary step (absent with fewer than 2 outliers).
	OutlierWork *OutlierWork `json:"outlier_work,omitempty"`
	// Alternating are the steps that took over OutlierRatio times the others' median every other step, a third of the steps or more: two kinds of step taken in turn, both used (absent otherwise).
	Alternating []string `json:"alternating_steps,omitempty"`
}

// Excluded returns, per step index, whether the step is left out.
func (r *Result) Excluded() []bool {
	if r == nil {
		return nil
	}
	out := make([]bool, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.Excluded != ""
	}
	return out
}

// Kept is Excluded's complement: which steps the figures use.
func (r *Result) Kept() []bool {
	kept := r.Excluded()
	for i := range kept {
		kept[i] = !kept[i]
	}
	return kept
}

// Uses reports whether step name is among the steps used.
func (r *Result) Uses(step string) bool { return r == nil || slices.Contains(r.Used, step) }

// ExcludedBy returns the steps excluded for reason.
func (r *Result) ExcludedBy(reason string) []string {
	var out []string
	for _, s := range r.Steps {
		if s.Excluded == reason {
			out = append(out, s.Step)
		}
	}
	return out
}

type checker struct {
	t       *trace.Trace
	o       Options
	cl      *classify.Table
	r       *Result
	t0      int64
	spans   []interval.Span // step spans (host start .. device end)
	steps   interval.Index  // stepOf's search
	indexed bool            // false: the spans are not in start order
	workOf  map[int]int     // launch -> its first device event (queueFull)
}

// Check runs every check on t.
func Check(t *trace.Trace, o Options) *Result {
	o.defaults()
	c := &checker{t: t, o: o, cl: classify.For(t), r: &Result{Definition: DefinitionVersion, Synthetic: t.SyntheticStep, StepMarks: t.StepMarks, Used: []string{}, LastStepCut: o.LastStepCut, LastStepCutBy: o.CutBy}}
	c.t0, _ = t.Span()
	for _, s := range t.Steps {
		sp := interval.Span{Start: s.Start, End: max(s.End, s.DeviceEnd)}
		c.spans = append(c.spans, sp)
		c.r.Steps = append(c.r.Steps, Step{Step: fmt.Sprint(s.Num), Us: us(sp.Len())})
	}
	c.indexSteps()
	carry := c.carryOver()
	capture := c.graphCapture()
	c.startup()
	c.overhead()
	for i := range c.r.Steps {
		st := &c.r.Steps[i]
		sp := c.spans[i]
		switch {
		case c.o.LastStepCut != "" && i == len(c.r.Steps)-1 && !(c.o.KeepCutStep && i == 0):
			st.Excluded = Cut
		case float64(carry.OverlapLen(sp)) >= c.o.CarryStepShare*float64(sp.Len()) && carry.OverlapLen(sp) > 0:
			st.CarryUs = us(carry.OverlapLen(sp))
			st.Excluded = CarryOver
		case capture.OverlapLen(sp) > 0:
			st.Excluded = Capture
		case st.StartupUs >= c.o.StartupStepShare*st.Us:
			st.Excluded = StartUp
		}
	}
	c.outliers()
	c.r.OutlierWork = c.outlierWork()
	c.r.SteadyState = true
	for _, s := range c.r.Steps {
		if s.Excluded == "" {
			c.r.Used = append(c.r.Used, s.Step)
		} else if s.Excluded != Outlier && s.Excluded != Cut {
			c.r.SteadyState = false
		}
	}
	if c.r.Overhead != nil && c.r.Overhead.IdlePct >= 100*c.o.OverheadShare || len(c.r.Used) == 0 {
		c.r.SteadyState = false
	}
	return c.r
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

func (c *checker) rel(ns int64) float64 { return us(ns - c.t0) }

// indexSteps prepares stepOf's search (trace.Trace keeps its steps in
// start order).
func (c *checker) indexSteps() { c.steps, c.indexed = interval.NewIndex(c.spans) }

// stepOf returns the index of the first step whose span holds ts, or -1,
// in log steps: it runs for start-up costs and overhead events, one or
// more a step (a scan of the steps each was steps²).
func (c *checker) stepOf(ts int64) int {
	if !c.indexed {
		return c.stepOfScan(ts)
	}
	return c.steps.First(ts)
}

// stepOfScan is stepOf by definition.
func (c *checker) stepOfScan(ts int64) int {
	for i, sp := range c.spans {
		if ts >= sp.Start && ts < sp.End {
			return i
		}
	}
	return -1
}

// carryOver finds the device work inherited from before the window and
// returns when it ran (nil when there is none worth reporting).
func (c *checker) carryOver() interval.Set {
	ev := &c.t.Events
	var work, linked int
	firstLinked := map[int]int32{}             // device -> earliest linked device event
	firstOnStream := map[trace.TrackID]int32{} // stream -> its earliest linked device event
	for i, k := range ev.Kind {
		if !k.IsDeviceWork() {
			continue
		}
		work++
		if ev.Launch(i) == trace.None {
			continue
		}
		linked++
		d := c.t.Tracks[ev.Track[i]].Device
		if j, ok := firstLinked[d]; !ok || ev.Start[i] < ev.Start[j] {
			firstLinked[d] = int32(i)
		}
		if j, ok := firstOnStream[ev.Track[i]]; !ok || ev.Start[i] < ev.Start[j] {
			firstOnStream[ev.Track[i]] = int32(i)
		}
	}
	// Without launch links (GPU-only traces, old formats) nothing can be
	// told about what was launched when.
	if work == 0 || linked*2 < work {
		return nil
	}
	var until int64
	var events int
	var delayed int64
	for i, k := range ev.Kind {
		if !k.IsDeviceWork() || ev.Launch(i) != trace.None {
			continue
		}
		f, ok := firstLinked[c.t.Tracks[ev.Track[i]].Device]
		if ok && ev.Start[i] >= ev.Start[f] {
			continue
		}
		events++
		until = max(until, ev.End(i))
	}
	var waits []interval.Span
	// Each stream's first launched work, not only the device's: a stream
	// held behind a wait on an event the trace never recorded starts late
	// while other streams run (a capture started mid-flight).
	for _, f := range firstOnStream {
		l := ev.Launch(int(f))
		if d := ev.Start[f] - ev.End(int(l)); ev.Start[f] > until && float64(d) >= c.o.MinCarryUs*1e3 {
			// nothing recorded ran ahead of it: the device was busy with
			// work the window did not record
			if !c.queuedBehindWindowWork(int(f)) {
				delayed = max(delayed, d)
				waits = append(waits, interval.Span{Start: ev.End(int(l)), End: ev.Start[f]})
			}
		}
	}
	var spans []interval.Span
	if events > 0 {
		spans = append(spans, interval.Span{Start: c.t0, End: until})
	}
	spans = append(spans, waits...)
	set := interval.Of(spans)
	if us(set.Total()) < c.o.MinCarryUs {
		return nil
	}
	for _, sp := range set {
		until = max(until, sp.End)
	}
	cr := &Carry{UntilUs: c.rel(until), UntilNs: until, Events: events, DelayedUs: us(delayed)}
	// host syncs issued before the window's first launch waited on it
	firstLaunch := int64(-1)
	for i, k := range ev.Kind {
		if k.IsLaunch() && c.cl.Has(ev.Name[i], classify.Launch) && (firstLaunch < 0 || ev.Start[i] < firstLaunch) {
			firstLaunch = ev.Start[i]
		}
	}
	for i, k := range ev.Kind {
		if k.IsLaunch() && c.cl.Has(ev.Name[i], classify.Sync) && ev.Start[i] < until && (firstLaunch < 0 || ev.Start[i] <= firstLaunch) {
			cr.HostWaitUs += us(ev.Dur[i])
		}
	}
	_, end := c.t.Span()
	var busy []interval.Span
	for i, k := range ev.Kind {
		if k.IsDeviceWork() && ev.End(i) > until {
			busy = append(busy, interval.Span{Start: max(ev.Start[i], until), End: ev.End(i)})
		}
	}
	if end > until {
		cr.BusyAfterPct = 100 * float64(interval.Of(busy).Total()) / float64(end-until)
	}
	c.r.Carry = cr
	return set
}

// queuedBehindWindowWork reports whether a launched device event may have
// waited for other device work of the window (on another stream of its
// device, started before it): then its delay is not carry-over.
func (c *checker) queuedBehindWindowWork(f int) bool {
	ev := &c.t.Events
	d := c.t.Tracks[ev.Track[f]].Device
	for i, k := range ev.Kind {
		if k.IsDeviceWork() && i != f && c.t.Tracks[ev.Track[i]].Device == d && ev.Start[i] < ev.Start[f] && ev.End(i) > ev.Start[f]-int64(c.o.MinCarryUs*1e3) {
			return true
		}
	}
	return false
}

// graphCapture returns the capture spans and records them.
func (c *checker) graphCapture() interval.Set {
	ev := &c.t.Events
	open := map[trace.TrackID]int64{}
	var spans []interval.Span
	for _, tr := range c.t.Tracks {
		for _, e := range tr.Events {
			i := int(e)
			if !ev.Kind[i].IsLaunch() {
				continue
			}
			name := c.t.Name(i)
			switch {
			case strings.Contains(name, "StreamBeginCapture"):
				open[ev.Track[i]] = ev.Start[i]
			case strings.Contains(name, "StreamEndCapture"):
				if s, ok := open[ev.Track[i]]; ok {
					spans = append(spans, interval.Span{Start: s, End: ev.End(i)})
					delete(open, ev.Track[i])
				}
			}
		}
	}
	if len(spans) == 0 {
		return nil
	}
	set := interval.Of(spans)
	g := &GraphCapture{Captures: len(spans), Us: us(set.Total())}
	for i, k := range ev.Kind {
		if k.IsLaunch() && c.cl.Has(ev.Name[i], classify.Launch) && set.OverlapLen(interval.Span{Start: ev.Start[i], End: ev.End(i) + 1}) > 0 {
			g.Launches++
		}
	}
	c.r.Capture = g
	return set
}

// startupCalls are runtime/driver calls that only happen once per process
// (or per new allocation): context and stream creation, module loading.
var startupCalls = []string{
	"cudaDeviceGetStreamPriorityRange", "cudaGetDeviceCount", "cudaSetDevice", "cuInit",
	"cuDevicePrimaryCtxRetain", "cudaStreamCreate", "cudaEventCreate", "cuModuleLoad", "cuLibraryLoad",
	"cudaFuncGetAttributes", "cudaGetDeviceProperties", "cuModuleGetFunction", "cudaHostAlloc", "cudaMallocHost",
	"hipDeviceGetStreamPriorityRange", "hipGetDeviceCount", "hipSetDevice", "hipInit", "hipStreamCreate",
	"hipModuleLoad", "hipHostMalloc", "hipGetDeviceProperties",
}

// allocCalls grow or shrink the caching allocator (cudaFree(0) also
// creates the context): start-up when the last step makes none.
var allocCalls = []string{"cudaMalloc", "hipMalloc", "cuMemAlloc", "cuMemCreate", "cudaFree", "hipFree", "cuMemFree"}

// compileMarks are record_function ranges and Python frames of
// torch.compile's compilation and Triton autotuning (dynamo_timed names).
// Runtime wrappers of compiled code (torch/_inductor/output_code.py,
// _aot_autograd/runtime_wrappers.py, CachingAutotuner.run) run every step
// and must not match.
var compileMarks = []string{
	"compile_inner", "call_user_compiler", "compile_fx", "inductor_compile", "create_aot_dispatcher_function",
	"benchmark_all_configs", "async_compile", "torch/_dynamo/convert_frame",
}

// compileAttempt reads N of "compile_id=F/N" in torch.compile's
// "entire_frame_compile_data: fn_name=..., compile_id=F/N" annotation.
func compileAttempt(name string) (int, bool) {
	const mark = "compile_id="
	if !strings.HasPrefix(name, "entire_frame_compile_data") {
		return 0, false
	}
	i := strings.Index(name, mark)
	if i < 0 {
		return 0, false
	}
	id := name[i+len(mark):]
	if j := strings.IndexAny(id, ", "); j >= 0 {
		id = id[:j]
	}
	_, n, ok := strings.Cut(id, "/")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(n)
	return v, err == nil
}

// startup collects one-time costs.
func (c *checker) startup() {
	ev := &c.t.Events
	var costs []Cost
	add := func(i int, kind, note string) {
		costs = append(costs, Cost{Kind: kind, Name: c.t.Name(i), StartUs: c.rel(ev.Start[i]), Us: us(ev.Dur[i]), Note: note,
			span: interval.Span{Start: ev.Start[i], End: ev.End(i)}, step: c.stepOf(ev.Start[i])})
		if s := costs[len(costs)-1].step; s >= 0 {
			costs[len(costs)-1].Step = c.r.Steps[s].Step
		}
	}
	minNs := int64(c.o.MinStartupUs * 1e3)
	// allocator growth counts as start-up only when the last step
	// allocates nothing: a program that allocates every step has no
	// start-up, it has an allocator problem; likewise compilation
	allocSteps, compileSteps := map[int]bool{}, map[int]bool{}
	var launchDurs []int64
	for i, k := range ev.Kind {
		if k.IsLaunch() && c.cl.Has(ev.Name[i], classify.Launch) {
			launchDurs = append(launchDurs, ev.Dur[i])
		}
	}
	medLaunch := median(launchDurs)
	firstKernel := c.firstLaunchOfKernel()
	// compile ids (torch 2.6 and later name them in an annotation): F/0 is
	// frame F's first compilation, F/N with N > 0 a recompilation
	firstCompile, recompileID := map[int]bool{}, map[int]bool{}
	for i, k := range ev.Kind {
		if k == trace.KindUserAnnotation {
			if n, ok := compileAttempt(c.t.Name(i)); ok {
				if n == 0 {
					firstCompile[c.stepOf(ev.Start[i])] = true
				} else {
					recompileID[c.stepOf(ev.Start[i])] = true
				}
			}
		}
		if ev.Dur[i] < minNs {
			continue
		}
		name := c.t.Name(i)
		switch {
		case k.IsLaunch() && classify.ContainsAny(name, allocCalls):
			allocSteps[c.stepOf(ev.Start[i])] = true
			add(i, "allocator", "allocator growth (or context creation by cudaFree(0))")
		case k.IsLaunch() && c.cl.Has(ev.Name[i], classify.Launch):
			// lazy module loading: the first launch of a kernel, slow
			// although the device took the kernel at once
			if firstKernel[i] && ev.Dur[i] >= 50*medLaunch && !c.queueFull(i, firstKernel) {
				add(i, "module-load", "first launch of this kernel (lazy module loading)")
			}
		case k.IsLaunch() && c.cl.Flags(ev.Name[i]) == 0 && classify.ContainsAny(name, startupCalls):
			add(i, "context", "one-time runtime call (context, stream or module set-up)")
		case (k == trace.KindPythonFunction || k == trace.KindUserAnnotation || k == trace.KindCPUOp) && classify.ContainsAny(name, compileMarks):
			compileSteps[c.stepOf(ev.Start[i])] = true
			if p := ev.Parent[i]; p != trace.None && classify.ContainsAny(c.t.Name(int(p)), compileMarks) {
				continue // counted with its enclosing compile region
			}
			add(i, "compile", "torch.compile compilation or autotuning")
		case c.t.Str(ev.Cat(i)) == "overhead" && name == "Driver Compiler":
			add(i, "jit", "PTX JIT compilation by the driver")
		}
	}
	costs = append(costs, c.firstCalls()...)
	// allocator growth only before the last step is start-up;
	// compilation only in the window's leading steps: a step that
	// compiles after one that did not recompiled (a new input shape, a
	// failed guard), and so does every step when all of them compile
	last := len(c.spans) - 1
	lead := 0
	for lead <= last && compileSteps[lead] {
		lead++
	}
	recompile := func(x Cost) bool {
		// a later step's first compilation of another function (its ids
		// all F/0) is start-up too
		first := firstCompile[x.step] && !recompileID[x.step]
		return x.Kind == "compile" && last > 0 && x.step >= 0 && (x.step >= lead || lead > last) && !first
	}
	steps := map[int]bool{}
	var recompiled []interval.Span
	for _, x := range costs {
		if recompile(x) {
			x.Kind, x.Note = "recompile", "torch.compile compiling again: a new input shape or a failed guard"
			c.r.Recompiles = append(c.r.Recompiles, x)
			recompiled = append(recompiled, x.span)
			steps[x.step] = true
		}
	}
	rset := interval.Of(recompiled)
	c.r.RecompileUs, c.r.RecompileSteps = us(rset.Total()), len(steps)
	for i := range c.r.Steps {
		c.r.Steps[i].RecompileUs = us(rset.OverlapLen(c.spans[i]))
	}
	slices.SortFunc(c.r.Recompiles, func(a, b Cost) int { return cmp.Compare(b.Us, a.Us) })
	c.r.Recompiles = c.r.Recompiles[:min(10, len(c.r.Recompiles))]
	costs = slices.DeleteFunc(costs, func(x Cost) bool {
		return recompile(x) || last > 0 && x.Kind == "allocator" && allocSteps[last]
	})
	// nested costs (a slow first op holding a context creation) count once
	var spans []interval.Span
	for _, x := range costs {
		spans = append(spans, x.span)
	}
	set := interval.Of(spans)
	c.r.StartupUs = us(set.Total())
	for i := range c.r.Steps {
		c.r.Steps[i].StartupUs = us(set.OverlapLen(c.spans[i]))
	}
	slices.SortFunc(costs, func(a, b Cost) int { return cmp.Compare(b.Us, a.Us) })
	if len(costs) > 10 {
		costs = costs[:10]
	}
	c.r.Startup = costs
}

// firstLaunchOfKernel marks launch calls whose kernel name appears for the
// first time in the trace.
func (c *checker) firstLaunchOfKernel() map[int]bool {
	ev := &c.t.Events
	type first struct {
		start int64
		i     int
	}
	byName := map[trace.StrID]first{}
	for i, k := range ev.Kind {
		if !k.IsDeviceWork() || ev.Launch(i) == trace.None {
			continue
		}
		if f, ok := byName[ev.Name[i]]; !ok || ev.Start[i] < f.start {
			byName[ev.Name[i]] = first{ev.Start[i], int(ev.Launch(i))}
		}
	}
	out := map[int]bool{}
	for _, f := range byName {
		out[f.i] = true
	}
	return out
}

// queueFull reports whether launch call i, one of launches, was held up by
// a full launch queue: its (first) device work started long after the call
// returned. The first call finds every launch's device work in one pass
// (a pass per call was kernels × events).
func (c *checker) queueFull(i int, launches map[int]bool) bool {
	ev := &c.t.Events
	if c.workOf == nil {
		c.workOf = map[int]int{}
		for j, k := range ev.Kind {
			if l := int(ev.Launch(j)); k.IsDeviceWork() && launches[l] {
				if _, ok := c.workOf[l]; !ok {
					c.workOf[l] = j
				}
			}
		}
	}
	j, ok := c.workOf[i]
	return ok && ev.Start[j]-ev.End(i) > ev.Dur[i]/10
}

// firstCalls finds ops whose first call costs FirstCallRatio times their
// median later call: handle creation, autotuning, lazy initialisation,
// DataLoader worker start.
//
// Only when the trace may start at the program's first step: a trace whose
// first ProfilerStep is not #0 comes after steps that already called every
// op once (torch numbers the profiler's steps from 0; a schedule's wait and
// warmup steps run the same ops), and a slow call there is an outlier (a
// garbage collection, a checkpoint), not a first call. The specific
// detectors (context, module load, allocator, compile) still apply.
func (c *checker) firstCalls() []Cost {
	if !c.t.SyntheticStep && len(c.t.Steps) > 0 && c.t.Steps[0].Num > 0 {
		return nil
	}
	ev := &c.t.Events
	calls := map[trace.StrID][]int{}
	step := map[int32]bool{}
	for _, s := range c.t.Steps {
		step[s.Event] = true
	}
	for i, k := range ev.Kind {
		if (k != trace.KindCPUOp && k != trace.KindUserAnnotation) || step[int32(i)] {
			continue
		}
		if p := ev.Parent[i]; p != trace.None && ev.Kind[p] == k && !step[p] {
			continue // only outermost ops: a slow first call shows in its caller too
		}
		calls[ev.Name[i]] = append(calls[ev.Name[i]], i)
	}
	minNs := int64(5 * c.o.MinStartupUs * 1e3)
	var out []Cost
	for _, is := range calls {
		if len(is) < 3 {
			continue
		}
		slices.SortFunc(is, func(a, b int) int { return cmp.Compare(ev.Start[a], ev.Start[b]) })
		first := is[0]
		var rest []int64
		for _, j := range is[1:] {
			rest = append(rest, ev.Dur[j])
		}
		med := median(rest)
		slow := func(ns int64) bool { return ns >= minNs && float64(ns) >= c.o.FirstCallRatio*float64(max(med, 1)) }
		if !slow(ev.Dur[first]) {
			continue // nor its own time, less: no scan of what it holds (a name's first call can hold most of the trace)
		}
		// time blocked on the device is the device's, not a one-time cost
		own := ev.Dur[first] - c.blockedIn(first)
		if slow(own) {
			x := Cost{Kind: "first-call", Name: c.t.Name(first), StartUs: c.rel(ev.Start[first]), Us: us(own - med),
				span: interval.Span{Start: ev.Start[first], End: ev.End(first)},
				Note: fmt.Sprintf("first call %s, median of %d later calls %s (handle creation, autotuning or lazy initialisation)", units.Duration(us(ev.Dur[first])), len(rest), units.Duration(us(med)))}
			if s := c.stepOf(ev.Start[first]); s >= 0 {
				x.Step = c.r.Steps[s].Step
			}
			out = append(out, x)
		}
	}
	return out
}

// blockedIn returns the time op i spent in blocking sync calls made
// inside it on its own thread.
func (c *checker) blockedIn(i int) int64 {
	ev := &c.t.Events
	tr := c.t.Tracks[ev.Track[i]].Events
	k, _ := slices.BinarySearchFunc(tr, ev.Start[i], func(e int32, ts int64) int { return cmp.Compare(ev.Start[e], ts) })
	var blocked int64
	for ; k < len(tr) && ev.Start[tr[k]] < ev.End(i); k++ {
		if j := tr[k]; ev.Kind[j].IsLaunch() && c.cl.Has(ev.Name[j], classify.Sync|classify.MemcpyBlocking|classify.MemcpyAsync) {
			blocked += ev.Dur[j]
		}
	}
	return blocked
}

// overhead sums the profiler's own events inside the steps.
func (c *checker) overhead() {
	ev := &c.t.Events
	id, ok := c.t.Lookup("overhead")
	if !ok {
		return
	}
	var o Overhead
	var steps int64
	for _, sp := range c.spans {
		steps += sp.Len()
	}
	var spans []interval.Span
	for i := range ev.Kind {
		if ev.Cat(i) == id && c.t.Name(i) != "Driver Compiler" && c.stepOf(ev.Start[i]) >= 0 {
			o.Events++
			spans = append(spans, interval.Span{Start: ev.Start[i], End: ev.End(i)})
		}
	}
	if o.Events == 0 || steps == 0 {
		return
	}
	var busy []interval.Span
	for i, k := range ev.Kind {
		if k.IsDeviceWork() {
			busy = append(busy, interval.Span{Start: ev.Start[i], End: ev.End(i)})
		}
	}
	set := interval.Of(spans)
	o.Us = us(set.Total())
	o.Pct = 100 * o.Us * 1e3 / float64(steps)
	o.IdlePct = 100 * float64(set.Total()-set.Intersect(interval.Of(busy)).Total()) / float64(steps)
	c.r.Overhead = &o
}

// outliers excludes steps much longer than the median of the others.
func (c *checker) outliers() {
	var durs []int64
	var idx []int
	for i, s := range c.r.Steps {
		if s.Excluded == "" {
			durs = append(durs, c.spans[i].Len())
			idx = append(idx, i)
		}
	}
	if len(durs) > 0 {
		c.r.MedianUs = us(median(durs))
	}
	if len(durs) < 3 {
		return
	}
	var loader []int64 // read only when a step is long: a pass over every event
	var waits []int    // long steps whose excess is mostly DataLoader wait
	var long []int     // the others, by position among durs
	sorted := slices.Sorted(slices.Values(durs))
	for k, i := range idx {
		m := medianWithout(sorted, durs[k])
		if float64(durs[k]) > c.o.OutlierRatio*float64(m) {
			if loader == nil {
				loader = c.loaderTime()
			}
			if 2*loader[i] >= durs[k]-m {
				waits = append(waits, i)
				continue
			}
			long = append(long, k)
		}
	}
	if everyOther(long, len(durs)) {
		// two kinds of step, taken in turn: both are the loop's work
		for _, k := range long {
			c.r.Alternating = append(c.r.Alternating, c.r.Steps[idx[k]].Step)
		}
		long = nil
	}
	for _, k := range long {
		c.r.Steps[idx[k]].Excluded = Outlier
	}
	// one such step is a one-off (an epoch's first batch waiting for its
	// workers to start), an outlier still; two or more are the loop's
	// pattern
	if len(waits) == 1 {
		c.r.Steps[waits[0]].Excluded = Outlier
	}
}

// everyOther reports whether the long steps, positions among n steps,
// are every other one of them: two or more, each two positions after the
// one before, a third of the steps or more. A loop that alternates two
// kinds of step (cleanrl's SAC updates its actor twice every second
// iteration, whose steps took 11 ms against 3.5 ms) left half its steps
// out, and with them most of its work; a busy spell slows steps in a
// row, and work every third step or less often is periodic (its steps
// left out, steps.periodic's).
func everyOther(long []int, n int) bool {
	if len(long) < 2 || 3*len(long) < n {
		return false
	}
	for j := 1; j < len(long); j++ {
		if long[j]-long[j-1] != 2 {
			return false
		}
	}
	return true
}

// loaderTime is each step's time in DataLoader __next__ (its overlap
// with the step's span). Four workers that could not keep up made every
// 4th step wait; left out as outliers, the wait vanished from the window
// (40% input-bound where the run waited 97% of its step time).
func (c *checker) loaderTime() []int64 {
	out := make([]int64, len(c.spans))
	// the steps by start; a step starts at most longest before an event
	// it overlaps (thousands of short steps: no scan of them all per call)
	order := make([]int, len(c.spans))
	var longest int64
	for j, sp := range c.spans {
		order[j], longest = j, max(longest, sp.Len())
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(c.spans[a].Start, c.spans[b].Start) })
	ev := &c.t.Events
	for i := range ev.Kind {
		if !c.cl.Has(ev.Name[i], classify.DataLoader) {
			continue
		}
		sp := interval.Span{Start: ev.Start[i], End: ev.End(i)}
		k, _ := slices.BinarySearchFunc(order, sp.End, func(j int, t int64) int { return cmp.Compare(c.spans[j].Start, t) })
		for k--; k >= 0 && c.spans[order[k]].Start+longest > sp.Start; k-- {
			st := c.spans[order[k]]
			if o := min(st.End, sp.End) - max(st.Start, sp.Start); o > 0 {
				out[order[k]] += o
			}
		}
	}
	return out
}

func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// medianWithout is the median of sorted (ascending) less one element
// equal to x, which it must hold: median of the other steps, read from one
// sorted copy (a sort per step was steps² log steps: 61% of analyze's time
// on a trace of 11,000 steps).
func medianWithout(sorted []int64, x int64) int64 {
	n := len(sorted) - 1 // what is left
	if n <= 0 {
		return 0
	}
	p, _ := slices.BinarySearch(sorted, x) // equal elements: removing any leaves the same values
	at := func(j int) int64 {
		if j >= p {
			j++
		}
		return sorted[j]
	}
	if n%2 == 0 {
		return (at(n/2-1) + at(n/2)) / 2
	}
	return at(n / 2)
}
