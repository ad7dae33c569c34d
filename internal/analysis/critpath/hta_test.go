package critpath

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

var edgeTypeNames = [...]string{edgeOp: "operator", edgeDep: "dependency", edgeLaunch: "launch", edgeKK: "kernel_kernel", edgeSync: "sync"}

// edgeCounts counts the graph's edges, or the path's, by type.
func edgeCounts(g *graph, onPath bool) map[string]int {
	c := map[string]int{}
	if !onPath {
		for _, e := range g.edges {
			c[edgeTypeNames[e.typ]]++
		}
		return c
	}
	for i := 0; i+1 < len(g.path); i++ {
		ei, _ := g.edgeBetween(g.path[i], g.path[i+1])
		c[edgeTypeNames[g.edges[ei].typ]]++
	}
	return c
}

// findEdge returns the edge from event u's start (or end) node to event
// v's start (or end) node.
func findEdge(g *graph, u int32, uStart bool, v int32, vStart bool) (edge, bool) {
	node := func(e int32, start bool) (int32, bool) { // by a scan: compute drops the index
		for i, nd := range g.nodes {
			if nd.ev() == e && nd.start() == start {
				return int32(i), true
			}
		}
		return 0, false
	}
	a, ok1 := node(u, uStart)
	b, ok2 := node(v, vStart)
	if !ok1 || !ok2 {
		return edge{}, false
	}
	i, ok := g.edgeBetween(a, b)
	if !ok {
		return edge{}, false
	}
	return g.edges[i], true
}

// byCorr finds the event named name with correlation corr.
func byCorr(t *testing.T, tr *trace.Trace, name string, corr int64) int32 {
	t.Helper()
	for i := range tr.Events.Len() {
		if tr.Events.Correlation.Get(i) == corr && tr.Name(i) == name {
			return int32(i)
		}
	}
	t.Fatalf("no %s with correlation %d", name, corr)
	return -1
}

// htaCase holds what HTA 0.5.0 computes (TraceAnalysis.critical_path_analysis
// with the default options, pandas 2.1): graph size, edges by type over
// the graph and over the path, and get_critical_path_breakdown() summed by
// bound_by, in µs.
type htaCase struct {
	name, rel            string
	opt                  Options
	nodes, edges         int
	edgeTypes            map[string]int
	pathNodes            int
	pathTypes            map[string]int
	cpu, gpu, launch, kk float64
	syncEdges, gpuWaits  int
	wantSync             [][2]int64 // correlations of device work -> device work joined by a Stream Wait Event edge
}

const (
	simpleAddRel = "hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"
	alexnetRel   = "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
	eventSyncRel = "hta/critical_path/cuda_event_sync/event_sync_trace.json.gz"
	multiRel     = "hta/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz"
	forward      = "[param|pytorch.model.alex_net|0|0|0|measure|forward]"
)

func e(op, dep, launch, kk, sync int) map[string]int {
	m := map[string]int{"operator": op, "dependency": dep, "launch": launch, "kernel_kernel": kk, "sync": sync}
	maps.DeleteFunc(m, func(_ string, v int) bool { return v == 0 })
	return m
}

