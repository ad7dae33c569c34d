package flame

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

func folded(t *testing.T, tr *Tree) string {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteFolded(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// check verifies Total = Self + sum(children) everywhere and the node count.
func check(t *testing.T, tr *Tree) {
	t.Helper()
	n := 0
	var walk func(x *Node)
	walk = func(x *Node) {
		n++
		s := x.Self
		for _, c := range x.Children {
			s += c.Total
			walk(c)
		}
		if s != x.Total {
			t.Errorf("%q: self+children %d != total %d", x.Name, s, x.Total)
		}
	}
	walk(tr.Root)
	if n != tr.Nodes() {
		t.Errorf("Nodes() = %d, counted %d", tr.Nodes(), n)
	}
}

func TestAddFolded(t *testing.T) {
	tr := New(UnitSamples, 10_000_000)
	tr.Add([]string{"main", "train", "step"}, 5)
	tr.Add([]string{"main", "train"}, 2)
	tr.Add([]string{"main", "load;data\n"}, 3)
	tr.Add([]string{"main", "train", "step"}, 1)
	tr.Add(nil, 4)
	tr.Add([]string{"ignored"}, 0)
	check(t, tr)
	want := "(root) 4\nmain;load:data  3\nmain;train 2\nmain;train;step 6\n"
	if got := folded(t, tr); got != want {
		t.Errorf("folded:\n%s\nwant:\n%s", got, want)
	}
	if tr.Total() != 15 || tr.Nodes() != 5 || tr.Depth() != 4 {
		t.Errorf("total %d nodes %d depth %d", tr.Total(), tr.Nodes(), tr.Depth())
	}
}

func TestWireRoundTrip(t *testing.T) {
	tr := New(UnitNanoseconds, 1)
	tr.Add([]string{"a", "b"}, 3)
	tr.Add([]string{"a", "c"}, 4)
	tr.Add([]string{"a"}, 1)
	tr.Add([]string{"d", "b"}, 2)
	w := tr.ToWire()
	js, _ := json.Marshal(w)
	want := `{"version":1,"unit":"nanoseconds","period_ns":1,"total":10,"max_self":4,` +
		`"names":["total","a","b","c","d"],` +
		`"levels":[[0,10,0,0],[0,8,1,1,0,2,0,4],[0,3,3,2,0,4,4,3,1,2,2,2]]}` // d;b starts at 8: a self gap of 1
	if string(js) != want {
		t.Errorf("wire:\n%s\nwant:\n%s", js, want)
	}
	back, err := fromWire(w)
	if err != nil {
		t.Fatal(err)
	}
	check(t, back)
	if folded(t, back) != folded(t, tr) {
		t.Errorf("round trip differs:\n%s\nvs\n%s", folded(t, back), folded(t, tr))
	}
	// Damaged wire data is refused.
	bad := *w
	bad.Levels = [][]int64{{0, 10, 0, 0}, {0, 11, 0, 1}}
	if _, err := fromWire(&bad); err == nil {
		t.Error("child wider than its parent accepted")
	}
	bad.Levels = [][]int64{{0, 10, 0, 9}}
	if _, err := fromWire(&bad); err == nil {
		t.Error("name index out of range accepted")
	}
}

func TestLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tr := New(UnitSamples, 1)
	for range 200_000 {
		d := 1 + rng.IntN(12)
		stack := make([]string, d)
		for j := range stack {
			stack[j] = fmt.Sprintf("f%d", rng.IntN(4+j*j*3))
		}
		tr.Add(stack, int64(1+rng.IntN(100)))
	}
	total := tr.Total()
	before := tr.Nodes()
	if before < 100_000 {
		t.Fatalf("only %d nodes", before)
	}
	merged := tr.Limit(1000)
	check(t, tr)
	if tr.Nodes() > 1000 || tr.Nodes() < 900 {
		t.Errorf("after Limit(1000): %d nodes", tr.Nodes())
	}
	if merged != before-tr.Nodes() {
		t.Errorf("merged %d, want %d", merged, before-tr.Nodes())
	}
	if tr.Total() != total {
		t.Errorf("total changed %d -> %d", total, tr.Total())
	}
	// The biggest root children survive; the smallest are in (other).
	var sawOther bool
	var walk func(n *Node)
	walk = func(n *Node) {
		var minKept int64 = -1
		var other int64
		for _, c := range n.Children {
			if c.Name == Other {
				sawOther = true
				other = c.Total
				if len(c.Children) != 0 {
					t.Errorf("(other) has children")
				}
			} else if minKept < 0 || c.Total < minKept {
				minKept = c.Total
			}
			walk(c)
		}
		_ = other
	}
	walk(tr.Root)
	if !sawOther {
		t.Error("no (other) node")
	}
	// Limiting again to fewer nodes keeps the invariants.
	tr.Limit(50)
	check(t, tr)
	if tr.Nodes() > 50 || tr.Total() != total {
		t.Errorf("second limit: %d nodes total %d", tr.Nodes(), tr.Total())
	}
	if _, err := fromWire(tr.ToWire()); err != nil {
		t.Error(err)
	}
}

func TestLimitKeepsLargest(t *testing.T) {
	tr := New(UnitSamples, 1)
	tr.Add([]string{"big"}, 100)
	tr.Add([]string{"mid"}, 50)
	tr.Add([]string{"s1"}, 1)
	tr.Add([]string{"s2"}, 2)
	tr.Limit(4) // root, big, mid, (other)
	if got := folded(t, tr); got != "big 100\nmid 50\n(other) 3\n" {
		t.Errorf("got:\n%s", got)
	}
}

func TestFromPyProfile(t *testing.T) {
	p := &pyprofile.Profile{
		Format: pyprofile.Format, Version: 1, Profiler: "sample", IntervalS: 0.01,
		Frames: []pyprofile.Frame{
			{File: "/home/u/train.py", Func: "<module>", Line: 10, FLine: 1},
			{File: "/home/u/train.py", Func: "train", Line: 20, FLine: 15},
			{File: "/usr/lib/python3.11/site-packages/torch/utils/data/dataloader.py", Func: "__next__", Line: 630, FLine: 620},
			{File: "/usr/lib/python3.11/threading.py", Func: "run", Line: 900, FLine: 890},
			{File: "/home/u/train.py", Func: "train", Line: 22, FLine: 15},
		},
		Threads: []pyprofile.Thread{{ID: 1, Name: "MainThread", Role: "main"}, {ID: 2, Name: "pin", Role: "pin_memory"}},
		Stacks: []pyprofile.Stack{
			{Thread: 0, Frames: []int{0, 1, 2}, Count: 7, WindowCount: 3},
			{Thread: 0, Frames: []int{0, 4}, Count: 2, WindowCount: 2},
			{Thread: 1, Frames: []int{3}, Count: 5, WindowCount: 0},
		},
	}
	tr := FromPyProfile(p, PyOptions{})
	check(t, tr)
	want := "<module> (/home/u/train.py:10);train (/home/u/train.py:20);__next__ (torch/utils/data/dataloader.py:630) 7\n" +
		"<module> (/home/u/train.py:10);train (/home/u/train.py:22) 2\n" +
		"run (threading.py:900) 5\n"
	if got := folded(t, tr); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if tr.Unit != UnitSamples || tr.PeriodNs != 10_000_000 {
		t.Errorf("unit %s period %d", tr.Unit, tr.PeriodNs)
	}
	tr = FromPyProfile(p, PyOptions{Role: "main", Window: true, ByFunction: true, Group: GroupThread})
	want = "thread: MainThread (main);<module> (/home/u/train.py:1);train (/home/u/train.py:15) 2\n" +
		"thread: MainThread (main);<module> (/home/u/train.py:1);train (/home/u/train.py:15);__next__ (torch/utils/data/dataloader.py:620) 3\n"
	if got := folded(t, tr); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	tr = FromPyProfile(p, PyOptions{Group: GroupRole})
	if got := len(tr.Root.Children); got != 2 || tr.Total() != 14 {
		t.Errorf("by role: %d roots, total %d", got, tr.Total())
	}
}

// fixture is a tiny Kineto trace: a step holding a python frame holding
// aten::linear -> aten::addmm -> cudaLaunchKernel -> a 30 µs kernel, an
// op with a "Call stack" arg, and a kernel with no op.
const fixture = `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#3","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"python_function","name":"train.py(12): forward","pid":1,"tid":1,"ts":10,"dur":500},
{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":1,"tid":1,"ts":20,"dur":200,"args":{"External id":1}},
{"ph":"X","cat":"cpu_op","name":"aten::addmm","pid":1,"tid":1,"ts":30,"dur":100,"args":{"External id":2}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":40,"dur":20,"args":{"External id":2,"correlation":7}},
{"ph":"X","cat":"kernel","name":"gemm<script>","pid":0,"tid":7,"ts":70,"dur":30,"args":{"correlation":7,"device":0,"stream":7}},
{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":2,"ts":100,"dur":50,"args":{"External id":3,"Call stack":"model.py(5): fwd;train.py(1): <module>"}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":110,"dur":10,"args":{"External id":3,"correlation":8}},
{"ph":"X","cat":"kernel","name":"add_kernel","pid":0,"tid":7,"ts":200,"dur":5,"args":{"correlation":8,"device":0,"stream":7}},
{"ph":"X","cat":"kernel","name":"orphan","pid":0,"tid":7,"ts":300,"dur":4,"args":{"device":0,"stream":7}}
]}`

func readFixture(t *testing.T) *trace.Trace {
	t.Helper()
	return tracetest.ReadString(t, fixture)
}

func TestFromTraceHost(t *testing.T) {
	tr := FromTrace(readFixture(t), TraceOptions{})
	check(t, tr)
	want := "ProfilerStep#* 500000\n" +
		"ProfilerStep#*;train.py(12): forward 300000\n" +
		"ProfilerStep#*;train.py(12): forward;aten::linear 100000\n" +
		"ProfilerStep#*;train.py(12): forward;aten::linear;aten::addmm 80000\n" +
		"ProfilerStep#*;train.py(12): forward;aten::linear;aten::addmm;cudaLaunchKernel 20000\n" +
		"train.py(1): <module>;model.py(5): fwd;aten::add 40000\n" +
		"train.py(1): <module>;model.py(5): fwd;aten::add;cudaLaunchKernel 10000\n"
	if got := folded(t, tr); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if tr.Total() != 1_050_000 {
		t.Errorf("total %d, want the top-level durations 1050000", tr.Total())
	}
	byThread := FromTrace(readFixture(t), TraceOptions{Threads: true, KeepSteps: true})
	if got := folded(t, byThread); !strings.HasPrefix(got, "thread 1;ProfilerStep#3 500000\n") || !strings.Contains(got, "thread 2;train.py(1)") {
		t.Errorf("by thread:\n%s", got)
	}
}

// A --with-stack trace of `bottleneck run`: the agent's entry frames
// (boot module, run_main) are left out so the program's frames start each
// stack, and the agent's own work at the top of a stack (its finish, its
// sampler thread) is left out with everything under it; its hook inside
// the program's optimizer step stays, where it cost the program.
func TestAgentFramesCut(t *testing.T) {
	tr := tracetest.ReadString(t, `{"traceEvents":[
{"ph":"X","cat":"python_function","name":"/r/.agent/_bottleneck_boot.py(22): <module>","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"python_function","name":"/r/.agent/_bottleneck_agent.py(1229): run_main","pid":1,"tid":1,"ts":1,"dur":998},
{"ph":"X","cat":"python_function","name":"train.py(61): <module>","pid":1,"tid":1,"ts":2,"dur":800},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":100},
{"ph":"X","cat":"python_function","name":"torch/optim/optimizer.py(575): wrapper","pid":1,"tid":1,"ts":200,"dur":300},
{"ph":"X","cat":"python_function","name":"/r/.agent/_bottleneck_agent.py(749): _on_optimizer_step","pid":1,"tid":1,"ts":210,"dur":50},
{"ph":"X","cat":"python_function","name":"/r/.agent/_bottleneck_agent.py(1024): finish","pid":1,"tid":1,"ts":810,"dur":180},
{"ph":"X","cat":"python_function","name":"torch/profiler/profiler.py(9): stop","pid":1,"tid":1,"ts":820,"dur":100},
{"ph":"X","cat":"python_function","name":"/r/.agent/_bottleneck_sampler.py(197): _run_until_stopped","pid":1,"tid":2,"ts":0,"dur":900},
{"ph":"X","cat":"python_function","name":"threading.py(629): wait","pid":1,"tid":2,"ts":5,"dur":800}
]}`)
	want := "train.py(61): <module> 400000\n" +
		"train.py(61): <module>;aten::mm 100000\n" +
		"train.py(61): <module>;torch/optim/optimizer.py(575): wrapper 250000\n" +
		"train.py(61): <module>;torch/optim/optimizer.py(575): wrapper;/r/.agent/_bottleneck_agent.py(749): _on_optimizer_step 50000\n"
	if got := folded(t, FromTrace(tr, TraceOptions{})); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if HostTotal(tr) != 800_000 {
		t.Errorf("host total %d, want the program's 800000", HostTotal(tr))
	}
	// a trace without the agent is left as it is (TestFromTraceHost)
}

func TestFromTraceDevice(t *testing.T) {
	tr := FromTrace(readFixture(t), TraceOptions{Weight: DeviceTime})
	check(t, tr)
	want := "(no host op);orphan 4000\n" +
		"ProfilerStep#*;train.py(12): forward;aten::linear;aten::addmm;gemm<script> 30000\n" +
		"train.py(1): <module>;model.py(5): fwd;aten::add;add_kernel 5000\n"
	if got := folded(t, tr); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if tr.Total() != DeviceTotal(readFixture(t)) {
		t.Errorf("total %d != device total %d", tr.Total(), DeviceTotal(readFixture(t)))
	}
}

func TestRealTraces(t *testing.T) {
	for _, f := range []string{
		"hta/ns_resolution_trace/rank-0.*.pt.trace.json.gz",
		"tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
		"hta/call_stack/backward_thread.json",
	} {
		t.Run(filepath.Base(f), func(t *testing.T) {
			tt := tracetest.Load(t, f)
			host := FromTrace(tt, TraceOptions{})
			check(t, host)
			if host.Total() != HostTotal(tt) || host.Total() == 0 {
				t.Errorf("host total %d, HostTotal %d", host.Total(), HostTotal(tt))
			}
			// Independent check: the sum of top-level durations is at most
			// the tree's total (clamped overlaps only add) and close to it.
			var top int64
			ev := &tt.Events
			for i, k := range ev.Kind {
				if stackKind(k) && ev.Dur[i] > 0 && !tt.Tracks[ev.Track[i]].IsDevice() && FrameParent(tt, int32(i)) == trace.None {
					top += ev.Dur[i]
				}
			}
			if top > host.Total() || float64(host.Total()-top) > 0.01*float64(top) {
				t.Errorf("top-level durations %d vs tree %d", top, host.Total())
			}
			dev := FromTrace(tt, TraceOptions{Weight: DeviceTime})
			check(t, dev)
			if dev.Total() != DeviceTotal(tt) {
				t.Errorf("device total %d != %d", dev.Total(), DeviceTotal(tt))
			}
			total := host.Total()
			host.Limit(500)
			check(t, host)
			if host.Nodes() > 500 || host.Total() != total {
				t.Errorf("limited: %d nodes, total %d", host.Nodes(), host.Total())
			}
			if _, err := fromWire(host.ToWire()); err != nil {
				t.Error(err)
			}
		})
	}
}
