// Package syncs finds every blocking host-device synchronization: where
// the host stopped until the device caught up, how long, in which step,
// and which op (and Python frames) caused it.
//
// A blocking sync (DefinitionVersion) is a runtime/driver call classified
// classify.Sync (cudaStreamSynchronize, cudaDeviceSynchronize,
// cudaEventSynchronize, ...) or classify.MemcpyBlocking (cudaMemcpy,
// hipMemcpy, ...), plus cudaMemcpyAsync calls copying to pageable host
// memory (they block until the copy ends). cuda_sync device events
// (Stream/Event/Context Sync) are counted per kind as confirmation.
// cudaStreamWaitEvent does not block the host and is not counted. The
// blocked time is the call's duration. The cause is the operator that
// issued the call (the trace's op link: External id, else the innermost
// enclosing cpu_op), e.g. aten::item, aten::_local_scalar_dense,
// aten::nonzero, aten::to / aten::copy_ to CPU; its top-level op and its
// "Call stack" arg or enclosing python_function frames are reported.
//
// What a sync costs (StallUs): while the host waits, the device drains
// its queue; once the call returns the device idles until the host issues
// the next work. Without the sync the host would have issued that work
// while the device was still busy, so that part costs min(device busy
// during the call, device idle after it until the next device work). Time
// in the call while the device is idle too (a pageable copy staged by the
// CPU, a wait on another process) is lost outright and counts in full. A
// sync at the end of the work (a final cudaDeviceSynchronize) costs
// nothing.
//
// A capture that started mid-flight (window.Carry: device work launched
// before the trace, or the first launched kernels held hundreds of ms
// behind a stream wait on work the trace did not record) opens with host
// waits on that unrecorded work. Given the carry-over's end
// (Options.InheritedUntilNs), blocking calls that start before it are set
// apart (Result.Inherited): they are not syncs the program's loop makes,
// and count in no total, step or cause.
package syncs

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// DefinitionVersion names the definition in JSON output.
const DefinitionVersion = "syncs/2"

// Options tune the analysis.
type Options struct {
	// TopCauses is how many causes to list (default 10).
	TopCauses int
	// InheritedUntilNs: device work the trace did not record ran until
	// this time (window.Carry.UntilNs; 0: none). Blocking calls that start
	// before it waited on that work.
	InheritedUntilNs int64
}

// Inherited counts the blocking calls that waited on device work launched
// before the capture (a capture started mid-flight).
type Inherited struct {
	// Count is the number of such calls.
	Count int `json:"count"`
	// BlockedUs is their summed duration.
	BlockedUs float64 `json:"blocked_us"`
	// UntilUs is when the inherited device work ended, from the trace's start.
	UntilUs float64 `json:"until_us"`
}

// Cause is one op that synchronized, aggregated by (call, op, stack).
type Cause struct {
	// Call is the blocking runtime or driver call (cudaStreamSynchronize, cudaMemcpy, cudaMemcpyAsync to pageable memory, ...).
	Call string `json:"call"`
	// Copy is the direction of a blocking copy to or from pageable host
	// memory (HtoD, DtoH), "" for other calls.
	Copy string `json:"copy,omitempty"`
	// Op is the operator that issued the call (External id link, else the innermost enclosing cpu_op); "" when none.
	Op string `json:"op"`
	// TopOp is the outermost cpu_op enclosing Op (absent when Op is itself top-level).
	TopOp string `json:"top_op,omitempty"`
	// Stack is Op's Python frames, innermost first: its "Call stack" argument, else the enclosing python_function events (at most 8).
	Stack []string `json:"stack,omitempty"`
	// Count is the number of blocking calls.
	Count int `json:"count"`
	// BlockedUs is the calls' summed duration: the host time blocked.
	BlockedUs float64 `json:"blocked_us"`
	// StallUs is the device time the calls cost: the device idle during each call plus min(device busy during it, device idle after it until the next device work); 0 for a call no device work follows.
	StallUs float64 `json:"stall_us"`
}

