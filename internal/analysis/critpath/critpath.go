// Package critpath finds the critical path of one step (or one instance of
// a user annotation) on one rank, with the algorithm of Holistic Trace
// Analysis (hta/analyzers/critical_path_analysis.py), re-implemented here.
//
// Definition (version "critpath/2"):
//
// The window is the host span of the chosen annotation instance. Events
// taken: host events starting inside the window with a non-zero duration,
// device work (kernel, memcpy, memset) and Stream Sync events whose
// launching runtime call is one of those, Event Sync and Context Sync
// events (which sit on no stream) starting inside the window with a
// non-zero duration, and every Stream Wait Event. Every cpu_op, runtime
// and driver call and every kernel/memcpy/memset becomes two nodes, its
// start and its end. Edges:
//
//   - operator: along each host thread, a depth-first walk of the call
//     stack links each node to the next one (enter child, leave child, ...),
//     weighted by the time between them; leaving a blocking sync call
//     (cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventQuery,
//     cudaEventSynchronize, cudaMemcpy, cudaMemcpyAsync) weighs zero, so
//     time blocked waiting for the GPU is carried by the GPU side.
//   - dependency (weight 0): end of one top-level op to the start of the next.
//   - kernel: start to end of each kernel/memcpy/memset.
//   - launch delay: runtime call start to kernel start, when the stream was
//     empty at launch (launch-queue length 1 after the launch, 0 after the
//     kernel starts, over the whole trace; on equal times a launch counts
//     before a kernel start), the previous kernel on the stream ended before
//     the launch and so did the work it waits for (Stream Wait Event);
//     otherwise kernel-kernel delay: end of the previous kernel on the
//     stream to the kernel start, unless the work it waits for ended after
//     that previous kernel.
//   - sync (weight 0): the last kernel on the stream (Stream Sync) or on
//     every stream (Context Sync) to the end of the runtime call that
//     waited for it. CUDA events (HTA's _get_cuda_event_record_df and
//     _get_cuda_stream_wait_event_df): a cuda_sync event names the
//     cudaEventRecord it waits for (wait_on_cuda_event_record_corr_id) and
//     the stream it was recorded on (wait_on_stream); the event stands for
//     the work of the launch issued last, from any thread, onto that stream
//     and device before the record. Event Sync (cudaEventSynchronize,
//     cudaEventQuery): an edge from the end of that work to the end of the
//     waiting call. Stream Wait Event (cudaStreamWaitEvent): an edge from
//     the end of that work to the start of the work of the launch issued
//     next, from the same thread, onto the waiting stream.
//
// Negative weights (ns rounding) count as zero. The critical path is the
// longest path of this DAG, with networkx's dag_longest_path tie-breaking.
// Each path edge is attributed to an event as HTA does and classified as
// cpu, gpu_compute, gpu_communication, kernel_launch_overhead or
// kernel_kernel_overhead; sync edges carry no time.
package critpath

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Definition names the version of the definition above.
const Definition = "critpath/2"

// Options choose the window.
type Options struct {
	// Annotation selects host events whose name contains it; "" with a
	// trace that has steps means "ProfilerStep", without steps the whole
	// trace.
	Annotation string
	// Instance is the 0-based instance among the matching events, by start.
	Instance int
}

// Share is one bound-by category's time on the path.
type Share struct {
	// Category is the bound-by category: cpu, gpu_compute, gpu_communication, kernel_launch_overhead or kernel_kernel_overhead.
	Category string `json:"category"`
	// Us is the time of the path's edges in this category.
	Us float64 `json:"us"`
	// Pct is Us as a percentage of the path's length.
	Pct float64 `json:"pct"`
}

// Item is one event name's time on the path.
type Item struct {
	// Name is the event name the path's edges are attributed to.
	Name string `json:"name"`
	// Kind is the event's kind: cpu_op, runtime, driver, kernel, memcpy, memset, user_annotation, python_function.
	Kind string `json:"kind"`
	// Category is the bound-by category of these edges (as breakdown[].category).
	Category string `json:"category"`
	// Edges is the number of path edges with non-zero time attributed to this name and category.
	Edges int `json:"edges"`
	// Us is the time of those edges.
	Us float64 `json:"us"`
	// Pct is Us as a percentage of the path's length.
	Pct float64 `json:"pct"`
}

