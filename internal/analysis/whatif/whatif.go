// Package whatif predicts what a change to the program would save by
// replaying the recorded steps' dependency graph with the change applied,
// as Daydream does (Zhu et al., USENIX ATC 2020): a share of the step is
// not a saving, because work hidden behind other work leaves the step no
// shorter when it gets faster.
//
// The model (definition "whatif/1"), built from the steps the window check
// uses (at most MaxSteps of them, in contiguous runs):
//
//   - The host is one timeline, the union of its threads (PyTorch's
//     threads take turns: the autograd thread runs while the main thread
//     waits in backward()). Each stretch of it has a category, the
//     highest of those running on any thread, in the step breakdown's
//     order: a host-side collective, a runtime call, a DataLoader fetch
//     (the enumerate(DataLoader)#...__next__ range), a CPU op (a cpu_op, a
//     user annotation or a Python frame: the breakdown's CPU Exec), else
//     Python (nothing recorded: the breakdown's Other).
//     Stretches inside Optimizer.step are marked.
//   - Device work (kernels, copies, memsets) launched from the steps, or
//     queued before them and started in them, per stream in order. A task
//     starts at the latest of: its launch call's start plus the trace's
//     shortest launch latency, the end of the task before it on its
//     stream, and the end of the task it waits for on another stream (a
//     Stream Wait Event; without those arguments, work that ended just
//     before it after a gap nothing else explains); plus its slack, the
//     rest of the gap the trace shows (so that the unchanged replay
//     reproduces the trace). Work running when the steps begin keeps its
//     recorded times.
//   - A blocking call (cudaStreamSynchronize, cudaDeviceSynchronize,
//     cudaEventSynchronize, a copy to pageable memory, ...) that ended when
//     the device work it waited for ended (its own copy: in the copy's
//     last 2%, as a pageable copy returns once its last chunk is staged)
//     is a wait: its blocked stretch is not host time; in the replay the
//     host resumes when that work ends.
//     What it waited for: its own copy (an asynchronous one only from or
//     to pageable memory), the work its Stream/Context/Event Sync names,
//     else every stream's last launched work. A call whose work had ended
//     before it began is kept as an edge that did not wait. So is a launch
//     held by a full launch queue, and (Fix.UnrecordedWaits) a stretch
//     with nothing recorded that ended when the busy device finished.
//
// Replaying walks the host timeline (stretches scaled by the change),
// releases each launch's work at the replayed time of its call, and waits
// where the host waited. The replayed step is the later of the host's end
// and the device's. A change is a Fix: scales for host categories and
// device task classes, waits dropped. The unchanged replay is the
// baseline; its difference from the measured steps is reported
// (BaselineErrorPct), and so is how much of the step the slack holds
// (GapPct): a model that does not reproduce the trace, or whose step is
// mostly gaps it cannot explain, is not trusted.
package whatif

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/critpath"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/kernels"
	"github.com/bottleneck-dev/bottleneck/internal/radix"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Definition names the version of the model above.
const Definition = "whatif/1"

// MaxSteps, eventBudget, taskBudget and maxTasks bound the replayed
// steps: a few steady-state steps predict as well as many, and the model
// stays small on GB traces (300 MB of the generator's shape, 5 steps of
// 16k kernels each: replayed whole, the model took peak RSS from 0.25x to
// 0.58x the file; one step, 0.31x). Steps are added until they hold
// eventBudget host events, runs until taskBudget device tasks are
// replayed; a run of more than maxTasks is not replayed.
const (
	MaxSteps    = 32
	taskBudget  = 1 << 15
	eventBudget = 1 << 15 // host events: steps are added until they hold this many
	maxTasks    = 1 << 19
)

// hostEvents counts the host events starting in [from, to).
func hostEvents(t *trace.Trace, from, to int64) int {
	n := 0
	for ti := range t.Tracks {
		tr := &t.Tracks[ti]
		if tr.IsDevice() {
			continue
		}
		at := func(ts int64) int {
			return sort.Search(len(tr.Events), func(j int) bool { return t.Events.Start[tr.Events[j]] >= ts })
		}
		n += at(to) - at(from)
	}
	return n
}

// Host categories, lowest priority first.
const (
	Python  = iota // nothing recorded on any thread: Python between ops (the breakdown's Other)
	Op             // a CPU op, annotation or Python frame (the breakdown's CPU Exec)
	Loader         // a DataLoader fetch
	Runtime        // a runtime or driver call (launches, allocations, non-waiting syncs)
	Comm           // a host-side collective (gloo, nccl:*, c10d ops: the breakdown's Communication)
	numCats
	blocked // a thread waiting in a blocking call (a wait, not host time)
)

// CategoryNames name the host categories in JSON and text.
var CategoryNames = [numCats]string{"python", "op", "dataloader", "runtime", "communication"}

// Fix is one change to replay: host stretches and device tasks scaled
// (1 unchanged, 0 gone), waits dropped.
type Fix struct {
	// ID names the change (a rule id of the diagnosis, or two joined by "+").
	ID string
	// What says the transformation in plain words.
	What string
	// Host scales each host category's stretches (index by Python, Op, ...).
	Host [numCats]float64
	// Optimizer, when above 0, scales the host stretches inside
	// Optimizer.step instead of Host.
	Optimizer float64
	// Compute, Comm and Copy scale computation kernels, communication
	// kernels, and copies and memsets; FP32Math scales fp32 matmul and
	// convolution kernels on CUDA cores (after Compute); Pageable scales
	// copies to or from pageable host memory (instead of Copy).
	Compute, Comm, Copy, FP32Math, Pageable float64
	// Syncs drops the waits of blocking syncs other than host-to-device
	// copies (the host runs ahead); CopyWaits drops the waits on
	// host-to-device copies (pinned memory, non_blocking=True).
	Syncs, CopyWaits bool
	// UnrecordedWaits takes the host's unrecorded stretches that ended
	// with device work for waits on it (nothing says they were Python),
	// instead of Python stretches scaled by Host[Python].
	UnrecordedWaits bool
	// noGaps drops the device gaps nothing explains (the model's check).
	noGaps bool
}

// Identity is the unchanged replay's fix.
func Identity(id, what string) Fix {
	f := Fix{ID: id, What: what, Compute: 1, Comm: 1, Copy: 1, FP32Math: 1, Pageable: 1}
	for c := range f.Host {
		f.Host[c] = 1
	}
	return f
}

// Join is the fix that applies a and b together (scales multiply).
func Join(a, b Fix) Fix {
	j := Fix{ID: a.ID + "+" + b.ID, What: a.What + "; and " + b.What,
		Compute: a.Compute * b.Compute, Comm: a.Comm * b.Comm, Copy: a.Copy * b.Copy, FP32Math: a.FP32Math * b.FP32Math, Pageable: a.Pageable * b.Pageable,
		Syncs: a.Syncs || b.Syncs, CopyWaits: a.CopyWaits || b.CopyWaits, UnrecordedWaits: a.UnrecordedWaits || b.UnrecordedWaits}
	for c := range j.Host {
		j.Host[c] = a.Host[c] * b.Host[c]
	}
	j.Optimizer = optScale(a) * optScale(b)
	if a.Optimizer == 0 && b.Optimizer == 0 {
		j.Optimizer = 0
	}
	return j
}

