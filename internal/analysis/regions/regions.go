// Package regions reports time per user annotation (record_function
// ranges, Lightning's [pl][profile] actions, Optimizer.step#...) and per
// nn.Module, plus the user metadata the trace carries.
//
// Definitions (version "regions/3"):
//
//   - Wall time: the union of the steps' host spans (the whole trace when it
//     has no ProfilerStep). Annotation times are clipped to it.
//   - Regions: user_annotation events other than ProfilerStep#N, grouped by
//     name. Total: summed (clipped) durations; self: total minus the time of
//     the annotations directly nested in each instance on the same thread,
//     so nested regions do not double-count.
//   - Main thread: the thread of the ProfilerStep events (without steps, the
//     thread with the most annotated time). On it, the self times of all
//     regions plus the "(unannotated)" row add up to the wall time; regions
//     of other threads (DataLoader workers, autograd) overlap it and are
//     listed apart (main_thread false).
//   - Optimizer regions (Optimizer.step#...): closure when forward ops
//     (aten::linear, conv, embedding, norms, losses, SDPA) or backward
//     (autograd::engine::evaluate_function, *Backward0) ran inside on the
//     same thread; multi-tensor when _foreach_ or _fused_ ops did. With a
//     closure whose backward ran on that thread, update: the span of the
//     ops after the closure's last forward or backward op. Median: the
//     median instance (its update when told). An optimizer region that
//     outlasts the ProfilerStep it starts in is cut at the step's end
//     (new in regions/3: prof.step() ran inside it).
//   - Modules: python_function events "nn.Module: X" (with_stack), named by
//     their path of enclosing modules (Net_0.Linear_0). Host time: summed
//     durations; device time: kernels, memcpys and memsets whose launching
//     call ran inside an instance. Both are inclusive of child modules.
//   - Device regions: time on the device per gpu_user_annotation name (the
//     copy of a record_function range Kineto writes on each stream that ran
//     work inside it). Each kernel, memcpy or memset (and other device
//     work) goes to the annotation on its own track (pid, tid) whose
//     [start, end) overlaps its own [start, end); of several, the shortest
//     (the leaf) wins, and of equally short ones the later in the trace.
//     This is Holistic Trace Analysis's get_gpu_kernels_with_user_annotations
//     (breakdown_analysis.py, _associate_gpu_kernels_with_user_annotations),
//     over the whole trace: no step is dropped, and ProfilerStep#N
//     annotations on device tracks count like any other, as in HTA. Calls:
//     annotation instances (one per stream). Work under no annotation is the
//     "(unannotated)" row, so the rows add up to all device work; the table
//     is empty when the trace has no gpu annotations.
//   - Gradient syncs: in each step with DistributedDataParallel.forward
//     annotations and an optimizer step, the forwards whose backward
//     synced gradients: DDP's reducer ops (…ddp.reducer::…), else an
//     all-reduce, started between the forward's start and the next
//     forward's (or the step's end); against the optimizer steps.
//   - Metadata: top-level keys that are not profiler flags, versions or
//     known sections (add_metadata / add_metadata_json entries).
package regions