// Result is the critical path of one window.
type Result struct {
	// Definition names the version of the definition (docs/metrics.md, "Critical path").
	Definition string `json:"definition"`
	// Annotation is the text the window's host event names contain ("ProfilerStep"; "" for the whole trace of a trace without steps).
	Annotation string `json:"annotation"`
	// Instance is the 0-based instance, by start, of the matching host events that is the window (the first step the window check uses).
	Instance int `json:"instance"`
	// Error is set when no window or no path could be found.
	Error string `json:"error,omitempty"`
	// WindowUs is the window's length: the host span of the chosen instance.
	WindowUs float64 `json:"window_us"`
	// GraphNodes is the number of nodes (event starts and ends) with an edge in the dependency graph.
	GraphNodes int `json:"graph_nodes"`
	// GraphEdges is the number of edges in the dependency graph.
	GraphEdges int `json:"graph_edges"`
	// PathNodes is the number of nodes on the critical path.
	PathNodes int `json:"path_nodes"`
	// PathEdges is the number of edges on the critical path.
	PathEdges int `json:"path_edges"`
	// LengthUs is the critical path's length, the sum of its edges' weights; it can exceed the window (the path ends when the last kernel launched from the window ends).
	LengthUs float64 `json:"length_us"`
	// BoundBy is the category with the most time on the path.
	BoundBy string `json:"bound_by"`
	// Breakdown is the path's time in each of the five categories, in a fixed order.
	Breakdown []Share `json:"breakdown"`
	// SyncEdges counts sync dependencies on the path (HTA's
	// SYNC_DEPENDENCY edges): the host waited for the device there
	// (Stream/Context/Event Sync) or device work waited for work on
	// another stream (Stream Wait Event).
	SyncEdges int `json:"sync_edges"`
	// GPUWaits counts the sync edges on the path that end at device work (Stream Wait Event).
	GPUWaits int `json:"gpu_waits"`
	// Top is the time on the path by event name and category, largest first, at most 15.
	Top []Item `json:"top"`
	// NegativeWeights counts graph edges whose end came before their start (nanosecond rounding), counted as zero.
	NegativeWeights int `json:"negative_weights"`
}

// Edge types.
const (
	edgeOp = iota
	edgeDep
	edgeLaunch
	edgeKK
	edgeSync
)

var blocking = map[string]bool{
	"cudaDeviceSynchronize": true, "cudaStreamSynchronize": true, "cudaEventQuery": true,
	"cudaEventSynchronize": true, "cudaMemcpy": true, "cudaMemcpyAsync": true,
	"hipDeviceSynchronize": true, "hipStreamSynchronize": true, "hipEventQuery": true,
	"hipEventSynchronize": true, "hipMemcpy": true, "hipMemcpyAsync": true,
}

var launchNames = map[string]bool{
	"cudaLaunchKernel": true, "cudaLaunchKernelExC": true, "cuLaunchKernel": true, "cuLaunchKernelEx": true,
	"cudaMemcpyAsync": true, "cudaMemsetAsync": true, "cudaLaunchCooperativeKernel": true,
	"hipLaunchKernel": true, "hipExtLaunchKernel": true, "hipModuleLaunchKernel": true,
	"hipMemcpyAsync": true, "hipMemsetAsync": true, "hipExtModuleLaunchKernel": true,
}

// node is an event's start or end: the event and a start bit in 4 bytes,
// its time read from the event (stored, it made the node 16 bytes, the
// graph's largest column; a struct of event and bool took 8).
type node uint32

func startNode(e int32) node { return node(e)<<1 | 1 }
func endNode(e int32) node   { return node(e) << 1 }

func (n node) ev() int32   { return int32(n >> 1) }
func (n node) start() bool { return n&1 == 1 }

// edge is 16 bytes: its weight is the time between its nodes, not
// stored (24 bytes an edge were the graph's largest column).
type edge struct {
	u, v int32
	attr int32 // attributed event, None when none
	typ  uint8
	zero bool // weighs zero whatever its nodes' times
}

// weight is e's time in ns: dependency and sync edges, and those added as
// weighing zero, carry none; negative times (ns rounding) count as zero.
func (g *graph) weight(e *edge) int64 {
	if e.typ == edgeDep || e.typ == edgeSync || e.zero {
		return 0
	}
	return max(g.ts(e.v)-g.ts(e.u), 0)
}

// ts is node n's time in ns.
func (g *graph) ts(n int32) int64 { return g.nodeTime(g.nodes[n]) }

func (g *graph) nodeTime(nd node) int64 {
	if nd.start() {
		return g.events.Start[nd.ev()]
	}
	return g.events.End(int(nd.ev()))
}

type graph struct {
	events *trace.Events // the nodes' times
	nodes  []node
	edges  []edge
	seen   []bool // node added to the graph (has an edge)
	order  []int32
	negW   int
	// index holds the start and end nodes of events first to first+
	// len(index)-1, {None, None} for events that are not nodes: at most
	// 8 bytes an event of the trace (a window's node events lie close
	// together in the file, but its kernels may lie far from its ops),
	// and a lookup by position took a third of the time of a binary
	// search (the search and its sort were a third of the analysis).
	index []nodePair
	first int32
	path  []int32
}

type nodePair struct{ start, end int32 }

func (g *graph) find(e int32) (nodePair, bool) {
	if i := e - g.first; i >= 0 && int(i) < len(g.index) && g.index[i].start != trace.None {
		return g.index[i], true
	}
	return nodePair{}, false
}

// startOf and endOf return event e's start and end nodes, if it has them.
func (g *graph) startOf(e int32) (int32, bool) {
	p, ok := g.find(e)
	return p.start, ok
}

func (g *graph) endOf(e int32) (int32, bool) {
	p, ok := g.find(e)
	return p.end, ok
}

func (g *graph) touch(n int32) {
	if !g.seen[n] {
		g.seen[n] = true
		g.order = append(g.order, n)
	}
}

func (g *graph) add(u, v int32, typ uint8, zero bool, attr int32) int32 {
	if typ != edgeDep && typ != edgeSync && !zero && g.ts(v) < g.ts(u) {
		g.negW++
	}
	g.touch(u)
	g.touch(v)
	i := int32(len(g.edges))
	g.edges = append(g.edges, edge{u: u, v: v, attr: attr, typ: typ, zero: zero})
	return i
}