// optScale is the scale of host time inside Optimizer.step as one number
// (Optimizer, else the op category's).
func optScale(f Fix) float64 {
	if f.Optimizer > 0 {
		return f.Optimizer
	}
	return f.Host[Op]
}

// Prediction is one fix's replay.
type Prediction struct {
	// Fix names the change (a rule of the diagnosis, "a+b" for two together).
	Fix string `json:"fix"`
	// What says the transformation replayed.
	What string `json:"what"`
	// StepUs is the replayed mean step with the change.
	StepUs float64 `json:"step_us"`
	// SavingPct is what the change saves, in percent of the baseline replay.
	SavingPct float64 `json:"saving_pct"`
	// RemovedPct is the time the change took out of the work it touches (host stretches, device tasks, waits), in percent of the baseline replay: what it would save if all of it were on the critical path.
	RemovedPct float64 `json:"removed_pct"`
	// ReachPct is SavingPct / RemovedPct in percent: how much of the time taken out shortens the step (100: all of it was on the path; 0: hidden behind other work).
	ReachPct float64 `json:"reach_pct"`
}

// Result is the replay of the steps used and each fix's prediction.
type Result struct {
	// Definition names the model's version (package doc, docs/metrics.md "What-if replay").
	Definition string `json:"definition"`
	// Error says why no replay was made (the predictions then fall back to shares).
	Error string `json:"error,omitempty"`
	// Steps are the step numbers replayed.
	Steps []string `json:"steps"`
	// MeasuredUs is the mean step as recorded over those steps (host start of the first to the later of the last's host end and its device work's end, over the step count).
	MeasuredUs float64 `json:"measured_us"`
	// BaselineUs is the mean step the fixes are replayed against: the unchanged replay, less what Base takes out.
	BaselineUs float64 `json:"baseline_us"`
	// Base says what the baseline takes out of the recorded steps (the profiler's own per-op cost), absent when nothing.
	Base string `json:"base,omitempty"`
	// GapPct is how much shorter the unchanged replay gets when the device gaps the model cannot explain (a task's start later than its launch, the work before it on its stream and any stream it waits for allow) are closed, in percent: the part of the step the model holds fixed, whatever the fix.
	GapPct float64 `json:"gap_pct"`
	// BaselineErrorPct is how far the unchanged replay's mean step is from MeasuredUs, in percent: how well the model reproduces the trace.
	BaselineErrorPct float64 `json:"baseline_error_pct"`
	// HostUs is the host's time per step by category (python, op, dataloader, runtime, communication), blocked waits left out.
	HostUs map[string]float64 `json:"host_us_per_step"`
	// DeviceTasks is the number of kernels, copies and memsets replayed.
	DeviceTasks int `json:"device_tasks"`
	// Waits is the number of host waits on the device per step.
	Waits float64 `json:"waits_per_step"`
	// Predictions are each fix's replay, in the order asked.
	Predictions []Prediction `json:"predictions"`
}

// Find returns the prediction of fix id.
func (r *Result) Find(id string) (Prediction, bool) {
	if r == nil {
		return Prediction{}, false
	}
	for _, p := range r.Predictions {
		if p.Fix == id {
			return p, true
		}
	}
	return Prediction{}, false
}

// MaxGapPct: a replay whose step is held this much by device gaps it
// cannot explain predicts little from any fix (the gaps stay), so it is
// not trusted.
const MaxGapPct = 10

// Trusted reports whether the baseline reproduces the measured steps
// within maxErrPct and the model explains the device's gaps.
func (r *Result) Trusted(maxErrPct float64) bool {
	return r.Untrusted(maxErrPct) == ""
}

// Untrusted says why the replay is not trusted ("" when it is).
func (r *Result) Untrusted(maxErrPct float64) string {
	switch {
	case r == nil:
		return "no replay"
	case r.Error != "":
		return r.Error
	case r.BaselineUs <= 0:
		return "the steps replayed hold no time"
	case r.BaselineErrorPct > maxErrPct:
		return fmt.Sprintf("the unchanged replay is %.0f%% off the measured steps", r.BaselineErrorPct)
	case r.GapPct > MaxGapPct:
		return fmt.Sprintf("%.0f%% of the replayed step is device gaps nothing in the trace explains (work waiting on something not recorded: another process, another rank, an event the trace does not name)", r.GapPct)
	}
	return ""
}

// seg is one host stretch, or an item: a launch or a wait. A stretch
// starts where the one before it ends (the first at the run's start),
// blocked stretches included: its recorded start is the sum of the
// durations before it. (16 bytes: a model is replayed 30-odd times.)
type seg struct {
	dur  float64 // ns (stretches)
	ref  int32   // itemLaunch: the launch; itemWait: index in waits; itemUnrecorded: the task
	cat  uint8
	opt  bool // inside Optimizer.step
	item item
}

// item says what a seg is.
type item int8

const (
	itemStretch    item = iota // host time of its category
	itemLaunch                 // a launch call: its work is released
	itemWait                   // the host waits for device work
	itemUnrecorded             // a stretch with nothing recorded that ended with device work
	itemBlocked                // a stretch where the host waits (cat blocked): no host time, kept for the starts of those after it
)

type task struct {
	dur, slack float64
	obsStart   float64 // observed start, from the run's start
	fixedEnd   float64 // carry-over work: its recorded end (NaN for replayed tasks)
	launch     int32   // index of the launch that releases it (-1: carry-over)
	stream     int32   // index in run.streams
	prev, src  int32   // task before it on its stream, task it waits for (-1: none)
	comm, copy bool
	fp32       bool // fp32 matmul/conv on CUDA cores
	htod       bool // a host-to-device copy
	pageable   bool // a copy to or from pageable host memory
}

type wait struct {
	on        []int32 // tasks waited for
	copy      bool    // the call is a host-to-device copy
	blockedNs float64 // recorded time blocked
	queue     bool    // a launch that waited for room in a full launch queue
}

// run is one contiguous run of used steps.
type run struct {
	steps     int
	measured  float64 // ns
	segs      []seg
	tasks     []task
	launchObs []float64 // launch call's observed start, by launch
	waits     []wait
	lmin      float64
	streams   [][]int32 // each stream's tasks, in order
	streamDev []int     // each stream's device
}

// Model is the replayable graph of the steps used.
type Model struct {
	runs  []run
	steps []string
	host  [numCats]float64
	nWait int
	err   string // why there is nothing to replay
	// scratch is the replay's buffers, kept between replays (a model is
	// replayed 30-odd times, and allocating them each time was a tenth of
	// the bytes the analysis of a small trace allocates); a replay
	// running beside another takes fresh ones.
	scratch atomic.Pointer[replayScratch]
}

