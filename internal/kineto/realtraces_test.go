package kineto

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

func readShared(t *testing.T, rel string) *trace.Trace {
	t.Helper()
	tr, err := ReadFile(filepath.Join(testutil.Traces(t), rel), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// Every real trace is read without error or problem (the execution trace
// beside one of them is not a profiler trace and must be refused).
func TestRealTracesReadCleanly(t *testing.T) {
	dir := testutil.Traces(t)
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if d.IsDir() || !(strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".json.gz")) {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		tr, err := ReadFile(p, Options{})
		if strings.HasSuffix(p, "_et.json.gz") {
			if err == nil {
				t.Errorf("%s: an execution trace was accepted as a profiler trace", rel)
			}
			return nil
		}
		n++
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		if tr.Problems.Any() {
			t.Errorf("%s: unexpected problems %v", rel, tr.Problems.List)
		}
		if tr.Events.Len() == 0 {
			t.Errorf("%s: no events", rel)
		}
		if err := tr.Validate(); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
		return nil
	})
	if n < 40 {
		t.Errorf("read only %d traces", n)
	}
}

func TestKnownValuesNCCL(t *testing.T) {
	tr := readShared(t, "hta/nccl_parser_config/nccl_data.json.gz")
	kernels, longest := 0, -1
	for i, k := range tr.Events.Kind {
		if k == trace.KindKernel && strings.HasPrefix(tr.Name(i), "ncclKernel") {
			kernels++
			if longest < 0 || tr.Events.Dur[i] > tr.Events.Dur[longest] {
				longest = i
			}
		}
	}
	if kernels != 21 {
		t.Errorf("ncclKernel kernels = %d, want 21", kernels)
	}
	if got, _ := tr.ArgInt(longest, tr.InternString("In msg nelems")); got != 2049000 {
		t.Errorf("longest nccl kernel In msg nelems = %d, want 2049000", got)
	}
	if got, _ := tr.ArgStr(longest, tr.InternString("Process Group Name")); got != "0" {
		t.Errorf("process group name = %q, want \"0\"", got)
	}
	if d := tr.Meta.Distributed; d == nil || d.NCCLVersion != "2.17.1" {
		t.Errorf("distributedInfo = %+v, want nccl_version 2.17.1", d)
	}
}

func TestKnownValuesTriton(t *testing.T) {
	tr := readShared(t, "hta/triton_example/triton_example.json.gz")
	found := false
	for i, k := range tr.Events.Kind {
		if k == trace.KindCPUOp && tr.Name(i) == "triton_poi_fused_add_cos_sin_0" {
			found = true
			if b, _ := tr.ArgStr(i, trace.KeyKernelBackend); b != "triton" {
				t.Errorf("kernel_backend = %q, want triton", b)
			}
		}
	}
	if !found {
		t.Error("triton cpu_op not found")
	}
	// The first event in file order is at ts 2413669096090.100 µs.
	first := tr.Events.Start[0]
	if abs := first + tr.Meta.BaseTimeNs; first != 2413669096090100 || abs != 2413669096090100+1727743122000000000 {
		t.Errorf("first event at %d ns (absolute %d), want 2413669096090100 + 1727743122000000000", first, abs)
	}
}

func TestKnownValuesCPUOnly(t *testing.T) {
	tr := readShared(t, "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
	d := tr.Meta.Distributed
	if d == nil || d.Backend != "gloo" || d.Rank != 34 || d.WorldSize != 300 || d.PGCount != 10 {
		t.Errorf("distributedInfo = %+v, want gloo rank 34 of 300, pg_count 10", d)
	}
}

func TestKnownValuesNsResolution(t *testing.T) {
	tr := readShared(t, "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
	ev := &tr.Events
	// Correlation 135139 is a DtoD memcpy launched by DistributedDataParallel.forward.
	for i := range ev.Len() {
		if ev.Correlation.Get(i) == 135139 && ev.Kind[i].OnDevice() {
			if ev.Kind[i] != trace.KindMemcpy || tr.Name(i) != "Memcpy DtoD (Device -> Device)" {
				t.Errorf("correlation 135139 is %s %q", ev.Kind[i], tr.Name(i))
			}
			if ev.Launch(i) == trace.None || !hasAncestorNamed(tr, ev.Launch(i), "DistributedDataParallel.forward") {
				t.Errorf("correlation 135139 is not linked under DistributedDataParallel.forward")
			}
			return
		}
	}
	t.Error("correlation 135139 not found")
}

func hasAncestorNamed(tr *trace.Trace, e int32, name string) bool {
	for p := e; p != trace.None; p = tr.Events.Parent[p] {
		if tr.Name(int(p)) == name {
			return true
		}
	}
	return false
}

// A 7-byte window read one byte at a time forces refills inside tokens: the
// restartable units must give exactly the model of a whole-buffer read.
func TestRefillBoundaries(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	files = append(files, filepath.Join(testutil.TracesDir(), "hta/triton_example/triton_example.json.gz"))
	for _, file := range files {
		var input string
		if strings.HasSuffix(file, ".txtar") {
			data, _ := os.ReadFile(file)
			for _, s := range parseTxtar(string(data)) {
				if s.name == "trace.json" {
					input = s.body
				}
			}
		} else {
			data, err := uncompressed(file)
			if err != nil {
				continue
			}
			input = string(data)
		}
		whole, err1 := Read(strings.NewReader(input), "x", Options{})
		windowSize = 7
		bytewise, err2 := Read(iotest.OneByteReader(strings.NewReader(input)), "x", Options{})
		windowSize = 1 << 20
		if (err1 == nil) != (err2 == nil) {
			t.Errorf("%s: errors differ: %v vs %v", file, err1, err2)
			continue
		}
		if err1 == nil && dump(whole) != dump(bytewise) {
			t.Errorf("%s: byte-at-a-time read differs:\n%s", file, diff(dump(whole), dump(bytewise)))
		}
	}
}
