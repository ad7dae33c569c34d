package flame

import (
	"fmt"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Weight says what a trace flame graph measures.
type Weight int

const (
	// HostTime weights each host event (op, annotation, Python frame,
	// runtime call) by its self time on its thread: its duration minus
	// its children's.
	HostTime Weight = iota
	// DeviceTime weights each op's stack by the device time (kernels,
	// memcpys, memsets) it launched; the device event's name is the leaf
	// frame. Device work with no known launching op sits under
	// "(no host op)".
	DeviceTime
)

func (w Weight) String() string {
	if w == DeviceTime {
		return "device"
	}
	return "host"
}

// TraceOptions tune FromTrace.
type TraceOptions struct {
	Weight Weight
	// Threads puts each host thread under its own root frame
	// "thread TID (NAME)".
	Threads bool
	// KeepSteps keeps "ProfilerStep#N" frames apart; by default they are
	// merged as "ProfilerStep#*" so the steps add up.
	KeepSteps bool
}

// NoHostOp is the root frame of device work without a launching op.
const NoHostOp = "(no host op)"

// stackKind reports whether events of kind k are frames of op stacks.
func stackKind(k trace.Kind) bool {
	switch k {
	case trace.KindCPUOp, trace.KindUserAnnotation, trace.KindPythonFunction,
		trace.KindRuntime, trace.KindDriver, trace.KindOther:
		return true
	}
	return false
}

// traceStacks maps events to tree nodes.
type traceStacks struct {
	t       *trace.Trace
	tree    *Tree
	o       TraceOptions
	memo    []*Node
	names   map[trace.StrID]string
	threads map[trace.TrackID]*Node
}

// FrameParent is the nearest enclosing event that is a stack frame, or
// trace.None.
func FrameParent(t *trace.Trace, e int32) int32 {
	ev := &t.Events
	for p := ev.Parent[e]; p != trace.None; p = ev.Parent[p] {
		if stackKind(ev.Kind[p]) {
			return p
		}
	}
	return trace.None
}

func (s *traceStacks) name(e int32) string {
	id := s.t.Events.Name[e]
	if n, ok := s.names[id]; ok {
		return n
	}
	n := s.t.Str(id)
	if !s.o.KeepSteps && strings.HasPrefix(n, "ProfilerStep#") {
		n = "ProfilerStep#*"
	}
	s.names[id] = n
	return n
}

// root returns the node under which a top-level event e hangs: the
// thread's root frame when grouping by thread, then the Python frames of
// its "Call stack" argument (outermost first) when it has one.
func (s *traceStacks) root(e int32) *Node {
	n := s.tree.Root
	if s.o.Threads {
		tr := s.t.Events.Track[e]
		tn := s.threads[tr]
		if tn == nil {
			track := &s.t.Tracks[tr]
			label := fmt.Sprintf("thread %d", track.Tid)
			if track.TidLabel != "" {
				label = "thread " + track.TidLabel
			}
			if track.ThreadName != "" {
				label += " (" + track.ThreadName + ")"
			}
			tn = child(s.tree, n, label)
			s.threads[tr] = tn
		}
		n = tn
	}
	if v, ok := s.t.ArgStr(int(e), trace.KeyCallStack); ok && v != "" {
		frames := strings.Split(v, ";")
		for i := len(frames) - 1; i >= 0; i-- {
			if f := strings.TrimSpace(frames[i]); f != "" {
				n = child(s.tree, n, f)
			}
		}
	}
	return n
}

// node returns event e's node, creating it and its ancestors.
func (s *traceStacks) node(e int32) *Node {
	if n := s.memo[e]; n != nil {
		return n
	}
	var parent *Node
	if p := FrameParent(s.t, e); p != trace.None {
		parent = s.node(p)
	} else {
		parent = s.root(e)
	}
	n := child(s.tree, parent, s.name(e))
	s.memo[e] = n
	return n
}

// FromTrace builds the flame graph of t's op call stacks (see Weight).
// Stacks are the nesting of host events on each thread (ops, annotations,
// python_function frames, runtime calls), with the Python frames of a
// top-level op's "Call stack" argument above it when the trace has them.
// The unit is nanoseconds.
func FromTrace(t *trace.Trace, o TraceOptions) *Tree {
	ev := &t.Events
	s := &traceStacks{
		t: t, tree: New(UnitNanoseconds, 1), o: o,
		memo: make([]*Node, ev.Len()), names: map[trace.StrID]string{}, threads: map[trace.TrackID]*Node{},
	}
	switch o.Weight {
	case HostTime:
		for i, v := range hostSelf(t) {
			if v > 0 {
				s.node(int32(i)).Self += v
			}
		}
	case DeviceTime:
		for i, k := range ev.Kind {
			if !k.IsDeviceWork() || ev.Dur[i] <= 0 {
				continue
			}
			var n *Node
			if op := ev.Op(i); op != trace.None {
				n = s.node(op)
			} else {
				n = child(s.tree, s.tree.Root, NoHostOp)
			}
			child(s.tree, n, t.Name(i)).Self += ev.Dur[i]
		}
	}
	s.tree.fixTotals()
	return s.tree
}

// fixTotals sets every Total to Self plus the children's totals.
func (t *Tree) fixTotals() {
	var walk func(n *Node) int64
	walk = func(n *Node) int64 {
		n.Total = n.Self
		for _, c := range n.Children {
			n.Total += walk(c)
		}
		return n.Total
	}
	walk(t.Root)
}

// HostTotal is the sum of the durations of t's top-level host stack events
// (those with no enclosing frame), clamped the way FromTrace clamps
// negative self times: the total a HostTime tree of t has.
func HostTotal(t *trace.Trace) int64 {
	var sum int64
	for _, v := range hostSelf(t) {
		sum += max(v, 0)
	}
	return sum
}

// hostSelf is each host stack event's self time: its duration less its
// frame children's (negative where children overlap beyond it; callers
// clamp at zero). Device events and those without a duration have none.
func hostSelf(t *trace.Trace) []int64 {
	ev := &t.Events
	self := make([]int64, ev.Len())
	for i, k := range ev.Kind {
		if !stackKind(k) || ev.Dur[i] <= 0 || t.Tracks[ev.Track[i]].IsDevice() {
			continue
		}
		self[i] += ev.Dur[i]
		if p := FrameParent(t, int32(i)); p != trace.None {
			self[p] -= ev.Dur[i]
		}
	}
	return self
}

// DeviceTotal is the summed duration of t's device work events.
func DeviceTotal(t *trace.Trace) int64 {
	ev := &t.Events
	var sum int64
	for i, k := range ev.Kind {
		if k.IsDeviceWork() && ev.Dur[i] > 0 {
			sum += ev.Dur[i]
		}
	}
	return sum
}