type replayScratch struct{ release, ends []float64 }

// Build builds the model of the steps used (used[i] reports whether
// t.Steps[i] is used; nil: all). A model that could not be built says why
// in its predictions' Result.
func Build(t *trace.Trace, used []bool) *Model {
	m := &Model{}
	// the runs: consecutive used steps, at most MaxSteps in all; host time
	// between two steps belongs to neither (work outside the profiled
	// steps: the breakdown leaves it out too)
	var groups [][]int
	var cur []int
	n, events := 0, 0
	for i := range t.Steps {
		if used != nil && (i >= len(used) || !used[i]) {
			if len(cur) > 0 {
				groups, cur = append(groups, cur), nil
			}
			continue
		}
		if n >= MaxSteps || n > 0 && events >= eventBudget {
			break
		}
		events += hostEvents(t, t.Steps[i].Start, t.Steps[i].End)
		if k := len(cur); k > 0 {
			prev := t.Steps[cur[k-1]]
			if gap := t.Steps[i].Start - prev.End; gap > max(100_000, (prev.End-prev.Start)/20) {
				groups, cur = append(groups, cur), nil
			}
		}
		cur = append(cur, i)
		n++
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	if len(groups) == 0 {
		m.err = "no step to replay"
		return m
	}
	// CUDA events are matched around the steps replayed only: from the
	// step before the first (a record there can name work the steps wait
	// for) to the end of the last
	first, last := groups[0][0], groups[len(groups)-1][len(groups[len(groups)-1])-1]
	g := newGlobal(t, t.Steps[max(first-1, 0)].Start, t.Steps[last].End)
	tasks, tooMany := 0, false
	for _, steps := range groups {
		if tasks >= taskBudget {
			break
		}
		r, ok := buildRun(t, g, steps)
		if !ok {
			tooMany = true
			break
		}
		m.runs = append(m.runs, r)
		tasks += len(r.tasks)
		for _, i := range steps {
			m.steps = append(m.steps, strconv.Itoa(t.Steps[i].Num))
		}
	}
	if len(m.runs) == 0 {
		m.err = fmt.Sprintf("a step holds more than %d device tasks, more than the replay keeps", maxTasks)
		if !tooMany {
			m.err = "no step to replay"
		}
		return m
	}
	for _, r := range m.runs {
		for _, s := range r.segs {
			switch s.item {
			case itemStretch, itemUnrecorded:
				m.host[s.cat] += s.dur
			case itemWait:
				m.nWait++
			}
		}
	}
	return m
}

// HostUs is the host time per step by category (index Python, Op, ...).
func (m *Model) HostUs(cat int) float64 {
	if m == nil || len(m.steps) == 0 {
		return 0
	}
	return m.host[cat] / float64(len(m.steps)) / 1e3
}

// global is what every run reads of the whole trace, found once.
type global struct {
	waits critpath.Waits
	syncs map[int32][]int32 // a blocking call's cuda_sync events
}

func newGlobal(t *trace.Trace, from, to int64) *global {
	g := &global{waits: critpath.EventWaits(t, from, to), syncs: map[int32][]int32{}}
	ev := &t.Events
	for i, k := range ev.Kind {
		if k == trace.KindDeviceSync {
			if l := ev.Launch(i); l != trace.None && ev.Start[l] >= from && ev.Start[l] <= to {
				g.syncs[l] = append(g.syncs[l], int32(i))
			}
		}
	}
	return g
}

// buildRun builds one run of consecutive steps; false when it holds more
// device work than the model keeps (maxTasks).
func buildRun(t *trace.Trace, g *global, steps []int) (run, bool) {
	ev := &t.Events
	ws, we := t.Steps[steps[0]].Start, t.Steps[steps[len(steps)-1]].End
	r := run{steps: len(steps)}

	// Device work launched from the run, and the work before it on its stream.
	type devRef struct {
		e     int32
		track trace.TrackID
	}
	var devs []devRef
	carry := map[trace.TrackID]int32{} // the last work on each stream before the run
	for ti := range t.Tracks {
		tr := &t.Tracks[ti]
		if !tr.IsDevice() {
			continue
		}
		first := sort.Search(len(tr.Events), func(j int) bool { return ev.Start[tr.Events[j]] >= ws })
		for j := first - 1; j >= 0 && j >= first-64; j-- {
			e := tr.Events[j]
			if isWork(ev.Kind[e]) && ev.End(int(e)) > ws {
				if c, ok := carry[trace.TrackID(ti)]; !ok || ev.End(int(e)) > ev.End(int(c)) {
					carry[trace.TrackID(ti)] = e
				}
			}
		}
		for _, e := range tr.Events[first:] {
			if !isWork(ev.Kind[e]) {
				continue
			}
			l := ev.Launch(int(e))
			if l == trace.None {
				continue
			}
			if ev.Start[l] >= we {
				break // a stream runs its launches in order: the rest came later
			}
			// launched from the run, or queued before it and started in it
			// (a device that lags the host: those tasks are replayed too,
			// released at the run's start)
			devs = append(devs, devRef{e, trace.TrackID(ti)})
		}
	}
	if len(devs) > maxTasks {
		return run{}, false
	}
	slices.SortStableFunc(devs, func(a, b devRef) int { return cmp.Compare(ev.Start[a.e], ev.Start[b.e]) })
	rel := func(ts int64) float64 { return float64(ts - ws) }

	// carry-over work first: fixed tasks at index 0..
	lo, hi := int32(math.MaxInt32), int32(-1) // the tasks' events
	for _, e := range carry {
		lo, hi = min(lo, e), max(hi, e)
	}
	for _, d := range devs {
		lo, hi = min(lo, d.e), max(hi, d.e)
	}
	taskOf := newEventIndex(lo, hi, len(carry)+len(devs))
	type devStream struct {
		dev    int
		stream int64
	}
	streamOf := map[devStream]int32{}
	trackStream := make([]int32, len(t.Tracks)) // streamOf by track, +1 (0: not looked up yet)
	streamIdx := func(tr trace.TrackID) int32 {
		if i := trackStream[tr]; i > 0 {
			return i - 1
		}
		k := devStream{t.Tracks[tr].Device, t.Tracks[tr].Stream}
		i, ok := streamOf[k]
		if !ok {
			i = int32(len(r.streams))
			streamOf[k] = i
			r.streams = append(r.streams, nil)
			r.streamDev = append(r.streamDev, k.dev)
		}
		trackStream[tr] = i + 1
		return i
	}
	carried := make([]trace.TrackID, 0, len(carry))
	for tr := range carry {
		carried = append(carried, tr)
	}
	slices.Sort(carried)
	r.tasks = make([]task, 0, len(carried)+len(devs)) // a task per carried and per launched work
	for _, tr := range carried {
		e := carry[tr]
		i := int32(len(r.tasks))
		si := streamIdx(tr)
		r.tasks = append(r.tasks, task{obsStart: rel(ev.Start[e]), fixedEnd: rel(ev.End(int(e))), launch: -1, prev: -1, src: -1, stream: si})
		r.streams[si] = append(r.streams[si], i)
		taskOf.set(e, i)
	}
	// launches: each launching call, in order of its start
	lo, hi = math.MaxInt32, -1
	for _, d := range devs {
		l := ev.Launch(int(d.e))
		lo, hi = min(lo, l), max(hi, l)
	}
	launchOf := newEventIndex(lo, hi, len(devs))
	calls := make([]int32, 0, len(devs)) // at most one a task
	for _, d := range devs {
		l := ev.Launch(int(d.e))
		if !launchOf.has(l) {
			launchOf.set(l, 0) // seen; its index is set below
			calls = append(calls, l)
		}
	}
	slices.SortFunc(calls, func(a, b int32) int { return cmp.Compare(ev.Start[a], ev.Start[b]) })
	for i, l := range calls {
		launchOf.set(l, int32(i))
	}
	r.launchObs = make([]float64, len(calls))
	for i, l := range calls {
		r.launchObs[i] = rel(ev.Start[l])
	}
	// the shortest launch latency: a low percentile of the gap from call
	// to start over work that found its stream idle
	var lats []float64
	prevEnd := map[trace.TrackID]int64{}
	for tr, e := range carry {
		prevEnd[tr] = ev.End(int(e))
	}
	for _, d := range devs {
		l := ev.Launch(int(d.e))
		if pe, ok := prevEnd[d.track]; !ok || pe <= ev.Start[l] {
			lats = append(lats, float64(ev.Start[d.e]-ev.Start[l]))
		}
		prevEnd[d.track] = max(prevEnd[d.track], ev.End(int(d.e)))
	}
	if len(lats) > 0 {
		slices.Sort(lats)
		r.lmin = max(0, lats[len(lats)/20])
	}
	// what each kernel name is, classified once
	type nameFlags struct{ comm, fp32, htod, pageable bool }
	flagsOf := map[trace.StrID]nameFlags{}
	for _, d := range devs {
		e := d.e
		name := ev.Name[e]
		flags, ok := flagsOf[name]
		if !ok {
			n := t.Str(name)
			_, host := classify.Memcpy(n)
			flags = nameFlags{comm: classify.IsCommKernel(n), fp32: kernels.Classify(n).FP32OnVectorCores(), htod: strings.Contains(n, "HtoD"), pageable: host == classify.HostPageable}
			flagsOf[name] = flags
		}
		i := int32(len(r.tasks))
		si := streamIdx(d.track)
		tk := task{dur: float64(ev.Dur[e]), obsStart: rel(ev.Start[e]), fixedEnd: math.NaN(), launch: launchOf.value(ev.Launch(int(e))), prev: -1, src: -1, stream: si,
			comm: flags.comm, fp32: flags.fp32, copy: ev.Kind[e] != trace.KindKernel, htod: flags.htod && ev.Kind[e] == trace.KindMemcpy,
			pageable: flags.pageable && ev.Kind[e] == trace.KindMemcpy}
		if on := r.streams[si]; len(on) > 0 {
			tk.prev = on[len(on)-1]
		}
		if s, ok := g.waits.Stream[e]; ok {
			if si, ok := taskOf.get(s); ok {
				tk.src = si
			}
		}
		// slack: the recorded start less the latest constraint
		bound := max(r.launchObs[tk.launch], 0) + r.lmin
		if tk.prev >= 0 {
			bound = max(bound, r.obsEnd(tk.prev))
		}
		if tk.src >= 0 {
			bound = max(bound, r.obsEnd(tk.src))
		}
		tk.slack = max(0, tk.obsStart-bound)
		if tk.slack > implicitWaitNs && tk.src < 0 {
			// started right after work on another stream ended, after a
			// gap nothing else explains: it waited for that work (an
			// event wait the trace does not record)
			if src := r.endedJustBefore(si, tk.obsStart); src >= 0 {
				tk.src = src
				tk.slack = max(0, tk.obsStart-max(bound, r.obsEnd(src)))
			}
		}
		r.tasks = append(r.tasks, tk)
		r.streams[si] = append(r.streams[si], i)
		taskOf.set(e, i)
	}
	byLaunch := r.launchTasks(len(calls))

	// Host intervals, and the blocking calls that waited.
	mainTrack := trace.TrackID(math.MaxUint32)
	if s := t.Steps[steps[0]]; s.Event != trace.None {
		mainTrack = ev.Track[s.Event]
	}
	// The sweep's points: each host interval's two ends, gathered here
	// (an op, a launch and a blocked wait a launch, most of them), then
	// Optimizer.step's spans, the launches and the waits.
	pts := make([]point, 0, 9*len(calls)+128)
	interval := func(start, end int64, th int32, cat uint8) {
		pts = append(pts, point{start, th, kindDelta, cat, 1}, point{end, th, kindDelta, cat, -1})
	}
	streamIdxOf := func(tr *trace.Track) (int32, bool) {
		i, ok := streamOf[devStream{tr.Device, tr.Stream}]
		return i, ok
	}
	// each name's median launch call (by name, then duration: a list of
	// durations per name, grown by appends, took seven times as much)
	medLaunch := map[trace.StrID]float64{}
	byName := slices.Clone(calls)
	slices.SortFunc(byName, func(a, b int32) int {
		return cmp.Or(cmp.Compare(ev.Name[a], ev.Name[b]), cmp.Compare(ev.Dur[a], ev.Dur[b]))
	})
	for i := 0; i < len(byName); {
		j := i + 1
		for j < len(byName) && ev.Name[byName[j]] == ev.Name[byName[i]] {
			j++
		}
		medLaunch[ev.Name[byName[i]]] = float64(ev.Dur[byName[i+(j-i)/2]])
		i = j
	}
	q := r.queue()
	threadOf := map[trace.TrackID]int32{}
	type waitAt struct {
		ts int64
		w  int32
	}
	var waitItems []waitAt
	var optSpans [][2]int64
	// ops that copied to the device: a blocking copy syncs its stream in
	// the same aten::copy_ (pageable, non_blocking=False); pinned and
	// non_blocking, it does not, so the copy's fix drops that wait too
	copyOps := map[int32]bool{}
	names := classify.For(t)
	for ti := range t.Tracks {
		tr := &t.Tracks[ti]
		if tr.IsDevice() {
			continue
		}
		from := sort.Search(len(tr.Events), func(j int) bool { return ev.Start[tr.Events[j]] >= ws })
		th := int32(-1) // the thread's index, given at its first interval
		// covered[cat]: the thread runs cat until then. The events come
		// by start, so an interval ending by then lies inside one already
		// kept and changes no category: ops nested in ops and Python
		// frames in frames are left out of the sweep (100 MB of one-line
		// Python frames: 9,000 intervals kept of 240,000).
		var covered [numCats]int64
		for c := range covered {
			covered[c] = math.MinInt64
		}
		for _, e := range tr.Events[from:] {
			if ev.Start[e] >= we {
				break
			}
			k := ev.Kind[e]
			end := min(ev.End(int(e)), we)
			var cat uint8
			switch k {
			case trace.KindCPUOp:
				cat = Op
				if names.Has(ev.Name[e], classify.CommOp) { // IsCommOp, looked up once per name
					cat = Comm
				}
			case trace.KindRuntime, trace.KindDriver:
				cat = Runtime
			case trace.KindUserAnnotation:
				name := t.Name(int(e))
				switch {
				case classify.IsDataLoader(name):
					cat = Loader
				case strings.HasPrefix(name, "ProfilerStep#"):
					continue
				default:
					if strings.HasPrefix(name, "Optimizer.step#") {
						optSpans = append(optSpans, [2]int64{ev.Start[e], end})
					}
					cat = Op
				}
			case trace.KindPythonFunction:
				cat = Op
			default:
				continue
			}
			if end <= ev.Start[e] {
				continue
			}
			if th < 0 {
				th = int32(len(threadOf))
				threadOf[trace.TrackID(ti)] = th
			}
			if end > covered[cat] {
				interval(ev.Start[e], end, th, cat)
				covered[cat] = end
			}
			if cat != Runtime {
				continue
			}
			l, isLaunch := launchOf.get(e)
			cp := false // the call copies to the device, or syncs for such a copy in the op that made it
			if isLaunch {
				for _, ti := range byLaunch.of(l) {
					cp = cp || r.tasks[ti].htod
				}
			}
			if p := ev.Parent[e]; p != trace.None {
				if cp {
					copyOps[p] = true
				}
				cp = cp || copyOps[p]
			}
			on := r.waitedFor(t, e, &launchOf, &byLaunch, &taskOf, g.waits, g.syncs[e], streamIdxOf, rel)
			if on == nil {
				on = r.fullQueue(t, e, &launchOf, medLaunch, q, rel)
			}
			if len(on) == 0 {
				continue
			}
			awaited := math.Inf(-1)
			for _, i := range on {
				awaited = max(awaited, r.obsEnd(i))
			}
			// a wait: the call ended when what it waited for ended, or, for
			// its own copy, in the copy's last 2%: a copy from pageable
			// memory returns once its last chunk is staged, before that
			// chunk's transfer ends (an H200: 9 µs before the end of a
			// 30 ms copy)
			aw := int64(awaited) + ws
			early := int64(2000)
			if isLaunch {
				for _, ti := range byLaunch.of(l) {
					early = max(early, int64(r.tasks[ti].dur/50))
				}
			}
			if ev.End(int(e)) < aw-early {
				continue // it returned before that work ended
			}
			// work that ended before the call began is an edge all the same:
			// the call waits for it wherever the replay makes the host faster
			bend := max(ev.Start[e], min(aw, end))
			if bend > ev.Start[e] {
				interval(ev.Start[e], bend, th, blocked)
			}
			r.waits = append(r.waits, wait{on: on, copy: cp, blockedNs: float64(bend - ev.Start[e]), queue: isLaunch && !critpath.IsBlocking(t.Name(int(e)))})
			waitItems = append(waitItems, waitAt{bend, int32(len(r.waits) - 1)})
		}
	}
	mainThread := int32(-1)
	if th, ok := threadOf[mainTrack]; ok {
		mainThread = th
	}

	// The sweep: one stretch between consecutive boundaries, its category
	// the highest running on any thread not blocked; the waits and the
	// launches at their times (waits first: a call returns before the
	// next one starts).
	for _, sp := range optSpans {
		pts = append(pts, point{sp[0], 0, kindOpt, 0, 1}, point{sp[1], 0, kindOpt, 0, -1})
	}
	for i, l := range calls {
		pts = append(pts, point{ts: ev.Start[l], ref: int32(i), kind: kindLaunch})
	}
	for _, w := range waitItems {
		pts = append(pts, point{ts: w.ts, ref: w.w, kind: kindWait})
	}
	counts := make([][blocked + 1]int32, len(threadOf))
	var active [numCats]int32 // threads not blocked running each category
	blockedThreads, mainBlocked := 0, false
	contribute := func(th int32, sign int32) {
		c := &counts[th]
		if c[blocked] > 0 {
			blockedThreads += int(sign)
			if th == mainThread {
				mainBlocked = sign > 0
			}
			return
		}
		for cat := Op; cat <= Comm; cat++ {
			if c[cat] > 0 {
				active[cat] += sign
			}
		}
	}
	category := func() uint8 {
		for cat := Comm; cat > Python; cat-- {
			if active[cat] > 0 {
				return uint8(cat)
			}
		}
		if mainBlocked || blockedThreads > 0 && mainThread < 0 {
			return blocked
		}
		return Python
	}
	now, optDepth := ws, 0
	// A stretch that goes on from the one before it, in the same category
	// with no item between, lengthens it: the boundaries of events nested
	// in one of their category end no stretch, so the segments do not
	// depend on how finely such events cut the host's time, and are a few
	// per launch rather than two per host event (100 MB of one-line Python
	// frames: 465,000 segments, 11 MB, held beside the sweep's points).
	// Real GPU traces have 5.5-6.7 a launch or wait, and at most one a
	// point plus the items: sized for that at once, the slice is not grown
	// five times over (a 15 MB GPU trace: 3.4 of its 23 MB allocated).
	// The blocked stretches are kept too, as itemBlocked: every stretch
	// starts where the one before it ends, so a segment's start is the sum
	// of the durations before it and need not be stored.
	items := len(calls) + len(waitItems)
	r.segs = make([]seg, 0, min(len(pts)+items+1, 8*items+16))
	lastEnd := int64(-1) // where the last segment, a stretch, ends (-1: the last is an item)
	stretch := func(to int64) {
		if to > now {
			c, opt := category(), optDepth > 0
			if k := len(r.segs) - 1; lastEnd == now && r.segs[k].cat == c && r.segs[k].opt == opt {
				r.segs[k].dur += float64(to - now)
			} else {
				it := itemStretch
				if c == blocked {
					it = itemBlocked
				}
				r.segs = append(r.segs, seg{dur: float64(to - now), cat: c, opt: opt, item: it})
			}
			lastEnd, now = to, to
		}
	}
	for i := range sweepOrder(pts) {
		p := &pts[i]
		stretch(min(p.ts, we))
		switch p.kind {
		case kindWait:
			r.segs, lastEnd = append(r.segs, seg{item: itemWait, ref: p.ref}), -1
		case kindLaunch:
			r.segs, lastEnd = append(r.segs, seg{item: itemLaunch, ref: p.ref}), -1
		case kindOpt:
			optDepth += int(p.delta)
		case kindDelta:
			contribute(p.ref, -1)
			counts[p.ref][p.cat] += int32(p.delta)
			contribute(p.ref, 1)
		}
	}
	stretch(we)

	r.unrecordedWaits()

	end := float64(we - ws)
	for i := range r.tasks {
		end = max(end, r.obsEnd(int32(i)))
	}
	r.measured = end
	return r, true
}

// A point is a boundary of the sweep over a run's host intervals.
type point struct {
	ts    int64
	ref   int32 // thread (deltas), wait or launch index
	kind  uint8 // kindWait..kindOpt: at the same time, in this order
	cat   uint8
	delta int8
}

const (
	kindWait = iota
	kindLaunch
	kindDelta
	kindOpt
	kindBits = 2
)

// sweepOrder yields the indices of pts by time, then kind, then index.
// Sorting the points themselves with a comparison function was half of
// Build on real traces; one integer per point, the time from the first
// point, the kind and the index packed, sorts several times faster, and
// the indices are read from those integers, not stored apart. A span too
// long to pack (over ~2^40 ns with a million points) falls back to a
// stable sort of the indices, which gives the same order.
func sweepOrder(pts []point) iter.Seq[int32] {
	if len(pts) == 0 {
		return func(func(int32) bool) {}
	}
	lo, hi := pts[0].ts, pts[0].ts
	for i := range pts {
		lo, hi = min(lo, pts[i].ts), max(hi, pts[i].ts)
	}
	idxBits := bits.Len(uint(len(pts)))
	span := uint64(hi) - uint64(lo) // hi >= lo: the difference fits in 64 bits unsigned
	if bits.Len64(span)+kindBits+idxBits > 64 {
		order := make([]int32, len(pts))
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(a, b int32) int {
			return cmp.Or(cmp.Compare(pts[a].ts, pts[b].ts), cmp.Compare(pts[a].kind, pts[b].kind))
		})
		return slices.Values(order)
	}
	keys := make([]uint64, len(pts))
	for i := range pts {
		keys[i] = (uint64(pts[i].ts)-uint64(lo))<<(kindBits+idxBits) | uint64(pts[i].kind)<<idxBits | uint64(i)
	}
	// the index bits need no pass: keys start in index order, and each
	// pass keeps the order of equal digits
	if len(keys) > radix.MaxKeys {
		slices.Sort(keys) // in place: the same order
	} else {
		radix.Sort(keys, idxBits, bits.Len64(span)+kindBits+idxBits)
	}
	mask := uint64(1)<<idxBits - 1
	return func(yield func(int32) bool) {
		for _, k := range keys {
			if !yield(int32(k & mask)) {
				return
			}
		}
	}
}