// Step is one step's syncs.
type Step struct {
	// Step is the ProfilerStep number as text.
	Step string `json:"step"`
	// Count is the number of blocking calls in the step.
	Count int `json:"count"`
	// BlockedUs is their summed duration.
	BlockedUs float64 `json:"blocked_us"`
	// StallUs is the device stall they cost (as causes[].stall_us).
	StallUs float64 `json:"stall_us"`
	// StepUs is the step's host span (ProfilerStep#N's duration).
	StepUs float64 `json:"step_us"`
	// Pct is BlockedUs as a percentage of StepUs.
	Pct float64 `json:"blocked_pct"`
}

// Result is the sync analysis of one trace.
type Result struct {
	// Definition names the version of the definition (docs/metrics.md, "Synchronization").
	Definition string `json:"definition"`
	// Count is the number of blocking sync calls in the trace.
	Count int `json:"count"`
	// BlockedUs is their summed duration: the host time blocked.
	BlockedUs float64 `json:"blocked_us"`
	// StallUs is the device stall they cost (as causes[].stall_us), over the whole trace.
	StallUs float64 `json:"stall_us"`
	// ByCall counts the blocking calls by call name.
	ByCall map[string]int `json:"by_call"`
	// DeviceSyncs counts the cuda_sync device events by name (Stream Sync, Event Sync, Context Sync, Stream Wait Event).
	DeviceSyncs map[string]int `json:"device_sync_events"`
	// PerStep is each step's syncs, in time order (null without steps).
	PerStep []Step `json:"per_step"`
	// Causes are the ops that synchronized, by the device stall they cost, then by host time blocked, at most 10.
	Causes []Cause `json:"causes"`
	// Inherited: blocking calls at the start of a capture that began mid-flight, waiting on device work the trace did not record; counted in none of the above (absent when none).
	Inherited *Inherited `json:"inherited,omitempty"`
}