var htaCases = []htaCase{
	{name: "simple_add forward 1", rel: simpleAddRel, opt: Options{Annotation: forward, Instance: 1},
		nodes: 414, edges: 415, edgeTypes: e(350, 23, 15, 25, 2),
		pathNodes: 315, pathTypes: e(288, 20, 1, 5, 0),
		cpu: 241190, gpu: 508, launch: 17, kk: 9},
	{name: "simple_add whole trace", rel: simpleAddRel,
		nodes: 1428, edges: 1452, edgeTypes: e(1167, 162, 56, 42, 25),
		pathNodes: 1160, pathTypes: e(957, 152, 18, 14, 18),
		cpu: 41380750, gpu: 40992, launch: 1595, kk: 11897, syncEdges: 18},
	{name: "alexnet forward 1", rel: alexnetRel, opt: Options{Annotation: forward, Instance: 1},
		nodes: 418, edges: 421, edgeTypes: e(354, 23, 5, 34, 5),
		pathNodes: 149, pathTypes: e(110, 4, 1, 32, 1),
		cpu: 32042, gpu: 3712, launch: 30, kk: 50, syncEdges: 1, gpuWaits: 1,
		// HTA's test: fft2d_c2r (5606) on stream 20 -> elementwise (5629) on stream 7
		wantSync: [][2]int64{{5560, 5597}, {5594, 5604}, {5606, 5629}}},
	{name: "alexnet whole trace", rel: alexnetRel,
		nodes: 1388, edges: 1417, edgeTypes: e(1157, 132, 38, 59, 31),
		pathNodes: 948, pathTypes: e(763, 106, 18, 41, 19),
		cpu: 43283339, gpu: 60572, launch: 2035, kk: 9709, syncEdges: 19, gpuWaits: 1},
	{name: "cuda_event_sync ProfilerStep 0", rel: eventSyncRel, opt: Options{Annotation: "ProfilerStep"},
		nodes: 54, edges: 57, edgeTypes: e(38, 10, 5, 0, 4),
		pathNodes: 40, pathTypes: e(28, 7, 2, 0, 2),
		cpu: 2335, gpu: 38, launch: 28, kk: 0, syncEdges: 2},
	{name: "cuda_event_sync_multi_stream whole trace", rel: multiRel,
		nodes: 78, edges: 82, edgeTypes: e(66, 5, 3, 2, 6),
		pathNodes: 59, pathTypes: e(52, 4, 1, 1, 0),
		cpu: 1025, gpu: 124, launch: 14, kk: 15,
		// HTA's test: ampere_sgemm (27) on stream 20 -> Memset (1411) on stream 24
		wantSync: [][2]int64{{27, 1411}}},
}

// TestMatchesHTA checks the graph and path against HTA's on the shared
// critical-path traces, event synchronisation edges included.
func TestMatchesHTA(t *testing.T) {
	for _, c := range htaCases {
		t.Run(c.name, func(t *testing.T) {
			tr := tracetest.Load(t, c.rel)
			r, g := compute(tr, c.opt)
			if r.Error != "" {
				t.Fatal(r.Error)
			}
			if r.GraphNodes != c.nodes || r.GraphEdges != c.edges || r.PathNodes != c.pathNodes {
				t.Errorf("graph %d nodes %d edges, path %d nodes; HTA: %d, %d, %d",
					r.GraphNodes, r.GraphEdges, r.PathNodes, c.nodes, c.edges, c.pathNodes)
			}
			if got := edgeCounts(g, false); !maps.Equal(got, c.edgeTypes) {
				t.Errorf("graph edges by type %v, HTA %v", got, c.edgeTypes)
			}
			if got := edgeCounts(g, true); !maps.Equal(got, c.pathTypes) {
				t.Errorf("path edges by type %v, HTA %v", got, c.pathTypes)
			}
			want := map[string]float64{"cpu": c.cpu, "gpu_compute": c.gpu, "gpu_communication": 0,
				"kernel_launch_overhead": c.launch, "kernel_kernel_overhead": c.kk}
			for _, s := range r.Breakdown {
				if s.Us != want[s.Category] {
					t.Errorf("%s %v us, HTA %v", s.Category, s.Us, want[s.Category])
				}
			}
			if r.LengthUs != c.cpu+c.gpu+c.launch+c.kk {
				t.Errorf("length %v us, HTA %v", r.LengthUs, c.cpu+c.gpu+c.launch+c.kk)
			}
			if r.SyncEdges != c.syncEdges || r.GPUWaits != c.gpuWaits {
				t.Errorf("sync edges %d (GPU waits %d), want %d (%d)", r.SyncEdges, r.GPUWaits, c.syncEdges, c.gpuWaits)
			}
			for _, p := range c.wantSync {
				u, v := deviceByCorr(t, tr, p[0]), deviceByCorr(t, tr, p[1])
				if ed, ok := findEdge(g, u, false, v, true); !ok || ed.typ != edgeSync || g.weight(&ed) != 0 {
					t.Errorf("no sync edge from %s (%d) to %s (%d): %+v %v", tr.Name(int(u)), p[0], tr.Name(int(v)), p[1], ed, ok)
				}
			}
		})
	}
}

// deviceByCorr finds the device work with correlation corr.
func deviceByCorr(t *testing.T, tr *trace.Trace, corr int64) int32 {
	t.Helper()
	for i := range tr.Events.Len() {
		if k := tr.Events.Kind[i]; tr.Events.Correlation.Get(i) == corr && k.IsDeviceWork() {
			return int32(i)
		}
	}
	t.Fatalf("no device work with correlation %d", corr)
	return -1
}