// Unrecorded waits: a stretch of at least minUnrecordedNs with nothing
// recorded on the host, over which the device was busy (at least
// busyCover of it) until work ended within unrecordedTail (or 5% of the
// stretch) of its end, is the host waiting for that work in a call the
// trace does not show, or Python that took as long: which one, only a
// Python profile tells (Fix.UnrecordedWaits).
const (
	minUnrecordedNs = 50e3
	busyCover       = 0.9
	unrecordedTail  = 50e3
)

// unrecordedWaits splits such stretches into the part that ended with the
// device work (itemUnrecorded) and the rest.
func (r *run) unrecordedWaits() {
	candidate := func(sg *seg) bool { return sg.item == itemStretch && sg.cat == Python && sg.dur >= minUnrecordedNs }
	if len(r.tasks) == 0 || !slices.ContainsFunc(r.segs, func(sg seg) bool { return candidate(&sg) }) {
		return
	}
	// the device's busy intervals, merged, with their running total
	type span struct{ start, end, before float64 }
	order := make([]int32, len(r.tasks))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(r.tasks[a].obsStart, r.tasks[b].obsStart) })
	busy := make([]span, 0, len(order)) // at most one a task: grown by appends, it allocated four times that
	total := 0.0
	for _, i := range order {
		st, en := r.tasks[i].obsStart, r.obsEnd(i)
		if n := len(busy); n > 0 && st <= busy[n-1].end {
			if en > busy[n-1].end {
				total += en - busy[n-1].end
				busy[n-1].end = en
			}
			continue
		}
		busy = append(busy, span{st, en, total})
		total += en - st
	}
	busyUntil := func(x float64) float64 { // device busy time before x
		j := sort.Search(len(busy), func(j int) bool { return busy[j].start > x })
		if j == 0 {
			return 0
		}
		b := busy[j-1]
		return b.before + min(x, b.end) - b.start
	}
	ends := make([]int32, len(r.tasks))
	copy(ends, order)
	slices.SortFunc(ends, func(a, b int32) int { return cmp.Compare(r.obsEnd(a), r.obsEnd(b)) })
	// the stretches that split, found first: the segments are then moved
	// in place, from the end, rather than copied whole (a copy of the
	// segments, a few MB on a small real trace, was a tenth of Build)
	type split struct {
		i      int
		task   int32
		at, te float64
	}
	var splits []split
	extra := 0
	end := 0.0 // where the segment ends, from the run's start
	for i := range r.segs {
		sg := &r.segs[i]
		at := end
		end += sg.dur // 0 for items
		if !candidate(sg) {
			continue
		}
		j := sort.Search(len(ends), func(j int) bool { return r.obsEnd(ends[j]) > end })
		if j == 0 {
			continue
		}
		task := ends[j-1]
		te := r.obsEnd(task)
		if te <= at || end-te > max(unrecordedTail, 0.05*sg.dur) || busyUntil(te)-busyUntil(at) < busyCover*(te-at) {
			continue
		}
		splits = append(splits, split{i, task, at, te})
		if end > te {
			extra++
		}
	}
	if len(splits) == 0 {
		return
	}
	n := len(r.segs)
	r.segs = slices.Grow(r.segs, extra)[:n+extra]
	w, next := n+extra-1, len(splits)-1 // w >= i throughout: nothing is overwritten before it is moved
	for i := n - 1; i >= 0; i-- {
		sg := r.segs[i]
		if next < 0 || splits[next].i != i {
			r.segs[w] = sg
			w--
			continue
		}
		sp := splits[next]
		next--
		if end := sp.at + sg.dur; end > sp.te {
			r.segs[w] = seg{dur: end - sp.te, cat: Python, opt: sg.opt}
			w--
		}
		r.segs[w] = seg{item: itemUnrecorded, dur: sp.te - sp.at, cat: Python, opt: sg.opt, ref: sp.task}
		w--
	}
}

