package ranks_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/ranks"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// compute compares traces, one per rank, as the driver does: each
// measured, then the measures compared.
func compute(traces []*trace.Trace, opt ranks.Options) *ranks.Result {
	ms := make([]ranks.Measured, len(traces))
	for i, t := range traces {
		ms[i] = ranks.Measure(t, opt)
	}
	return ranks.Compare(ms)
}

func loadDir(t *testing.T, rel string) []*trace.Trace {
	t.Helper()
	dir := testutil.Traces(t)
	files, _ := filepath.Glob(filepath.Join(dir, rel, "*.json.gz"))
	var ts []*trace.Trace
	for _, f := range files {
		ts = append(ts, tracetest.Load(t, strings.TrimPrefix(f, dir+"/")))
	}
	return ts
}

func TestDLRM(t *testing.T) {
	ts := loadDir(t, "param/dlrm_kineto")
	if len(ts) != 8 {
		t.Fatalf("%d traces", len(ts))
	}
	r := compute(ts, ranks.Options{})
	for i, k := range r.Ranks {
		if k.Rank != i || k.Steps != 1 {
			t.Errorf("rank %d: %+v", i, k)
		}
	}
	if r.Straggler < 0 || r.MatchedCollectives == 0 {
		t.Errorf("no straggler: %+v", r)
	}
	testutil.CompareResult(t, "dlrm_kineto", r, report.WriteRanks)
}

// HTA's comm_comp_overlap on trace_filter (reference/hta_out_trace_filter.txt,
// last step dropped): rank 0 11.81 %, rank 1 20.05 %.
func TestTraceFilterHTA(t *testing.T) {
	ts := loadDir(t, "hta/trace_filter")
	r := compute(ts, ranks.Options{DropLastStep: true})
	want := []float64{11.81, 20.05}
	for i, k := range r.Ranks {
		if d := k.OverlapPct - want[i]; d > 0.01 || d < -0.01 {
			t.Errorf("rank %d overlap %.4f%%, HTA %.2f%%", k.Rank, k.OverlapPct, want[i])
		}
	}
	testutil.CompareResult(t, "trace_filter", compute(ts, ranks.Options{}), report.WriteRanks)
}

// Two ranks of two steps; rank 1 is slow (its compute takes 300 us longer),
// so rank 0's all-reduce waits for it: rank 0's collective lasts 400 us,
// rank 1's 100 us.
func rankFixture(rank int, compute, comm int) string {
	return fmt.Sprintf(`{"distributedInfo":{"backend":"nccl","rank":%d,"world_size":2},"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":5,"args":{"correlation":1}},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":5,"args":{"correlation":2}},
{"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":30,"dur":%d,"args":{"correlation":1,"device":0,"stream":7}},
{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float","pid":0,"tid":8,"ts":%d,"dur":%d,"args":{"correlation":2,"device":0,"stream":8}}
]}`, rank, compute, 30+compute, comm)
}

func TestTwoRanksOneSlow(t *testing.T) {
	r := compute([]*trace.Trace{tracetest.ReadString(t, rankFixture(1, 400, 100)), tracetest.ReadString(t, rankFixture(0, 100, 400))}, ranks.Options{})
	if len(r.Ranks) != 2 || r.Ranks[0].Rank != 0 || r.Ranks[1].Rank != 1 {
		t.Fatalf("%+v", r.Ranks)
	}
	if r.Straggler != 1 || r.MatchedCollectives != 1 || r.Ranks[0].CommWaitUs != 300 || r.Ranks[1].LastArrivals != 1 {
		t.Errorf("straggler: %+v", r)
	}
	// rank 0: gemm 30-130, nccl 130-530; rank 1: gemm 30-430, nccl 430-530.
	if r.Ranks[0].OverlapPct != 0 || r.Ranks[1].OverlapPct != 0 || r.Ranks[0].CommPct < 75.4 || r.Ranks[0].CommPct > 75.5 {
		t.Errorf("overlap: %+v", r.Ranks)
	}
	// Both steps end at 530 us on device.
	if r.Ranks[0].MeanStepUs != 530 || r.Ranks[1].MeanStepUs != 530 || r.ImbalancePct != 0 {
		t.Errorf("steps: %+v", r)
	}
	var b bytes.Buffer
	report.WriteRanks(&b, r)
	if !strings.Contains(b.String(), "straggler (*): rank 1") {
		t.Error(b.String())
	}
}

func TestOneRankNoSteps(t *testing.T) {
	r := compute([]*trace.Trace{tracetest.ReadString(t, `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":0,"dur":10}]}`)}, ranks.Options{})
	if r.Straggler != -1 || len(r.Ranks) != 1 || r.Ranks[0].Rank != 0 || r.Ranks[0].Steps != 1 {
		t.Errorf("%+v", r)
	}
}

// On CPU-only (gloo) traces the collectives are host ops: they count as
// communication, as in the step breakdown.
func TestGlooCollectivesAreCommunication(t *testing.T) {
	fixture := func(rank int, wait int) string {
		return fmt.Sprintf(`{"distributedInfo":{"backend":"gloo","rank":%d,"world_size":2},"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":500},
{"ph":"X","cat":"cpu_op","name":"c10d::allreduce_","pid":1,"tid":1,"ts":600,"dur":%d},
{"ph":"X","cat":"user_annotation","name":"gloo:all_reduce","pid":1,"tid":1,"ts":610,"dur":%d}]}`, rank, wait, wait-20)
	}
	r := compute([]*trace.Trace{tracetest.ReadString(t, fixture(0, 300)), tracetest.ReadString(t, fixture(1, 100))}, ranks.Options{})
	for _, rk := range r.Ranks {
		want := map[int]float64{0: 300, 1: 100}[rk.Rank]
		if rk.CommUs != want || rk.Collectives != 1 {
			t.Errorf("rank %d: communication %v µs in %d collectives, want %v in 1", rk.Rank, rk.CommUs, rk.Collectives, want)
		}
	}
}
