// Package trace is the in-memory model of one PyTorch profiler trace (one
// process, usually one rank). It is the bottom layer: readers fill it,
// analyses read it, renderers never touch it directly.
//
// Design note: traces reach tens of millions of events, so events are stored
// column-wise (one slice per field) and referred to by index. Strings (names,
// categories, arg keys, string arg values) are interned into one table and
// referred to by StrID. Arguments are deduplicated as whole sets: the ids that
// make each event unique (correlation, External id, Python id, ...) are lifted
// into sparse columns (only the events that carry one keep it: most events
// carry none of them), and what remains (grid, block, Input Dims, ...)
// repeats so often that a 4-byte ArgSetID per event is all most events
// need. Times are integer nanoseconds relative to the file's own origin;
// add Meta.BaseTimeNs for absolute time.
package trace

import "iter"

// StrID names a string in the trace's string table (Trace.Str). 0 is the
// empty string.
type StrID uint32

// TrackID indexes Trace.Tracks.
type TrackID uint32

// None marks a missing link in the int32 link columns.
const None int32 = -1

// Kind says what an event is, whatever name its trace's era gave the
// category (cpu_op vs Operator, kernel vs Kernel, ...).
type Kind uint8

const (
	KindOther          Kind = iota // unrecognised host-side category
	KindCPUOp                      // cpu_op, Operator, legacy autograd events
	KindUserAnnotation             // user_annotation: record_function ranges, ProfilerStep#N
	KindPythonFunction             // python_function (with_stack)
	KindRuntime                    // cuda_runtime, Runtime, hip*/mtia/xpu runtime
	KindDriver                     // cuda_driver (cuLaunchKernel, Triton)
	KindKernel                     // kernel, Kernel
	KindMemcpy                     // gpu_memcpy, Memcpy
	KindMemset                     // gpu_memset, Memset
	KindDeviceSync                 // cuda_sync: Stream/Event/Context Sync, Stream Wait Event
	KindGPUAnnotation              // gpu_user_annotation
	KindDeviceOther                // other device-side categories (mtia_ccp_events, cuda_profiler_range, ...)
	KindMemory                     // [memory] instant events (see Trace.Memory)
	KindInstant                    // other instant events
	KindCounter                    // "C" counter events
	KindTraceSpan                  // the "Trace" span Kineto writes around the capture
	numKinds
)

var kindNames = [numKinds]string{
	"other", "cpu_op", "user_annotation", "python_function", "runtime", "driver",
	"kernel", "memcpy", "memset", "device_sync", "gpu_annotation", "device_other",
	"memory", "instant", "counter", "trace_span",
}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "invalid"
}

// Kinds lists every kind, for tables of event counts.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// OnDevice reports whether events of this kind sit on a device timeline.
func (k Kind) OnDevice() bool {
	switch k {
	case KindKernel, KindMemcpy, KindMemset, KindDeviceSync, KindGPUAnnotation, KindDeviceOther:
		return true
	}
	return false
}

// IsDeviceWork reports whether the kind is device work that occupies the
// device (counted as "device time" of the op that launched it).
func (k Kind) IsDeviceWork() bool {
	return k == KindKernel || k == KindMemcpy || k == KindMemset || k == KindDeviceOther
}

// IsLaunch reports whether the kind is a host call that may be linked to
// device work by correlation.
func (k Kind) IsLaunch() bool { return k == KindRuntime || k == KindDriver }

// Events holds the event columns. Index i across every slice is event i.
type Events struct {
	Kind  []Kind
	Name  []StrID
	Track []TrackID
	Start []int64 // ns since the file's origin
	Dur   []int64 // ns; 0 for instants and counters
	Args  []ArgSetID
	cats  cats // categories (method Cat)
	// ArgVals is where the per-launch argument values of the events that
	// have some (kernels, copies) start in Trace.argVals (see ArgSets).
	ArgVals Sparse[uint32]

	// Ids lifted out of the args, kept for the events that carry them
	// (Python frames and memory events carry none; most events no
	// sequence number; only launches and device work a correlation).
	ExternalID  IDColumn // "External id" / "external id" (not 0): op <-> runtime call
	Correlation IDColumn // "correlation" (not 0): runtime call <-> device event
	SeqNum      IDColumn // "Sequence number" (not -1): forward op <-> backward op
	Py          PyColumn // "Python id" and "Python parent id" of python_function events

	// Links, filled by Link. None when there is no such event. Launch
	// and Op, which only launches and device events have, are kept for
	// those only (methods Launch and Op).
	Parent []int32 // innermost enclosing event on the same track
	Step   []int32 // index into Trace.Steps
	links  links
}

// clear empties the columns, keeping their storage.
func (e *Events) clear() {
	*e = Events{
		Kind: e.Kind[:0], Name: e.Name[:0], Track: e.Track[:0],
		Start: e.Start[:0], Dur: e.Dur[:0], Args: e.Args[:0], cats: e.cats, ArgVals: e.ArgVals,
		ExternalID: e.ExternalID, Correlation: e.Correlation, SeqNum: e.SeqNum, Py: e.Py,
	}
	e.cats.clear()
	e.ArgVals.clear()
	e.ExternalID.clear()
	e.Correlation.clear()
	e.SeqNum.clear()
	e.Py.clear()
}

// Len is the number of events.
func (e *Events) Len() int { return len(e.Kind) }