func (r *run) obsEnd(i int32) float64 {
	tk := &r.tasks[i]
	if !math.IsNaN(tk.fixedEnd) {
		return tk.fixedEnd
	}
	return tk.obsStart + tk.dur
}

// launchTasks lists each launch's tasks, ascending, in one array: those
// of launch l are tasks[start[l]:start[l+1]] (a slice grown per launch
// was a tenth of Build's allocations, a slice header per launch 24
// bytes).
type launchTasks struct{ start, tasks []int32 }

func (r *run) launchTasks(launches int) launchTasks {
	x := launchTasks{start: make([]int32, launches+1)}
	for i := range r.tasks {
		if l := r.tasks[i].launch; l >= 0 {
			x.start[l]++
		}
	}
	for l := 1; l < launches; l++ {
		x.start[l] += x.start[l-1] // where l's tasks end
	}
	n := int32(0)
	if launches > 0 {
		n = x.start[launches-1]
	}
	x.start[launches], x.tasks = n, make([]int32, n)
	for i := len(r.tasks) - 1; i >= 0; i-- { // each launch's last first, at its end
		if l := r.tasks[i].launch; l >= 0 {
			x.start[l]--
			x.tasks[x.start[l]] = int32(i)
		}
	}
	return x
}

func (x *launchTasks) of(l int32) []int32 { return x.tasks[x.start[l]:x.start[l+1]] }