// Compute finds t's blocking syncs.
func Compute(t *trace.Trace, opts Options) *Result {
	top := opts.TopCauses
	if top <= 0 {
		top = 10
	}
	ev := &t.Events
	cl := classify.For(t)
	r := &Result{Definition: DefinitionVersion, ByCall: map[string]int{}, DeviceSyncs: map[string]int{}}
	per := make([]Step, len(t.Steps))
	type key struct {
		call, op, top trace.StrID
		stack, copy   string
	}
	agg := map[key]*Cause{}
	// Async copies from/to pageable memory block the host: mark their
	// launch calls (device memcpy -> Launch link).
	pageable := map[int32]string{} // launch call -> copy direction
	for i, k := range ev.Kind {
		if k != trace.KindMemcpy || ev.Launch(i) == trace.None {
			continue
		}
		if dir, h := classify.Memcpy(t.Name(i)); h == classify.HostPageable {
			pageable[ev.Launch(i)] = dir.String()
		}
	}
	busy := deviceBusy(t)
	for i, k := range ev.Kind {
		if k == trace.KindDeviceSync {
			r.DeviceSyncs[t.Name(i)]++
			continue
		}
		if !k.IsLaunch() {
			continue
		}
		f := cl.Flags(ev.Name[i])
		blocking := f&(classify.Sync|classify.MemcpyBlocking) != 0
		copyDir, isPageable := pageable[int32(i)]
		if !blocking && f&classify.MemcpyAsync != 0 {
			blocking = isPageable
		}
		if !blocking {
			continue
		}
		d := ev.Dur[i]
		if ev.Start[i] < opts.InheritedUntilNs {
			if r.Inherited == nil {
				t0, _ := t.Span()
				r.Inherited = &Inherited{UntilUs: float64(opts.InheritedUntilNs-t0) / 1000}
			}
			r.Inherited.Count++
			r.Inherited.BlockedUs += float64(d) / 1000
			continue
		}
		r.Count++
		stall := stallOf(busy, ev.Start[i], ev.End(i))
		r.BlockedUs += float64(d) / 1000
		r.StallUs += stall
		r.ByCall[t.Name(i)]++
		if s := ev.Step[i]; s != trace.None {
			per[s].Count++
			per[s].BlockedUs += float64(d) / 1000
			per[s].StallUs += stall
		}
		kk := key{call: ev.Name[i], copy: copyDir}
		if op := ev.Op(i); op != trace.None {
			kk.op = ev.Name[op]
			topOp := op
			for p := ev.Parent[op]; p != trace.None; p = ev.Parent[p] {
				if ev.Kind[p] == trace.KindCPUOp {
					topOp = p
				}
			}
			if topOp != op {
				kk.top = ev.Name[topOp]
			}
			kk.stack = stackOf(t, int(op))
		}
		c := agg[kk]
		if c == nil {
			c = &Cause{Call: t.Str(kk.call), Copy: kk.copy, Op: t.Str(kk.op), TopOp: t.Str(kk.top)}
			if kk.stack != "" {
				c.Stack = strings.Split(kk.stack, "\n")
			}
			agg[kk] = c
		}
		c.Count++
		c.BlockedUs += float64(d) / 1000
		c.StallUs += stall
	}
	if !t.SyntheticStep {
		for i, s := range t.Steps {
			per[i].Step = strconv.Itoa(s.Num)
			per[i].StepUs = float64(s.End-s.Start) / 1000
			if per[i].StepUs > 0 {
				per[i].Pct = 100 * per[i].BlockedUs / per[i].StepUs
			}
		}
		r.PerStep = per
	}
	for _, c := range agg {
		r.Causes = append(r.Causes, *c)
	}
	slices.SortFunc(r.Causes, func(a, b Cause) int {
		// Every field of the key breaks ties: the causes come from a map.
		return cmp.Or(cmp.Compare(b.StallUs, a.StallUs), cmp.Compare(b.BlockedUs, a.BlockedUs), cmp.Compare(a.Op, b.Op), cmp.Compare(a.Call, b.Call),
			cmp.Compare(a.Copy, b.Copy), cmp.Compare(a.TopOp, b.TopOp), slices.Compare(a.Stack, b.Stack))
	})
	if len(r.Causes) > top {
		r.Causes = r.Causes[:top]
	}
	return r
}

// deviceBusy is the union of device work on every device.
func deviceBusy(t *trace.Trace) interval.Set {
	ev := &t.Events
	spans := make([]interval.Span, 0, ev.Count(trace.Kind.IsDeviceWork))
	for i, k := range ev.Kind {
		if k.IsDeviceWork() {
			spans = append(spans, interval.Span{Start: ev.Start[i], End: ev.End(i)})
		}
	}
	return interval.Of(spans)
}

// stallOf is what a sync over [start, end) costs, in µs: the device idle
// during it, plus min(device busy during it, device idle from its end to
// the next device work). Nothing when no device work follows.
func stallOf(busy interval.Set, start, end int64) float64 {
	// first busy span ending after the call
	k, _ := slices.BinarySearchFunc(busy, end, func(s interval.Span, ts int64) int { return cmp.Compare(s.End, ts+1) })
	if k == len(busy) {
		return 0 // nothing follows: the end of the work
	}
	waited := busy.OverlapLen(interval.Span{Start: start, End: end})
	idleAfter := max(busy[k].Start-end, 0)
	return float64(end-start-waited+min(waited, idleAfter)) / 1000
}

// stackOf returns the op's "Call stack" arg, else the enclosing
// python_function frames on its thread (innermost first), one per line.
func stackOf(t *trace.Trace, op int) string {
	if s, ok := t.ArgStr(op, trace.KeyCallStack); ok && s != "" {
		return strings.ReplaceAll(s, ";", "\n")
	}
	ev := &t.Events
	var frames []string
	for p := ev.Parent[op]; p != trace.None && len(frames) < 8; p = ev.Parent[p] {
		if ev.Kind[p] == trace.KindPythonFunction {
			frames = append(frames, t.Name(int(p)))
		}
	}
	return strings.Join(frames, "\n")
}