// Count is the number of events of the kinds in accepts: what analyses
// size their per-event lists by (grown by appends, the lists allocated
// four times their size).
func (e *Events) Count(in func(Kind) bool) int {
	var by [256]int
	for _, k := range e.Kind {
		by[k]++
	}
	n := 0
	for k, c := range by {
		if c > 0 && in(Kind(k)) {
			n += c
		}
	}
	return n
}

// End is the event's end time in ns.
func (e *Events) End(i int) int64 { return e.Start[i] + e.Dur[i] }

// Track is one timeline: a host thread (pid, tid) or a device stream.
type Track struct {
	Pid, Tid int64
	// PidLabel and TidLabel keep the original text when the trace used
	// strings ("CPU functions", "stream 7").
	PidLabel, TidLabel string
	ProcessName        string // from process_name metadata
	ThreadName         string // from thread_name metadata
	Device             int    // device index for device tracks, -1 for host tracks
	Stream             int64  // stream id for device tracks, -1 otherwise
	// Events on this track sorted by start, longest first on ties (set by Link).
	Events []int32
}

// IsDevice reports whether the track is a device stream.
func (t *Track) IsDevice() bool { return t.Device >= 0 }

// Flow is one end of a flow arrow ("s" start or "f" finish). (Fields
// largest first: 32 bytes, not 40 with padding.)
type Flow struct {
	ID    int64
	Ts    int64
	Cat   StrID
	Track TrackID
	// Event is the slice the flow end binds to, filled by Link (None when
	// no event on its track encloses it).
	Event int32
	Phase byte // 's' or 'f' (or 't' step)
}

// MemoryRecord is one [memory] instant event: an allocation (Bytes > 0) or
// a free (Bytes < 0) with the allocator totals after it. Its time is its
// event's start. (Fields largest first: 40 bytes, not 48 with padding.)
type MemoryRecord struct {
	Addr           int64
	Bytes          int64
	TotalAllocated int64
	TotalReserved  int64
	Event          int32 // the [memory] event
	DeviceType     int8  // 0 CPU, 1 CUDA, others as Kineto numbers them
	DeviceID       int8
}

// Step is one ProfilerStep#N, one iteration found from what repeats
// (Trace.StepMarks), or the whole trace when neither is there.
type Step struct {
	Num        int
	Event      int32 // the ProfilerStep annotation; None for an inferred step and the synthetic whole-trace step
	Start, End int64 // host-side span
	// DeviceEnd is the later of End and the end of the last device work
	// launched inside the step: the step's end moved to device time.
	DeviceEnd int64
}

// Trace is one parsed trace file.
type Trace struct {
	Path       string
	Rank       int    // -1 when unknown
	RankSource string // "distributedInfo", "file name" or ""
	Worker     string // worker name from the tensorboard_trace_handler file name
	Meta       Meta
	strs       strTable
	Events     Events
	ArgSets    ArgSets
	argVals    []uint64 // per-launch argument values (see ArgSets)
	Tracks     []Track
	Flows      []Flow
	// UnkeptFlows counts the flow events a reader read but did not keep
	// (kineto.Options.AnalysesOnly; NumFlows).
	UnkeptFlows int
	Memory      []MemoryRecord
	Steps       []Step
	// SyntheticStep is true when the trace has no ProfilerStep#N events and
	// Steps holds one step spanning the whole trace.
	SyntheticStep bool
	// StepMarks names what the steps were found from in a trace without
	// ProfilerStep#N marks: the repeated event that marks an iteration
	// (Optimizer.step#SGD.step, a DataLoader's __next__, the user's
	// record_function; see inferSteps). "" when the steps are ProfilerStep's
	// or the trace is one synthetic step.
	StepMarks string

	// Reading statistics.
	BytesRead  int64 // uncompressed bytes consumed
	Compressed bool
	Problems   Problems

	// argIndex finds argument sets by a hash of their content (not the
	// content itself: with per-launch kernel args most sets are unique,
	// and a key copy per set would double their memory).
	argIndex map[uint64]ArgSetID
}

// NumFlows is the number of flow events read, kept or not.
func (t *Trace) NumFlows() int { return len(t.Flows) + t.UnkeptFlows }

// Str returns the string for id.
func (t *Trace) Str(id StrID) string { return t.strs.str(id) }

// NumStrings is the number of strings: ids run from 0 to NumStrings()-1.
func (t *Trace) NumStrings() int { return len(t.strs.refs) }

// AllStrings yields every string with its id, in id order.
func (t *Trace) AllStrings() iter.Seq2[StrID, string] {
	return func(yield func(StrID, string) bool) {
		for id := range StrID(t.NumStrings()) {
			if !yield(id, t.Str(id)) {
				return
			}
		}
	}
}

// Name returns event i's name.
func (t *Trace) Name(i int) string { return t.Str(t.Events.Name[i]) }

// Lookup returns the id of s when s occurs in the trace.
func (t *Trace) Lookup(s string) (StrID, bool) {
	id, _, _, ok := t.strs.find(s)
	return id, ok
}

// Span returns the earliest start and latest end over the program's
// events: the profiler's own span and markers (the Trace span, "Record
// Window End" and other instants) and counters never lengthen it.
func (t *Trace) Span() (start, end int64) {
	ev := &t.Events
	first := true
	for i := range ev.Kind {
		if k := ev.Kind[i]; k == KindTraceSpan || k == KindCounter || k == KindInstant {
			continue
		}
		s, e := ev.Start[i], ev.Start[i]+ev.Dur[i]
		if first || s < start {
			start = s
		}
		if first || e > end {
			end = e
		}
		first = false
	}
	return start, end
}