// waitedFor is the device work a blocking call waits for: its own copy
// (an asynchronous one only from or to pageable memory),
// the work its Event Sync, Stream Sync or Context Sync names, else, for a
// device or stream synchronize with no sync event recorded, every stream's
// last launched work. nil for a call that cannot block.
func (r *run) waitedFor(t *trace.Trace, e int32, launchOf *eventIndex, byLaunch *launchTasks, taskOf *eventIndex,
	waits critpath.Waits, syncs []int32, streamIdx func(*trace.Track) (int32, bool), rel func(int64) float64) []int32 {
	name := t.Name(int(e))
	if !critpath.IsBlocking(name) {
		return nil
	}
	ev := &t.Events
	on := []int32{}
	if l, ok := launchOf.get(e); ok {
		// an asynchronous copy waits only when host memory is pageable (the
		// driver stages it): device-to-device and pinned copies return at once
		async := strings.Contains(name, "Async")
		for _, ti := range byLaunch.of(l) {
			if !async || r.tasks[ti].pageable {
				on = append(on, ti)
			}
		}
	}
	if src, ok := waits.Host[e]; ok {
		if i, ok := taskOf.get(src); ok {
			on = append(on, i)
		}
	}
	named := false
	for _, sy := range syncs {
		switch t.Name(int(sy)) {
		case "Stream Sync":
			named = true
			if si, ok := streamIdx(&t.Tracks[ev.Track[sy]]); ok {
				if last := r.lastBefore(si, rel(ev.Start[e])); last >= 0 {
					on = append(on, last)
				}
			}
		case "Context Sync":
			named = true
			on = append(on, r.everyStreamBefore(rel(ev.Start[e]))...)
		}
	}
	if !named && len(on) == 0 && (strings.Contains(name, "DeviceSynchronize") || strings.Contains(name, "StreamSynchronize")) {
		on = r.everyStreamBefore(rel(ev.Start[e]))
	}
	return on
}