// merge makes an edge added again between the same nodes update the
// first one in place, as networkx does: the first's position with the
// last's values. Done once, after the edges are all added, by sorting
// rather than with a map of pairs (a third of the graph's memory): a
// counting sort by u, then each node's few edges by v, both stable.
func (g *graph) merge() {
	next := make([]int32, len(g.nodes)+1) // counts, then where each node's edges go
	for _, e := range g.edges {
		next[e.u+1]++
	}
	for u := range g.nodes {
		next[u+1] += next[u]
	}
	ord := make([]int32, len(g.edges))
	for i, e := range g.edges {
		ord[next[e.u]] = int32(i)
		next[e.u]++
	}
	lo := int32(0)
	for _, hi := range next[:len(g.nodes)] { // next[u] is now where node u's edges end
		if hi-lo > 1 {
			slices.SortStableFunc(ord[lo:hi], func(a, b int32) int { return cmp.Compare(g.edges[a].v, g.edges[b].v) })
		}
		lo = hi
	}
	gone := make([]bool, len(g.edges))
	for j := 0; j < len(ord); {
		k := j + 1
		for k < len(ord) && g.edges[ord[k]].u == g.edges[ord[j]].u && g.edges[ord[k]].v == g.edges[ord[j]].v {
			gone[ord[k]] = true
			k++
		}
		g.edges[ord[j]] = g.edges[ord[k-1]]
		j = k
	}
	// Drop the merged edges; indices shift down, in order.
	n := 0
	for i := range g.edges {
		if !gone[i] {
			g.edges[n] = g.edges[i]
			n++
		}
	}
	g.edges = g.edges[:n]
}

// window finds the span to analyse.
func window(t *trace.Trace, opt Options) (ann string, start, end int64, err error) {
	ann = opt.Annotation
	ev := &t.Events
	if ann == "" {
		if t.SyntheticStep {
			s, e := t.Span()
			return "", s, e, nil
		}
		ann = "ProfilerStep"
	}
	match := map[trace.StrID]bool{}
	for id, s := range t.AllStrings() {
		if strings.Contains(s, ann) {
			match[id] = true
		}
	}
	var inst []int32
	for i, k := range ev.Kind {
		if !k.OnDevice() && k != trace.KindMemory && k != trace.KindTraceSpan && match[ev.Name[i]] {
			inst = append(inst, int32(i))
		}
	}
	sortStableBy(inst, func(e int32) int64 { return ev.Start[e] })
	if opt.Instance < 0 || opt.Instance >= len(inst) {
		return ann, 0, 0, fmt.Errorf("annotation %q has %d instance(s), no instance %d", ann, len(inst), opt.Instance)
	}
	e := inst[opt.Instance]
	return ann, ev.Start[e], ev.End(int(e)), nil
}

// Compute finds the critical path of the window opt selects.
func Compute(t *trace.Trace, opt Options) *Result {
	r, _ := compute(t, opt)
	return r
}