import (
	"bytes"
	"cmp"
	"encoding/json"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"maps"
	"math/bits"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Definition names the version of the definitions above.
const Definition = "regions/3"

// Unannotated names the row of main-thread time in no region (and of
// device work under no gpu annotation).
const Unannotated = "(unannotated)"

// Region is one annotation name.
type Region struct {
	// Name is the user annotation's name ("(unannotated)": main-thread wall time in no region).
	Name string `json:"name"`
	// MainThread: the instances ran on the main thread (that of the ProfilerStep events); the others are listed apart and overlap it.
	MainThread bool `json:"main_thread"`
	// Calls is the number of instances.
	Calls int `json:"calls"`
	// TotalUs is the instances' summed duration, clipped to the wall time.
	TotalUs float64 `json:"total_us"`
	// MeanUs is TotalUs over Calls.
	MeanUs float64 `json:"mean_us"`
	// SelfUs is TotalUs minus the time of the annotations nested directly in each instance on the same thread.
	SelfUs float64 `json:"self_us"`
	// SelfPct is SelfUs as a percentage of the wall time; on the main thread the column adds up to 100.
	SelfPct float64 `json:"self_pct"`
	// Closure: an optimizer region (Optimizer.step#...) in which the
	// model's forward or backward ran (an optimizer closure: LBFGS,
	// Lightning's automatic optimization), so the region is not the
	// optimizer's own time.
	Closure bool `json:"closure,omitempty"`
	// UpdateUs: of a Closure region whose backward ran on its thread (a CPU run), the summed span from the first op after the closure's last forward or backward op to the last op's end: the optimizer's own update (absent otherwise, also when one instance could not tell).
	UpdateUs float64 `json:"update_us,omitempty"`
	// MultiTensor: an optimizer region whose updates already run as foreach or fused ops.
	MultiTensor bool `json:"multi_tensor,omitempty"`
	// MedianUs: of an optimizer region, the median instance's time (its update's when UpdateUs is told): a start-up call or a step slowed by a busy machine does not move it.
	MedianUs float64 `json:"median_us,omitempty"`

	updateUnknown bool    // an instance with a closure whose update could not be told apart
	instances     []int64 // an optimizer region's instance times, ns (its updates' with a closure)
}

// Module is one nn.Module path.
type Module struct {
	// Path is the module's path of enclosing modules, e.g. "Net_0.Linear_0", from the "nn.Module: X" python_function events.
	Path string `json:"path"`
	// Depth is the number of enclosing modules (0 for a top-level module).
	Depth int `json:"depth"`
	// Calls is the number of instances.
	Calls int `json:"calls"`
	// HostUs is the instances' summed duration, child modules included.
	HostUs float64 `json:"host_us"`
	// DeviceUs is the device time (kernels, copies, memsets) launched inside an instance, child modules included.
	DeviceUs float64 `json:"device_us"`
}

// Meta is one user metadata entry.
type Meta struct {
	// Key is the trace's top-level key.
	Key string `json:"key"`
	// Value is the key's value as compact JSON text.
	Value string `json:"value"`
}

// Result is the regions analysis of one trace.
type Result struct {
	// Definition names the version of the definition (docs/metrics.md, "Regions and modules").
	Definition string `json:"definition"`
	// WallUs is the union of the steps' host spans (the whole trace without steps), the base of self_pct.
	WallUs float64 `json:"wall_us"`
	// Regions are the user annotations other than ProfilerStep#N by name: the main thread's by self time with "(unannotated)" last, then the other threads'.
	Regions []Region `json:"regions"`
	// Modules are the nn.Module paths in path order (empty without with_stack).
	Modules []Module `json:"modules"`
	// DeviceRegions: device time per gpu_user_annotation name, by device
	// time, then the "(unannotated)" row.
	DeviceRegions []DeviceRegion `json:"device_regions"`
	// Metadata is the trace's top-level keys that are not profiler flags, versions or known sections (add_metadata entries), in file order.
	Metadata []Meta `json:"metadata"`
	// GradSync counts DistributedDataParallel's gradient syncs against the optimizer's updates (absent: no step with a DDP forward and an optimizer step).
	GradSync *GradSync `json:"grad_sync,omitempty"`
}

// knownKeys are the top-level keys the profiler itself writes.
var knownKeys = map[string]bool{
	"schemaVersion": true, "deviceProperties": true, "distributedInfo": true, "baseTimeNanoseconds": true,
	"displayTimeUnit": true, "traceName": true, "trace_id": true, "traceEvents": true,
	"record_shapes": true, "with_stack": true, "profile_memory": true, "with_flops": true, "with_modules": true,
	"cupti_version": true, "cuda_runtime_version": true, "cuda_driver_version": true, "hip_runtime_version": true,
	"roctracer_version": true, "rocprofiler_version": true, "hip_driver_version": true, "experimental_config": true,
}

func isStep(name string) bool { return strings.HasPrefix(name, "ProfilerStep#") }

// Compute builds the region and module tables.
func Compute(t *trace.Trace) *Result {
	ev := &t.Events
	r := &Result{Definition: Definition, Regions: []Region{}, Modules: []Module{}, Metadata: []Meta{}}

	var spans []interval.Span
	for _, s := range t.Steps {
		spans = append(spans, interval.Span{Start: s.Start, End: s.End})
	}
	wall := interval.Of(spans)
	r.WallUs = float64(wall.Total()) / 1e3

	stepName := map[trace.StrID]bool{}
	isAnn := func(i int32) bool {
		if ev.Kind[i] != trace.KindUserAnnotation {
			return false
		}
		v, ok := stepName[ev.Name[i]]
		if !ok {
			v = isStep(t.Str(ev.Name[i]))
			stepName[ev.Name[i]] = v
		}
		return !v
	}
	// Main thread.
	main := trace.TrackID(1<<32 - 1)
	if !t.SyntheticStep && t.Steps[0].Event != trace.None {
		main = ev.Track[t.Steps[0].Event]
	}
	clip := func(i int) int64 { return wall.OverlapLen(interval.Span{Start: ev.Start[i], End: annEnd(t, int32(i))}) }
	total := make(map[int32]int64)
	child := make(map[int32]int64)
	perTrack := map[trace.TrackID]int64{}
	var anns []int32
	for i := range ev.Kind {
		if !isAnn(int32(i)) {
			continue
		}
		c := clip(i)
		anns = append(anns, int32(i))
		total[int32(i)] = c
		for p := ev.Parent[i]; p != trace.None; p = ev.Parent[p] {
			if isAnn(p) {
				child[p] += c
				break
			}
		}
		if ev.Parent[i] == trace.None || !hasAnnAncestor(ev, int32(i), isAnn) {
			perTrack[ev.Track[i]] += c
		}
	}
	if main == trace.TrackID(1<<32-1) {
		var best int64 = -1
		for tr, v := range perTrack {
			if v > best || v == best && tr < main {
				best, main = v, tr
			}
		}
	}
	type key struct {
		name trace.StrID
		main bool
	}
	rows := map[key]*Region{}
	var mainSelf int64
	for _, i := range anns {
		k := key{ev.Name[i], ev.Track[i] == main}
		row := rows[k]
		if row == nil {
			row = &Region{Name: t.Str(k.name), MainThread: k.main}
			rows[k] = row
		}
		self := max(total[i]-child[i], 0)
		if strings.HasPrefix(row.Name, "Optimizer.step#") {
			in := optimizerInside(t, i, wall)
			row.Closure = row.Closure || in.closure
			row.MultiTensor = row.MultiTensor || in.multiTensor
			row.UpdateUs += float64(in.updateNs) / 1e3
			row.updateUnknown = row.updateUnknown || in.closure && in.updateNs < 0
			inst := total[i]
			if in.closure {
				inst = max(in.updateNs, 0)
			}
			if total[i] > 0 { // a call outside the recorded steps is not an instance of them
				row.instances = append(row.instances, inst)
			}
		}
		row.Calls++
		row.TotalUs += float64(total[i]) / 1e3
		row.SelfUs += float64(self) / 1e3
		if k.main {
			mainSelf += self
		}
	}
	for _, row := range rows {
		if row.updateUnknown {
			row.UpdateUs = 0
		}
		if len(row.instances) > 0 && (!row.Closure || row.UpdateUs > 0) {
			slices.Sort(row.instances)
			n := len(row.instances)
			row.MedianUs = float64(row.instances[(n-1)/2]+row.instances[n/2]) / 2 / 1e3
		}
		row.MeanUs = row.TotalUs / float64(row.Calls)
		if r.WallUs > 0 {
			row.SelfPct = row.SelfUs * 100 / r.WallUs
		}
		r.Regions = append(r.Regions, *row)
	}
	slices.SortFunc(r.Regions, func(a, b Region) int {
		if a.MainThread != b.MainThread {
			if a.MainThread {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(b.SelfUs, a.SelfUs); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	un := max(wall.Total()-mainSelf, 0)
	unRow := Region{Name: Unannotated, MainThread: true, TotalUs: float64(un) / 1e3, SelfUs: float64(un) / 1e3}
	if r.WallUs > 0 {
		unRow.SelfPct = unRow.SelfUs * 100 / r.WallUs
	}
	n := 0
	for n < len(r.Regions) && r.Regions[n].MainThread {
		n++
	}
	r.Regions = slices.Insert(r.Regions, n, unRow)

	r.Modules = modules(t)
	r.DeviceRegions = deviceRegions(t, nil)
	r.GradSync = gradSync(t)
	for _, kv := range t.Meta.Other {
		if knownKeys[kv.Key] {
			continue
		}
		r.Metadata = append(r.Metadata, Meta{Key: kv.Key, Value: compact(kv.Value)})
	}
	return r
}

// annEnd is the end of annotation a, for an optimizer step cut at the end
// of the ProfilerStep it starts in (trace.EndInStep): prof.step() ran
// inside it, the step hook of `bottleneck run`, and what follows is the
// profiler's own work, up to writing the trace at the window's last step
// (9.8 ms of a 1.4 ms update here).
func annEnd(t *trace.Trace, a int32) int64 {
	if !strings.HasPrefix(t.Name(int(a)), "Optimizer.step#") {
		return t.Events.End(int(a))
	}
	return t.EndInStep(a)
}

// inside is what an optimizer region ran on its thread.
type inside struct {
	closure, multiTensor bool
	// updateNs: with a closure, the span of the ops after its last
	// forward or backward op (opsSpan), the update's own; -1 when the
	// backward ran on another
	// thread (the autograd engine's on a GPU), where the closure's end is
	// not seen; 0 without a closure.
	updateNs int64
}

// optimizerInside looks at the ops that optimizer region a ran on its
// thread: forward or backward ops mean a closure ran inside it (its
// update follows them: torch's optimizers call the closure first);
// foreach or fused ops mean the update is already multi-tensor. The
// update is clipped to wall, the recorded steps, as the region's total
// is: a call before the first step (Adam's first, which builds its state)
// must not count in one and not the other.
func optimizerInside(t *trace.Trace, a int32, wall interval.Set) inside {
	ev := &t.Events
	evs := t.Tracks[ev.Track[a]].Events
	end := annEnd(t, a)
	var in inside
	var closureEnd int64
	backward := false
	j, _ := slices.BinarySearchFunc(evs, ev.Start[a], func(x int32, ts int64) int { return cmp.Compare(ev.Start[x], ts) })
	for ; j < len(evs) && ev.Start[evs[j]] < end; j++ {
		e := evs[j]
		if ev.Kind[e] != trace.KindCPUOp {
			continue
		}
		n := t.Name(int(e))
		switch {
		case strings.Contains(n, "_foreach_") || strings.Contains(n, "_fused_"):
			in.multiTensor = true
		case classify.IsBackward(n):
			in.closure, backward = true, true
			closureEnd = max(closureEnd, ev.End(int(e)))
		case slices.Contains(forwardOps, n):
			in.closure = true
			closureEnd = max(closureEnd, ev.End(int(e)))
		}
	}
	if in.closure {
		in.updateNs = -1
		if backward {
			in.updateNs = wall.OverlapLen(opsSpan(t, evs, closureEnd, end))
		}
	}
	return in
}

// opsSpan is the time from the first op starting in [from, to) of evs
// (one thread's events in start order) to the last one's end: the update
// after a closure. Not up to the region's end: the framework's work
// before the update (Lightning's closure result) and the step hooks after
// it are not the optimizer's, and they took 0.5-2 ms beside an SGD update
// of 0.2 ms of ops.
func opsSpan(t *trace.Trace, evs []int32, from, to int64) interval.Span {
	ev := &t.Events
	first, last := int64(-1), int64(0)
	j, _ := slices.BinarySearchFunc(evs, from, func(x int32, ts int64) int { return cmp.Compare(ev.Start[x], ts) })
	for ; j < len(evs) && ev.Start[evs[j]] < to; j++ {
		if e := evs[j]; ev.Kind[e] == trace.KindCPUOp {
			if first < 0 {
				first = ev.Start[e]
			}
			last = max(last, min(ev.End(int(e)), to))
		}
	}
	if first < 0 {
		return interval.Span{}
	}
	return interval.Span{Start: first, End: max(last, first)}
}

// forwardOps are ops of a model's forward that an optimizer's own update
// never calls.
var forwardOps = []string{"aten::linear", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution",
	"aten::embedding", "aten::layer_norm", "aten::batch_norm", "aten::scaled_dot_product_attention", "aten::cross_entropy_loss", "aten::mse_loss"}

func hasAnnAncestor(ev *trace.Events, i int32, isAnn func(int32) bool) bool {
	for p := ev.Parent[i]; p != trace.None; p = ev.Parent[p] {
		if isAnn(p) {
			return true
		}
	}
	return false
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

const modPrefix = "nn.Module: "

// modules aggregates nn.Module python_function events by path.
func modules(t *trace.Trace) []Module {
	ev := &t.Events
	isMod := map[trace.StrID]bool{}
	mod := func(i int32) bool {
		if ev.Kind[i] != trace.KindPythonFunction {
			return false
		}
		v, ok := isMod[ev.Name[i]]
		if !ok {
			v = strings.HasPrefix(t.Str(ev.Name[i]), modPrefix)
			isMod[ev.Name[i]] = v
		}
		return v
	}
	paths := map[int32]string{}
	var pathOf func(i int32) string
	pathOf = func(i int32) string {
		if p, ok := paths[i]; ok {
			return p
		}
		name := strings.TrimPrefix(t.Str(ev.Name[i]), modPrefix)
		p := name
		for a := ev.Parent[i]; a != trace.None; a = ev.Parent[a] {
			if mod(a) {
				p = pathOf(a) + "." + name
				break
			}
		}
		paths[i] = p
		return p
	}
	rows := map[string]*Module{}
	row := func(p string) *Module {
		m := rows[p]
		if m == nil {
			m = &Module{Path: p, Depth: strings.Count(p, ".")}
			rows[p] = m
		}
		return m
	}
	any := false
	for i := range ev.Kind {
		if !mod(int32(i)) {
			continue
		}
		any = true
		m := row(pathOf(int32(i)))
		m.Calls++
		m.HostUs += float64(ev.Dur[i]) / 1e3
	}
	if !any {
		return []Module{}
	}
	for i, k := range ev.Kind {
		if !k.IsDeviceWork() {
			continue
		}
		l := ev.Launch(i)
		if l == trace.None {
			continue
		}
		for a := ev.Parent[l]; a != trace.None; a = ev.Parent[a] {
			if mod(a) {
				row(pathOf(a)).DeviceUs += float64(ev.Dur[i]) / 1e3
			}
		}
	}
	out := make([]Module, 0, len(rows))
	for _, m := range rows {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Module) int { return cmp.Compare(a.Path, b.Path) })
	return out
}

// DeviceRegion is one gpu_user_annotation name: the device work
// attributed to it by HTA's leaf rule.
type DeviceRegion struct {
	// Name is the gpu_user_annotation's name, "(unannotated)" for device work under none.
	Name string `json:"name"`
	// Calls is the number of annotation instances (one per stream the range ran on).
	Calls int `json:"calls"`
	// Kernels is the number of device-work events attributed to the name.
	Kernels int `json:"kernels"`
	// DeviceUs is their summed duration.
	DeviceUs float64 `json:"device_us"`
	// DevicePct is DeviceUs as a percentage of all device work time; the rows add up to 100.
	DevicePct float64 `json:"device_pct"`
}

// deviceRegions is the device-region table over the events for which keep
// is true (nil keeps all): rows by device time, then the Unannotated row
// (work under no annotation), present when the trace has gpu annotations,
// so that the rows add up to all device work.
func deviceRegions(t *trace.Trace, keep func(i int32) bool) []DeviceRegion {
	ev := &t.Events
	type acc struct {
		DeviceRegion
		ns int64
	}
	rows := map[trace.StrID]*acc{}
	un := &acc{DeviceRegion: DeviceRegion{Name: Unannotated}}
	var all int64
	attribute(t, keep, func(a int32) {
		row := rows[ev.Name[a]]
		if row == nil {
			row = &acc{DeviceRegion: DeviceRegion{Name: t.Str(ev.Name[a])}}
			rows[ev.Name[a]] = row
		}
		row.Calls++
	}, func(w, a int32) {
		row := un
		if a != trace.None {
			row = rows[ev.Name[a]]
		}
		row.Kernels++
		row.ns += ev.Dur[w]
		all += ev.Dur[w]
	})
	if len(rows) == 0 {
		return []DeviceRegion{}
	}
	out := make([]DeviceRegion, 0, len(rows)+1)
	for _, r := range append(slices.Collect(maps.Values(rows)), un) {
		r.DeviceUs = float64(r.ns) / 1e3
		if all > 0 {
			r.DevicePct = float64(r.ns) * 100 / float64(all)
		}
		out = append(out, r.DeviceRegion)
	}
	slices.SortFunc(out[:len(out)-1], func(a, b DeviceRegion) int {
		if c := cmp.Compare(b.DeviceUs, a.DeviceUs); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// attribute calls ann for every gpu_user_annotation and work(w, a) for
// every device-work event w, a being the annotation w is attributed to
// (trace.None for none), over the events for which keep is true (nil
// keeps all). The rule is HTA's get_gpu_kernels_with_user_annotations:
// per track (pid, tid), work [s, e) and annotation [a, b) overlap when
// a < e and s < b and neither is empty (pandas IntervalIndex.overlaps,
// both closed="left"; pandas ≥ 2 says an empty interval overlaps
// nothing, so zero-length work is unannotated and zero-length
// annotations take no work); of several, the shortest wins, and of
// equally short ones the later in the trace (HTA sorts the annotations by
// duration, descending, and the last assignment wins; its sort is not
// stable, so this is the stable reading). Per track the work is swept in
// start order beside a heap of the annotations open at its start, and the
// annotations that start inside it come from a sparse table:
// O((W + A) log A) for W work events and A annotations.
func attribute(t *trace.Trace, keep func(i int32) bool, ann func(a int32), work func(w, a int32)) {
	ev := &t.Events
	var open, ws []int32
	var heap annHeap
	var sp sparse
	// x wins over y.
	better := func(x, y int32) bool {
		if ev.Dur[x] != ev.Dur[y] {
			return ev.Dur[x] < ev.Dur[y]
		}
		return x > y
	}
	for ti := range t.Tracks {
		open, ws = open[:0], ws[:0]
		for _, i := range t.Tracks[ti].Events {
			k := ev.Kind[i]
			if k != trace.KindGPUAnnotation && !k.IsDeviceWork() || keep != nil && !keep(i) {
				continue
			}
			if k != trace.KindGPUAnnotation {
				ws = append(ws, i)
				continue
			}
			ann(i)
			if ev.Dur[i] > 0 {
				open = append(open, i)
			}
		}
		// Track.Events is in start order, and so are open and ws.
		heap = annHeap{better: better, h: heap.h[:0]}
		if len(open) > 0 && len(ws) > 0 {
			sp.build(open, better)
		}
		next := 0 // open[:next] have been pushed
		for _, w := range ws {
			s, e := ev.Start[w], ev.End(int(w))
			best := trace.None
			if e > s && len(open) > 0 {
				// Open at s: start <= s, end > s.
				for next < len(open) && ev.Start[open[next]] <= s {
					heap.push(open[next])
					next++
				}
				for len(heap.h) > 0 && ev.End(int(heap.h[0])) <= s {
					heap.pop()
				}
				if len(heap.h) > 0 {
					best = heap.h[0]
				}
				// Starting inside (s, e).
				n, _ := slices.BinarySearchFunc(open[next:], e, func(a int32, e int64) int { return cmp.Compare(ev.Start[a], e) })
				if n > 0 {
					if c := sp.query(next, next+n); best == trace.None || better(c, best) {
						best = c
					}
				}
			}
			work(w, best)
		}
	}
}

// annHeap is a binary heap of annotations, the one that wins on top.
type annHeap struct {
	better func(x, y int32) bool
	h      []int32
}

func (q *annHeap) push(a int32) {
	q.h = append(q.h, a)
	for i := len(q.h) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.better(q.h[i], q.h[p]) {
			break
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *annHeap) pop() {
	n := len(q.h) - 1
	q.h[0] = q.h[n]
	q.h = q.h[:n]
	for i := 0; ; {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && q.better(q.h[c+1], q.h[c]) {
			c++
		}
		if !q.better(q.h[c], q.h[i]) {
			break
		}
		q.h[i], q.h[c] = q.h[c], q.h[i]
		i = c
	}
}

// sparse answers "which annotation wins among anns[lo:hi]" in O(1) after
// an O(A log A) build.
type sparse struct {
	better func(x, y int32) bool
	lv     [][]int32
}

func (s *sparse) build(anns []int32, better func(x, y int32) bool) {
	s.better = better
	s.lv = s.lv[:0]
	if len(anns) == 0 {
		return
	}
	s.lv = append(s.lv, anns)
	for w := 1; 2*w <= len(anns); w *= 2 {
		prev := s.lv[len(s.lv)-1]
		cur := make([]int32, len(prev)-w)
		for i := range cur {
			cur[i] = s.pick(prev[i], prev[i+w])
		}
		s.lv = append(s.lv, cur)
	}
}

func (s *sparse) pick(x, y int32) int32 {
	if s.better(y, x) {
		return y
	}
	return x
}

// query returns the winner among anns[lo:hi], hi > lo.
func (s *sparse) query(lo, hi int) int32 {
	k := bits.Len(uint(hi-lo)) - 1
	return s.pick(s.lv[k][lo], s.lv[k][hi-(1<<k)])
}
