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
	agent   []Agent
}

// Agent says how a stack frame of bottleneck's own agent (a trace
// recorded by `bottleneck run --with-stack`) is shown.
type Agent uint8

const (
	// Program: not the agent's, or the agent's work inside the program's
	// (a hook in its optimizer step): shown.
	Program Agent = iota
	// Entry: the agent's frames that run the program (_bottleneck_boot.py's
	// module, run_main): left out, the program's frames start the stack,
	// as the Python profile's do.
	Entry
	// Own: the agent's own work at the top of a stack (its sampler thread,
	// its finish), with everything under it: left out.
	Own
)

// AgentFrames classifies each event as Program, Entry or Own (docs/export.md).
func AgentFrames(t *trace.Trace) []Agent {
	ev := &t.Events
	out := make([]Agent, ev.Len())
	known := make([]bool, ev.Len())
	var of func(e int32) Agent
	of = func(e int32) Agent {
		if known[e] {
			return out[e]
		}
		a := Program
		p := FrameParent(t, e)
		top := p == trace.None
		if !top {
			switch of(p) {
			case Own:
				a = Own
			case Entry:
				top = true
			}
		}
		if top && ev.Kind[e] == trace.KindPythonFunction {
			switch file, fn := pyFrame(t.Name(int(e))); {
			case !isAgentFile(file):
			case strings.HasSuffix(file, "_bottleneck_boot.py") || fn == "run_main":
				a = Entry
			default:
				a = Own
			}
		}
		out[e], known[e] = a, true
		return a
	}
	for i := range out {
		of(int32(i))
	}
	return out
}

// pyFrame splits a python_function name, "path/file.py(12): func".
func pyFrame(name string) (file, fn string) {
	head, fn, _ := strings.Cut(name, ": ")
	if i := strings.LastIndexByte(head, '('); i > 0 {
		head = head[:i]
	}
	return head, fn
}

// isAgentFile: the agent's modules, _bottleneck_*.py, copied into the run
// directory's .agent/ or the package's agent directory.
func isAgentFile(file string) bool {
	base := file[strings.LastIndexAny(file, `/\`)+1:]
	return strings.HasPrefix(base, "_bottleneck_") && strings.HasSuffix(base, ".py")
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
	if p := FrameParent(s.t, e); p != trace.None && s.agent[p] == Program {
		parent = s.node(p)
	} else {
		parent = s.root(e)
	}
	if s.agent[e] != Program { // an Entry: its frames hang from the root
		s.memo[e] = parent
		return parent
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
		agent: AgentFrames(t),
	}
	switch o.Weight {
	case HostTime:
		for i, v := range hostSelf(t, s.agent) {
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
			if op := ev.Op(i); op != trace.None && s.agent[op] != Own {
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
	for _, v := range hostSelf(t, AgentFrames(t)) {
		sum += max(v, 0)
	}
	return sum
}

// hostSelf is each host stack event's self time: its duration less its
// frame children's (negative where children overlap beyond it; callers
// clamp at zero). Device events, those without a duration and the agent's
// (AgentFrames: its entry and its own work) have none.
func hostSelf(t *trace.Trace, agent []Agent) []int64 {
	ev := &t.Events
	self := make([]int64, ev.Len())
	for i, k := range ev.Kind {
		if !stackKind(k) || ev.Dur[i] <= 0 || t.Tracks[ev.Track[i]].IsDevice() || agent[i] != Program {
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