// TestEventSyncFixture: k1 on stream 7 is recorded (cudaEventRecord) and
// stream 8 waits for it (cudaStreamWaitEvent) before k2, launched long
// before k1 ends; k2's stream is then recorded and the host waits for it
// (cudaEventSynchronize). k3, launched on stream 7 after k2, must not be
// taken for the work the second record follows. HTA 0.5.0 on the same
// file: 22 nodes, 22 edges (11 operator, 7 dependency, 2 sync, 1 launch,
// 1 kernel-kernel), a path of 8 nodes: launch 20, k1 400, sync, k2 50,
// sync, dependency, aten::foo 20.
func TestEventSyncFixture(t *testing.T) {
	js, err := os.ReadFile(filepath.Join("testdata", "event_sync_fixture.json"))
	if err != nil {
		t.Fatal(err)
	}
	tr := tracetest.ReadString(t, string(js))
	r, g := compute(tr, Options{})
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	k1, k2, k3 := deviceByCorr(t, tr, 1), deviceByCorr(t, tr, 4), deviceByCorr(t, tr, 7)
	sync := byCorr(t, tr, "cudaEventSynchronize", 6)
	if ed, ok := findEdge(g, k1, false, k2, true); !ok || ed.typ != edgeSync {
		t.Errorf("k2 does not wait for k1: %+v %v", ed, ok)
	}
	if _, ok := findEdge(g, tr.Events.Launch(int(k2)), true, k2, true); ok {
		t.Error("k2 has a launch-delay edge though it waited for k1")
	}
	if ed, ok := findEdge(g, k2, false, sync, false); !ok || ed.typ != edgeSync {
		t.Errorf("cudaEventSynchronize does not wait for k2: %+v %v", ed, ok)
	}
	if _, ok := findEdge(g, k3, false, sync, false); ok {
		t.Error("cudaEventSynchronize waits for k3, launched on the other stream")
	}
	if r.GraphNodes != 22 || r.GraphEdges != 22 || r.PathNodes != 8 {
		t.Errorf("graph %d nodes %d edges, path %d nodes; HTA: 22, 22, 8", r.GraphNodes, r.GraphEdges, r.PathNodes)
	}
	if want := e(11, 7, 1, 1, 2); !maps.Equal(edgeCounts(g, false), want) {
		t.Errorf("edges by type %v, HTA %v", edgeCounts(g, false), want)
	}
	want := map[string]float64{"cpu": 20, "gpu_compute": 450, "kernel_launch_overhead": 20}
	for _, s := range r.Breakdown {
		if s.Us != want[s.Category] {
			t.Errorf("%s %v us, HTA %v", s.Category, s.Us, want[s.Category])
		}
	}
	if r.SyncEdges != 2 || r.GPUWaits != 1 {
		t.Errorf("sync edges %d, GPU waits %d; want 2, 1", r.SyncEdges, r.GPUWaits)
	}

	// Without the cuda_sync events' arguments the wait is invisible: k2
	// is taken to start 385 us after its launch.
	tr = tracetest.ReadString(t, stripWaitArgs(string(js)))
	r, g = compute(tr, Options{})
	k1, k2 = deviceByCorr(t, tr, 1), deviceByCorr(t, tr, 4)
	if _, ok := findEdge(g, k1, false, k2, true); ok {
		t.Error("sync edge without wait_on arguments")
	}
	if ed, ok := findEdge(g, tr.Events.Launch(int(k2)), true, k2, true); !ok || ed.typ != edgeLaunch || g.weight(&ed) != 385_000 {
		t.Errorf("launch edge of k2 without the wait: %+v %v", ed, ok)
	}
	if r.SyncEdges != 0 {
		t.Errorf("sync edges %d without wait_on arguments", r.SyncEdges)
	}
}

func stripWaitArgs(js string) string {
	for _, s := range []string{`"wait_on_stream":7,"wait_on_cuda_event_record_corr_id":2`, `"wait_on_stream":8,"wait_on_cuda_event_record_corr_id":5`} {
		js = strings.Replace(js, s, `"wait_on_stream":-1,"wait_on_cuda_event_record_corr_id":-1`, 1)
	}
	return js
}