// Launch queue: a launch call blocks while its device's queue of launched
// work not yet started is full (about 1024 entries; HTA's launch
// statistics). A launch call that took over fullQueueFactor times its
// name's median, at least fullQueueNs, with at least fullQueueDepth
// launches pending when it began, waited for room: it returned when
// device work ended, the work ending last before it returned.
const (
	fullQueueDepth  = 256
	fullQueueFactor = 10
	fullQueueNs     = 50e3
)

// launchQueue holds the tasks' launch times, starts and ends, sorted.
type launchQueue struct {
	launches, starts []float64
	ends             []int32 // tasks by end
}

func (r *run) queue() launchQueue {
	n := len(r.tasks) // at most; grown by appends, the lists allocated four times that
	q := launchQueue{launches: make([]float64, 0, n), starts: make([]float64, 0, n), ends: make([]int32, 0, n)}
	for i := range r.tasks {
		tk := &r.tasks[i]
		if tk.launch < 0 {
			continue
		}
		q.launches = append(q.launches, r.launchObs[tk.launch])
		q.starts = append(q.starts, tk.obsStart)
		q.ends = append(q.ends, int32(i))
	}
	slices.Sort(q.launches)
	slices.Sort(q.starts)
	slices.SortFunc(q.ends, func(a, b int32) int { return cmp.Compare(r.obsEnd(a), r.obsEnd(b)) })
	return q
}

// fullQueue returns the task a launch call waited for when it blocked on a
// full launch queue, else nil.
func (r *run) fullQueue(t *trace.Trace, e int32, launchOf *eventIndex, med map[trace.StrID]float64, q launchQueue, rel func(int64) float64) []int32 {
	ev := &t.Events
	if !launchOf.has(e) {
		return nil
	}
	d := float64(ev.Dur[e])
	if d < fullQueueNs || d < fullQueueFactor*med[ev.Name[e]] {
		return nil
	}
	start, end := rel(ev.Start[e]), rel(ev.End(int(e)))
	le := func(s []float64, x float64) int { return sort.Search(len(s), func(i int) bool { return s[i] > x }) }
	if le(q.launches, start)-le(q.starts, start) < fullQueueDepth {
		return nil
	}
	j := sort.Search(len(q.ends), func(i int) bool { return r.obsEnd(q.ends[i]) > end+2000 })
	if j == 0 || r.obsEnd(q.ends[j-1]) <= start {
		return nil
	}
	return []int32{q.ends[j-1]}
}

// implicitWaitNs and implicitEndNs: a task that started over
// implicitWaitNs after everything known to hold it back, within
// implicitEndNs of work on another stream of its device ending, waited for
// that work (older traces record no Stream Wait Event arguments; NCCL's
// streams wait on the compute stream so).
const (
	implicitWaitNs = 5e3
	implicitEndNs  = 5e3
)

// endedJustBefore is the task on another stream of stream si's device
// that ended last at or before ts, within implicitEndNs; -1 when none.
func (r *run) endedJustBefore(si int32, ts float64) int32 {
	best, bestEnd := int32(-1), ts-implicitEndNs
	for o, l := range r.streams {
		if int32(o) == si || r.streamDev[o] != r.streamDev[si] || len(l) == 0 {
			continue
		}
		n := sort.Search(len(l), func(j int) bool { return r.obsEnd(l[j]) > ts })
		if n > 0 && r.obsEnd(l[n-1]) >= bestEnd {
			best, bestEnd = l[n-1], r.obsEnd(l[n-1])
		}
	}
	return best
}

// lastBefore is the last task on stream si launched before ts (work
// carried over counts as launched before the run), -1 when none.
func (r *run) lastBefore(si int32, ts float64) int32 {
	l := r.streams[si]
	n := sort.Search(len(l), func(j int) bool {
		tk := &r.tasks[l[j]]
		return tk.launch >= 0 && r.launchObs[tk.launch] >= ts
	})
	if n == 0 {
		return -1
	}
	return l[n-1]
}