// compute is Compute, also returning the graph (nil without a window) for
// tests.
func compute(t *trace.Trace, opt Options) (*Result, *graph) {
	ann, ws, we, err := window(t, opt)
	r := &Result{Definition: Definition, Annotation: ann, Instance: opt.Instance, Breakdown: []Share{}, Top: []Item{}}
	if err != nil {
		r.Error = err.Error()
		return r, nil
	}
	r.WindowUs = float64(we-ws) / 1e3
	ev := &t.Events
	n := ev.Len()

	// Clip: host events starting in the window, device events launched from it.
	inHost := func(i int32) bool {
		k := ev.Kind[i]
		return !k.OnDevice() && k != trace.KindMemory && k != trace.KindTraceSpan && k != trace.KindCounter &&
			ev.Start[i] >= ws && ev.Start[i] <= we && ev.Dur[i] > 0
	}
	isNodeKind := func(k trace.Kind) bool {
		return k == trace.KindCPUOp || k == trace.KindRuntime || k == trace.KindDriver ||
			k == trace.KindKernel || k == trace.KindMemcpy || k == trace.KindMemset
	}
	swe, _ := t.Lookup("Stream Wait Event")
	// inClip reports whether event i is device work or sync in the clip
	// (onDevice) and whether it is a node.
	inClip := func(i int) (onDevice, isNode bool) {
		k := ev.Kind[i]
		if !k.OnDevice() {
			return false, isNodeKind(k) && inHost(int32(i))
		}
		if k != trace.KindKernel && k != trace.KindMemcpy && k != trace.KindMemset && k != trace.KindDeviceSync {
			return false, false
		}
		l := ev.Launch(i)
		if l == trace.None {
			return false, false
		}
		switch {
		case k == trace.KindDeviceSync && ev.Name[i] == swe && swe != 0:
			// HTA keeps every Stream Wait Event, in the window or not.
		case k == trace.KindDeviceSync && t.Tracks[ev.Track[i]].Stream < 0:
			// Event Sync and Context Sync sit on no stream: HTA clips
			// them by their own start, as host events.
			if ev.Start[i] < ws || ev.Start[i] > we || ev.Dur[i] <= 0 {
				return false, false
			}
		case !inHost(l):
			return false, false
		}
		return true, isNodeKind(k)
	}
	// Counted first, the lists take one allocation of their size (grown by
	// appends they allocated five times it).
	var nGPU, nNodes int
	for i := range n {
		d, nd := inClip(i)
		nGPU, nNodes = nGPU+b2i(d), nNodes+b2i(nd)
	}
	nodeEvents := make([]int32, 0, nNodes)
	gpu := make([]int32, 0, nGPU) // device work and sync events in the clip
	for i := range n {
		d, nd := inClip(i)
		if d {
			gpu = append(gpu, int32(i))
		}
		if nd {
			nodeEvents = append(nodeEvents, int32(i))
		}
	}
	sortStableBy(nodeEvents, func(e int32) int64 { return ev.Start[e] })

	g := &graph{events: ev}
	g.nodes = make([]node, 0, 2*len(nodeEvents))
	for _, e := range nodeEvents {
		g.nodes = append(g.nodes, startNode(e))
	}
	for _, e := range nodeEvents {
		g.nodes = append(g.nodes, endNode(e))
	}
	sortStableBy(g.nodes, g.nodeTime)
	if len(nodeEvents) > 0 {
		lo, hi := slices.Min(nodeEvents), slices.Max(nodeEvents)
		g.first, g.index = lo, make([]nodePair, hi-lo+1)
		for i := range g.index {
			g.index[i] = nodePair{trace.None, trace.None}
		}
	}
	for i := range g.nodes {
		nd := g.nodes[i]
		p := &g.index[nd.ev()-g.first]
		if nd.start() {
			p.start = int32(i)
		} else {
			p.end = int32(i)
		}
	}
	g.seen = make([]bool, len(g.nodes))
	g.order = make([]int32, 0, len(g.nodes)) // at most every node: grown by appends it allocated 5x that
	// Steps give about 0.7 edges a node: sized for one a node, the edges
	// never grow (growing, they held twice their size).
	g.edges = make([]edge, 0, len(g.nodes))

	blockName := map[trace.StrID]bool{}
	for s := range blocking {
		if id, ok := t.Lookup(s); ok {
			blockName[id] = true
		}
	}
	g.hostEdges(t, ws, we, blockName)
	g.deviceEdges(t, gpu)
	g.merge()
	g.index, g.seen = nil, nil // building done: the longest path's storage may reuse theirs

	r.GraphNodes = len(g.order)
	r.GraphEdges = len(g.edges)
	r.NegativeWeights = g.negW
	path, edges := g.longestPath()
	if len(path) < 2 {
		r.Error = "no critical path: the window holds no connected events"
		return r, g
	}
	g.path = path
	r.summarise(t, g, path, edges)
	return r, g
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// hostEdges walks each host thread's call stack of node events.
func (g *graph) hostEdges(t *trace.Trace, ws, we int64, blockName map[trace.StrID]bool) {
	ev := &t.Events
	for ti := range t.Tracks {
		tr := &t.Tracks[ti]
		if tr.IsDevice() {
			continue
		}
		var stack []int32
		var last, lastHigh int32 = trace.None, trace.None
		lastParent := trace.None
		exit := func() {
			e := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			end, _ := g.endOf(e)
			if last != trace.None {
				i := g.add(last, end, edgeOp, blockName[ev.Name[e]], trace.None)
				g.attribute(i, lastParent)
			}
			if len(stack) == 0 {
				last = trace.None
				lastHigh = end
			} else {
				last = end
				lastParent = ev.Parent[e]
			}
		}
		// Node events start in the window: only those are walked.
		from, _ := slices.BinarySearchFunc(tr.Events, ws, func(e int32, ts int64) int { return cmp.Compare(ev.Start[e], ts) })
		for _, e := range tr.Events[from:] {
			if ev.Start[e] > we {
				break
			}
			sn, ok := g.startOf(e)
			if !ok || ev.Kind[e].OnDevice() {
				continue
			}
			start, end := ev.Start[e], ev.End(int(e))
			for len(stack) > 0 {
				p := stack[len(stack)-1]
				if start < ev.End(int(p)) && end <= ev.End(int(p)) {
					break
				}
				exit()
			}
			if len(stack) == 0 && lastHigh != trace.None {
				g.add(lastHigh, sn, edgeDep, false, trace.None)
			}
			if last != trace.None {
				i := g.add(last, sn, edgeOp, false, trace.None)
				g.attribute(i, lastParent)
			}
			stack = append(stack, e)
			last = sn
			lastParent = ev.Parent[e]
		}
		for len(stack) > 0 {
			exit()
		}
	}
}

// attribute sets the event an operator or kernel-kernel edge stands for.
func (g *graph) attribute(i int32, srcParent int32) {
	e := &g.edges[i]
	src, dst := g.nodes[e.u], g.nodes[e.v]
	switch {
	case e.typ == edgeKK:
		e.attr = src.ev()
	case e.typ != edgeOp:
		e.attr = trace.None
	case src.start():
		e.attr = src.ev()
	case !dst.start():
		e.attr = dst.ev()
	default:
		e.attr = srcParent
	}
}

// deviceEdges adds kernel, launch, kernel-kernel and sync edges.
func (g *graph) deviceEdges(t *trace.Trace, gpu []int32) {
	ev := &t.Events
	ql := queueLengths(t, gpu)
	es := eventSyncs(t, math.MinInt64, math.MaxInt64)
	sortBy := func(e int32) int64 {
		if ev.Kind[e] == trace.KindDeviceSync {
			return ev.End(int(e))
		}
		return ev.Start[e]
	}
	sortStableBy(gpu, sortBy)
	last := map[int64]int32{}
	var streams []int64 // insertion order of last, for Context Sync
	// kernelSync maps device work to the device work a Stream Wait Event
	// made it wait for.
	kernelSync := map[int32]int32{}
	for _, e := range gpu {
		stream := t.Tracks[ev.Track[e]].Stream
		rt := ev.Launch(int(e))
		if ev.Kind[e] == trace.KindDeviceSync {
			name := t.Name(int(e))
			switch name {
			case "Stream Wait Event", "Event Sync":
				src, ok := es.source(t, e)
				if !ok {
					continue
				}
				if name == "Stream Wait Event" {
					if dst, ok := es.nextLaunch[rt]; ok {
						kernelSync[dst] = src
					}
					continue
				}
				se, ok1 := g.endOf(src)
				end, ok2 := g.endOf(rt)
				if ok1 && ok2 {
					g.add(se, end, edgeSync, false, trace.None)
				}
				continue
			}
			end, ok := g.endOf(rt)
			if !ok {
				continue
			}
			switch name {
			case "Stream Sync":
				if l, ok := last[stream]; ok {
					g.add(l, end, edgeSync, false, trace.None)
				}
			case "Context Sync":
				for _, s := range streams {
					g.add(last[s], end, edgeSync, false, trace.None)
				}
			}
			continue
		}
		p, _ := g.find(e)
		sn, en := p.start, p.end
		i := g.add(sn, en, edgeOp, false, trace.None)
		g.attribute(i, trace.None)
		syncEnd := trace.None // end of the work a Stream Wait Event made this wait for
		if src, ok := kernelSync[e]; ok {
			delete(kernelSync, e)
			if se, ok := g.endOf(src); ok {
				g.add(se, sn, edgeSync, false, trace.None)
				syncEnd = se
			}
		}
		l, hasLast := last[stream]
		if ql.at(rt) == 1 && ql.at(e) == 0 && (!hasLast || g.ts(l) < ev.Start[rt]) &&
			(syncEnd == trace.None || g.ts(syncEnd) < ev.Start[rt]) {
			if rs, ok := g.startOf(rt); ok {
				g.add(rs, sn, edgeLaunch, false, trace.None)
			}
		} else if hasLast && (syncEnd == trace.None || g.ts(syncEnd) < g.ts(l)) {
			i := g.add(l, sn, edgeKK, false, trace.None)
			g.attribute(i, trace.None)
		}
		if !hasLast {
			streams = append(streams, stream)
		}
		last[stream] = en
	}
}

// eventSync holds what CUDA event synchronisation edges need (HTA's
// _get_cuda_event_record_df and _get_cuda_stream_wait_event_df).
type eventSync struct {
	corrKey trace.StrID // "wait_on_cuda_event_record_corr_id"
	// prevLaunch maps a cudaEventRecord's correlation to the device work
	// of the launch last issued, from any thread, before the record onto
	// the stream and device the event was recorded on.
	prevLaunch map[int64]int32
	// nextLaunch maps a cudaStreamWaitEvent call to the device work of the
	// launch next issued after it, from the same thread, onto the waiting
	// stream.
	nextLaunch map[int32]int32
}

// source returns the device work a Stream Wait Event or Event Sync waits
// for: the work launched just before the cudaEventRecord it names.
func (es *eventSync) source(t *trace.Trace, e int32) (int32, bool) {
	if es.prevLaunch == nil {
		return 0, false
	}
	corr, ok := t.ArgInt(int(e), es.corrKey)
	if !ok {
		return 0, false
	}
	src, ok := es.prevLaunch[corr]
	return src, ok
}

// eventSyncs matches cudaEventRecord and cudaStreamWaitEvent calls to
// launches over the whole trace. The stream (and device) an event was
// recorded on comes from the wait_on_stream argument of the cuda_sync
// events that wait for it. Launches are those queueLengths counts: device
// work whose launching call is a kernel launch, memcpy or memset.
//
// Only launch, record and wait calls starting in [from, to] (ns) are
// matched.
func eventSyncs(t *trace.Trace, from, to int64) *eventSync {
	es := &eventSync{}
	corrKey, ok1 := t.Lookup("wait_on_cuda_event_record_corr_id")
	streamKey, ok2 := t.Lookup("wait_on_stream")
	if !ok1 || !ok2 {
		return es
	}
	es.corrKey = corrKey
	ev := &t.Events
	type devStream struct{ dev, stream int64 }
	recStream := map[int64]devStream{} // record correlation -> where it was recorded
	var waits []int32                  // Stream Wait Events
	swe, hasSWE := t.Lookup("Stream Wait Event")
	for i, k := range ev.Kind {
		if k != trace.KindDeviceSync {
			continue
		}
		if hasSWE && ev.Name[i] == swe {
			waits = append(waits, int32(i))
		}
		s, ok := t.ArgInt(i, streamKey)
		if !ok || s < 0 {
			continue
		}
		c, _ := t.ArgInt(i, corrKey)
		if _, dup := recStream[c]; !dup {
			recStream[c] = devStream{int64(t.Tracks[ev.Track[i]].Device), s}
		}
	}
	if len(recStream) == 0 {
		return es
	}
	isLaunch := map[trace.StrID]bool{}
	for s := range launchNames {
		if id, ok := t.Lookup(s); ok {
			isLaunch[id] = true
		}
	}
	type launch struct {
		call, work int32
		ts         int64
	}
	var launches []launch
	for i, k := range ev.Kind {
		if k != trace.KindKernel && k != trace.KindMemcpy && k != trace.KindMemset {
			continue
		}
		if l := ev.Launch(i); l != trace.None && isLaunch[ev.Name[l]] && ev.Start[l] >= from && ev.Start[l] <= to {
			launches = append(launches, launch{l, int32(i), ev.Start[l]})
		}
	}
	sortStableBy(launches, func(l launch) int64 { return l.ts })
	byDevStream := map[devStream][]launch{}
	type trackStream struct {
		track  trace.TrackID
		stream int64
	}
	byThreadStream := map[trackStream][]launch{}
	for _, l := range launches {
		w := &t.Tracks[ev.Track[l.work]]
		k := devStream{int64(w.Device), w.Stream}
		byDevStream[k] = append(byDevStream[k], l)
		k2 := trackStream{ev.Track[l.call], w.Stream}
		byThreadStream[k2] = append(byThreadStream[k2], l)
	}

	es.prevLaunch = map[int64]int32{}
	if rec, ok := t.Lookup("cudaEventRecord"); ok {
		for i, k := range ev.Kind {
			if !k.IsLaunch() || ev.Name[i] != rec || ev.Start[i] < from || ev.Start[i] > to {
				continue
			}
			ds, ok := recStream[ev.Correlation.Get(i)]
			if !ok {
				continue
			}
			ls := byDevStream[ds]
			// the last launch starting at or before the record
			j := sort.Search(len(ls), func(j int) bool { return ls[j].ts > ev.Start[i] })
			if j > 0 {
				es.prevLaunch[ev.Correlation.Get(i)] = ls[j-1].work
			}
		}
	}

	es.nextLaunch = map[int32]int32{}
	for _, w := range waits {
		call := ev.Launch(int(w))
		if call == trace.None || t.Name(int(call)) != "cudaStreamWaitEvent" {
			continue
		}
		ls := byThreadStream[trackStream{ev.Track[call], t.Tracks[ev.Track[w]].Stream}]
		// the first launch starting after the call
		j := sort.Search(len(ls), func(j int) bool { return ls[j].ts > ev.Start[call] })
		if j < len(ls) {
			es.nextLaunch[call] = ls[j].work
		}
	}
	return es
}

// queueLengths returns, for launch calls and the device work they launched,
// the stream's launch-queue length right after the event (HTA's
// queue_length); 0 for other events. Streams are keyed by number, as HTA
// does. Only the values of the clip's device events and their launches are
// needed: a launch/start pair wholly before the earliest of those adds
// one and takes it back before it, and a pair wholly after the latest
// comes too late, so both are left out (on a long trace, most pairs).
func queueLengths(t *trace.Trace, clip []int32) queueColumn {
	ev := &t.Events
	isLaunch := map[trace.StrID]bool{}
	for s := range launchNames {
		if id, ok := t.Lookup(s); ok {
			isLaunch[id] = true
		}
	}
	// 16 bytes a point: the stream by its index, with a launch's mark in
	// the low bit (on one step of 55k kernels points of 24 bytes and a map
	// of the results were 3.4 MB, a third of the analysis's scratch).
	type point struct {
		ts     int64
		ev     int32
		stream int32 // index<<1 | 1 for a launch
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, e := range clip {
		lo = min(lo, ev.Start[e])
		hi = max(hi, ev.Start[e])
		if l := ev.Launch(int(e)); l != trace.None {
			lo, hi = min(lo, ev.Start[l]), max(hi, ev.Start[l])
		}
	}
	// pair returns device work i's launch when the pair counts.
	pair := func(i int, k trace.Kind) (int32, bool) {
		if k != trace.KindKernel && k != trace.KindMemcpy && k != trace.KindMemset {
			return 0, false
		}
		l := ev.Launch(i)
		if l == trace.None || !isLaunch[ev.Name[l]] {
			return 0, false
		}
		return l, max(ev.Start[l], ev.Start[i]) >= lo && min(ev.Start[l], ev.Start[i]) <= hi
	}
	// Counted first, the points take one allocation of their size (grown
	// by appends they allocated 2.5 times it).
	n := 0
	for i, k := range ev.Kind {
		if _, ok := pair(i, k); ok {
			n++
		}
	}
	streams := map[int64]int32{}
	pts := make([]point, 0, 2*n)
	col := queueColumn{first: math.MaxInt32}
	last := int32(-1)
	for i, k := range ev.Kind {
		l, ok := pair(i, k)
		if !ok {
			continue
		}
		stream := t.Tracks[ev.Track[i]].Stream
		s, ok := streams[stream]
		if !ok {
			s = int32(len(streams))
			streams[stream] = s
		}
		pts = append(pts, point{ev.Start[l], l, s<<1 | 1}, point{ev.Start[i], int32(i), s << 1})
		col.first, last = min(col.first, l, int32(i)), max(last, l, int32(i))
	}
	// HTA sorts the launches, then the device work, by time: on a tie the
	// launch counts first.
	slices.SortFunc(pts, func(a, b point) int {
		if c := cmp.Compare(a.ts, b.ts); c != 0 {
			return c
		}
		if c := cmp.Compare(b.stream&1, a.stream&1); c != 0 {
			return c
		}
		return cmp.Compare(a.ev, b.ev)
	})
	if len(pts) == 0 {
		return queueColumn{}
	}
	q := make([]int32, len(streams))
	col.q = make([]int32, last-col.first+1)
	for _, p := range pts {
		if p.stream&1 == 1 {
			q[p.stream>>1]++
		} else {
			q[p.stream>>1]--
		}
		col.q[p.ev-col.first] = q[p.stream>>1]
	}
	return col
}

// queueColumn holds queue lengths for events first to first+len(q)-1.
type queueColumn struct {
	first int32
	q     []int32
}

// at returns event e's queue length (0 outside the column).
func (c queueColumn) at(e int32) int32 {
	if i := e - c.first; i >= 0 && int(i) < len(c.q) {
		return c.q[i]
	}
	return 0
}

// longestPath is networkx's dag_longest_path over the graph's nodes in
// first-edge order, with topological generations and first-maximum ties.
// It returns the path's nodes and the edges between them (a search per
// edge afterwards cost a tenth of the analysis).
func (g *graph) longestPath() (path, edges []int32) {
	succ := g.adjacency(adjacency{}, func(e *edge) int32 { return e.u })
	indeg := make([]int32, len(g.nodes))
	for _, e := range g.edges {
		indeg[e.v]++
	}
	var gen, next []int32 // one generation and the next, their storage reused
	for _, v := range g.order {
		if indeg[v] == 0 {
			gen = append(gen, v)
		}
	}
	// The topological order takes the first-edge order's storage, which
	// only the first generation needed.
	connected := len(g.order)
	topo := g.order[:0]
	g.order = nil
	for len(gen) > 0 {
		topo = append(topo, gen...)
		next = next[:0]
		for _, u := range gen {
			for _, ei := range succ.of(u) {
				v := g.edges[ei].v
				indeg[v]--
				if indeg[v] == 0 {
					next = append(next, v)
				}
			}
		}
		gen, next = next, gen
	}
	if len(topo) < connected {
		return nil, nil // a cycle: the trace's nesting is inconsistent
	}
	// The successors are done with: the predecessors take their storage,
	// and the in-degrees, all zero now, become from (on one step of
	// 160k nodes the pass held 6.6 MB, now 4).
	pred := g.adjacency(succ, func(e *edge) int32 { return e.v })
	dist := make([]int64, len(g.nodes))
	from := indeg // the edge into the node on its longest path, or -1
	for _, v := range topo {
		from[v] = -1
		best, bestE := int64(0), int32(-1)
		for _, ei := range pred.of(v) {
			d := dist[g.edges[ei].u] + g.weight(&g.edges[ei])
			if bestE < 0 || d > best {
				best, bestE = d, ei
			}
		}
		if bestE >= 0 && best >= 0 {
			dist[v], from[v] = best, bestE
		}
	}
	var end int32 = -1
	for _, v := range topo {
		if end < 0 || dist[v] > dist[end] {
			end = v
		}
	}
	if end < 0 {
		return nil, nil
	}
	// walked back twice: counted, then filled from the end (grown by
	// appends, the lists allocated four times their size)
	n := 0
	for v := end; from[v] >= 0; v = g.edges[from[v]].u {
		n++
	}
	path, edges = make([]int32, n+1), make([]int32, n)
	path[n] = end
	for v := end; from[v] >= 0; v = g.edges[from[v]].u {
		n--
		path[n], edges[n] = g.edges[from[v]].u, from[v]
	}
	return path, edges
}

// adjacency lists the edges of every node, as end picks it, in the order
// they were added: two flat slices (a slice per node cost ten times the
// memory on a step of a few hundred thousand events).
type adjacency struct {
	start []int32 // node n's edges are edges[start[n]:start[n+1]]
	edges []int32
}

// The lists are built in buf's storage when it has the size.
func (g *graph) adjacency(buf adjacency, end func(*edge) int32) adjacency {
	a := buf
	if len(a.start) == len(g.nodes)+1 && len(a.edges) == len(g.edges) {
		clear(a.start)
	} else {
		a = adjacency{start: make([]int32, len(g.nodes)+1), edges: make([]int32, len(g.edges))}
	}
	for i := range g.edges {
		a.start[end(&g.edges[i])+1]++
	}
	for n := range g.nodes {
		a.start[n+1] += a.start[n] // where node n's edges end
	}
	// Each node's edges placed backwards from their end, in order: then
	// start[n+1] is where node n's begin, one place to the left.
	for i := len(g.edges) - 1; i >= 0; i-- {
		n := end(&g.edges[i])
		a.start[n+1]--
		a.edges[a.start[n+1]] = int32(i)
	}
	copy(a.start, a.start[1:])
	a.start[len(g.nodes)] = int32(len(g.edges))
	return a
}

func (a adjacency) of(n int32) []int32 { return a.edges[a.start[n]:a.start[n+1]] }

var kindName = map[trace.Kind]string{
	trace.KindCPUOp: "cpu_op", trace.KindRuntime: "runtime", trace.KindDriver: "driver",
	trace.KindKernel: "kernel", trace.KindMemcpy: "memcpy", trace.KindMemset: "memset",
	trace.KindUserAnnotation: "user_annotation", trace.KindPythonFunction: "python_function",
}

func (r *Result) summarise(t *trace.Trace, g *graph, path, edges []int32) {
	ev := &t.Events
	r.PathNodes = len(path)
	r.PathEdges = len(path) - 1
	// Collective kernels are told apart by the kernel table (HTA's
	// is_comm_kernel looks for "nccl" in the name; the table also knows
	// RCCL/MSCCL, DeepEP, NVSHMEM and symmetric-memory kernels).
	cl := classify.For(t)
	cats := map[string]int64{}
	type key struct{ name, cat string }
	items := map[key]*Item{}
	var total int64
	for _, ei := range edges {
		e := g.edges[ei]
		w := g.weight(&e)
		total += w
		var cat string
		switch e.typ {
		case edgeSync:
			r.SyncEdges++
			if ev.Kind[g.nodes[e.v].ev()].OnDevice() {
				r.GPUWaits++
			}
			continue
		case edgeDep:
			continue
		case edgeLaunch:
			cat = "kernel_launch_overhead"
		case edgeKK:
			cat = "kernel_kernel_overhead"
		default:
			switch {
			case e.attr == trace.None:
				cat = "cpu"
			case !ev.Kind[e.attr].OnDevice():
				cat = "cpu"
			case cl.Has(ev.Name[e.attr], classify.CommKernel):
				cat = "gpu_communication"
			default:
				cat = "gpu_compute"
			}
		}
		cats[cat] += w
		if e.attr != trace.None && w > 0 {
			k := key{t.Name(int(e.attr)), cat}
			it := items[k]
			if it == nil {
				it = &Item{Name: k.name, Kind: kindName[ev.Kind[e.attr]], Category: cat}
				if it.Kind == "" {
					it.Kind = ev.Kind[e.attr].String()
				}
				items[k] = it
			}
			it.Edges++
			it.Us += float64(w) / 1e3
		}
	}
	r.LengthUs = float64(total) / 1e3
	pct := func(w int64) float64 {
		if total == 0 {
			return 0
		}
		return float64(w) * 100 / float64(total)
	}
	var best int64 = -1
	for _, c := range []string{"cpu", "gpu_compute", "gpu_communication", "kernel_launch_overhead", "kernel_kernel_overhead"} {
		w := cats[c]
		r.Breakdown = append(r.Breakdown, Share{Category: c, Us: float64(w) / 1e3, Pct: pct(w)})
		if w > best {
			best, r.BoundBy = w, c
		}
	}
	for _, it := range items {
		it.Pct = it.Us * 1e3 * 100 / float64(max(total, 1))
		r.Top = append(r.Top, *it)
	}
	slices.SortFunc(r.Top, func(a, b Item) int {
		if c := cmp.Compare(b.Us, a.Us); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if len(r.Top) > 15 {
		r.Top = r.Top[:15]
	}
}

// IsBlocking reports whether a runtime call can block the host until
// device work ends (the calls whose operator edge weighs zero above).
func IsBlocking(name string) bool { return blocking[name] }

// Waits are the CUDA-event dependencies of the trace, matched as the
// critical path matches them (eventSyncs): what the what-if replay needs
// beside stream order and launches.
type Waits struct {
	// Stream maps device work to the device work on another stream a
	// Stream Wait Event made it wait for.
	Stream map[int32]int32
	// Host maps a cudaEventSynchronize/cudaEventQuery call to the device
	// work its Event Sync waited for.
	Host map[int32]int32
}

// EventWaits matches the Stream Wait Events and Event Syncs whose calls,
// and the launches they refer to, start in [from, to] (ns): matching them
// over a whole GB trace took a third of the replay's memory.
func EventWaits(t *trace.Trace, from, to int64) Waits {
	w := Waits{Stream: map[int32]int32{}, Host: map[int32]int32{}}
	es := eventSyncs(t, from, to)
	ev := &t.Events
	swe, hasSWE := t.Lookup("Stream Wait Event")
	esync, hasES := t.Lookup("Event Sync")
	for i, k := range ev.Kind {
		if k != trace.KindDeviceSync || !((hasSWE && ev.Name[i] == swe) || (hasES && ev.Name[i] == esync)) {
			continue
		}
		rt := ev.Launch(i)
		if rt == trace.None || ev.Start[rt] < from || ev.Start[rt] > to {
			continue
		}
		src, ok := es.source(t, int32(i))
		if !ok {
			continue
		}
		if hasSWE && ev.Name[i] == swe {
			if dst, ok := es.nextLaunch[rt]; ok {
				w.Stream[dst] = src
			}
			continue
		}
		w.Host[rt] = src
	}
	return w
}