// everyStreamBefore is each stream's last task launched before ts.
func (r *run) everyStreamBefore(ts float64) []int32 {
	var on []int32
	for si := range r.streams {
		if i := r.lastBefore(int32(si), ts); i >= 0 {
			on = append(on, i)
		}
	}
	return on
}

// Replay replays the model with fix applied and returns the mean step
// (ns) and the time the fix removed per step (ns).
func (m *Model) Replay(f Fix) (stepNs, removedNs float64) {
	sc := m.takeScratch()
	defer m.scratch.Store(sc)
	return m.replayWith(f, sc)
}

// takeScratch returns the kept replay buffers, or fresh ones while
// another replay holds them.
func (m *Model) takeScratch() *replayScratch {
	if sc := m.scratch.Swap(nil); sc != nil {
		return sc
	}
	return &replayScratch{}
}

func (m *Model) replayWith(f Fix, sc *replayScratch) (stepNs, removedNs float64) {
	var total, removed float64
	steps := 0
	for i := range m.runs {
		e, rm := m.runs[i].replay(f, sc)
		total += e
		removed += rm
		steps += m.runs[i].steps
	}
	return total / float64(steps), removed / float64(steps)
}

// replayAll replays each fix, on every core: the replays only read the
// model, and the diagnosis waits for all of them (a 15 MB GPU trace's 33
// took 5.7 ms of one core, most of the diagnosis).
func (m *Model) replayAll(fixes []Fix) (stepNs, removedNs []float64) {
	stepNs, removedNs = make([]float64, len(fixes)), make([]float64, len(fixes))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(fixes)) {
		wg.Go(func() {
			sc := m.takeScratch()
			defer m.scratch.Store(sc)
			for i := int(next.Add(1) - 1); i < len(fixes); i = int(next.Add(1) - 1) {
				stepNs[i], removedNs[i] = m.replayWith(fixes[i], sc)
			}
		})
	}
	wg.Wait()
	return stepNs, removedNs
}

func (r *run) replay(f Fix, sc *replayScratch) (end, removed float64) {
	host := func(s *seg) float64 {
		if s.opt && f.Optimizer > 0 && s.cat != Loader {
			return f.Optimizer
		}
		return f.Host[s.cat]
	}
	devScale := func(tk *task) float64 {
		x := f.Compute
		switch {
		case tk.comm:
			x = f.Comm
		case tk.pageable:
			x = f.Pageable
		case tk.copy:
			x = f.Copy
		}
		if tk.fp32 {
			x *= f.FP32Math
		}
		return x
	}
	sc.release = append(sc.release[:0], r.launchObs...)
	sc.ends = append(sc.ends[:0], make([]float64, len(r.tasks))...) // zeroed, as a new slice is
	release, ends := sc.release, sc.ends
	done := 0
	var devEnd float64
	compute := func(upTo int) {
		for ; done <= upTo && done < len(r.tasks); done++ {
			tk := &r.tasks[done]
			if tk.launch < 0 {
				ends[done] = tk.fixedEnd
				continue
			}
			start := release[tk.launch] + r.lmin
			if tk.prev >= 0 {
				start = max(start, ends[tk.prev])
			}
			if tk.src >= 0 {
				start = max(start, ends[tk.src])
			}
			d := tk.dur * devScale(tk)
			removed += tk.dur - d
			slack := tk.slack
			if f.noGaps {
				slack = 0
			}
			ends[done] = start + slack + d
			devEnd = max(devEnd, ends[done])
		}
	}
	now := 0.0
	for i := range r.segs {
		s := &r.segs[i]
		switch s.item {
		case itemUnrecorded:
			if f.UnrecordedWaits {
				compute(int(s.ref))
				now = max(now, ends[s.ref])
				continue
			}
			fallthrough // a Python stretch
		case itemStretch:
			d := s.dur * host(s)
			removed += s.dur - d
			now += d
		case itemLaunch:
			release[s.ref] = now
		case itemWait:
			w := &r.waits[s.ref]
			if w.copy && f.CopyWaits {
				removed += w.blockedNs // the host no longer waits; the copy's own time is what Copy and Pageable scale
				continue
			}
			if !w.copy && !w.queue && f.Syncs {
				removed += w.blockedNs
				continue
			}
			last := int32(-1)
			for _, ti := range w.on {
				last = max(last, ti)
			}
			compute(int(last))
			for _, ti := range w.on {
				now = max(now, ends[ti])
			}
		}
	}
	compute(len(r.tasks) - 1)
	return max(now, devEnd), removed
}

func isWork(k trace.Kind) bool {
	return k == trace.KindKernel || k == trace.KindMemcpy || k == trace.KindMemset
}

// Predict replays the model unchanged, with base applied (the baseline:
// the identity, or what the recording itself added taken out), and with
// base and each fix together.
func (m *Model) Predict(base Fix, fixes []Fix) *Result {
	res := &Result{Definition: Definition, Steps: []string{}, HostUs: map[string]float64{}, Predictions: []Prediction{}}
	if m == nil || m.err != "" {
		res.Error = "no step to replay"
		if m != nil {
			res.Error = m.err
		}
		return res
	}
	n := float64(len(m.steps))
	res.Steps = m.steps
	var measured float64
	for _, r := range m.runs {
		measured += r.measured
		res.DeviceTasks += len(r.tasks)
	}
	res.MeasuredUs = measured / n / 1e3
	for c := range m.host {
		res.HostUs[CategoryNames[c]] = m.HostUs(c)
	}
	res.Waits = float64(m.nWait) / n
	closed := Identity("", "")
	closed.noGaps = true
	all := []Fix{Identity("", ""), closed, base}
	for _, f := range fixes {
		all = append(all, Join(base, f))
	}
	steps, removed := m.replayAll(all)
	unchanged, b, baseRemoved := steps[0], steps[2], removed[2]
	if res.MeasuredUs > 0 {
		res.BaselineErrorPct = 100 * math.Abs(unchanged/1e3-res.MeasuredUs) / res.MeasuredUs
	}
	if unchanged > 0 {
		res.GapPct = 100 * (unchanged - steps[1]) / unchanged
	}
	res.BaselineUs = b / 1e3
	if base.ID != "" {
		res.Base = base.What
	}
	if b <= 0 {
		res.Error = "the steps replayed hold no time"
		return res
	}
	for i, f := range fixes {
		step, gone := steps[3+i], removed[3+i]-baseRemoved
		p := Prediction{Fix: f.ID, What: f.What, StepUs: step / 1e3, SavingPct: 100 * (b - step) / b, RemovedPct: 100 * gone / b}
		if gone > 0 {
			p.ReachPct = min(100, max(0, 100*(b-step)/gone))
		}
		res.Predictions = append(res.Predictions, p)
	}
	return res
}
