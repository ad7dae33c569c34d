package launch

import (
	"math"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// HTA's cuda_kernel_launch_stats from reference/hta_out_*.txt (last step
// dropped). Counts match exactly; HTA's mean launch delay differs from
// ours by up to 0.2 µs (its float arithmetic), so the mean is checked to
// 0.5 µs. ns_resolution's short-kernel and runtime-outlier counts differ
// (2186/675 vs HTA 2173/663): ns-decimal durations compared exactly here.
var htaLaunch = []struct {
	file                      string
	n, short, rtOut, delayOut int
	mean                      float64
}{
	{"hta/df_index_resolver/df_index_resolver.json.gz", 17832, 9686, 2, 6605, 576.5},
	{"hta/trace_diff/control/control.json.gz", 7875, 3042, 25, 5111, 2014.61},
	{"hta/trace_diff/test/test.json.gz", 8310, 4551, 65, 8142, 38138.18},
	{"hta/trace_filter/sampled_rank-0.json.gz", 602, 140, 0, 469, 16412.16},
}

func TestHTAConformance(t *testing.T) {
	for _, ref := range htaLaunch {
		t.Run(ref.file, func(t *testing.T) {
			r := Compute(tracetest.Load(t, ref.file), Options{DropLastStep: true})
			if r.Launched != ref.n || r.ShortKernels != ref.short || r.RuntimeOutliers != ref.rtOut || r.DelayOutliers != ref.delayOut {
				t.Errorf("n %d short %d runtime outliers %d delay outliers %d, want %d %d %d %d",
					r.Launched, r.ShortKernels, r.RuntimeOutliers, r.DelayOutliers, ref.n, ref.short, ref.rtOut, ref.delayOut)
			}
			if math.Abs(r.LaunchDelay.MeanUs-ref.mean) > 0.5 {
				t.Errorf("mean launch delay %.3f, want %v", r.LaunchDelay.MeanUs, ref.mean)
			}
		})
	}
}

func TestQueue(t *testing.T) {
	r := Compute(tracetest.Load(t, "hta/negative_queue_length_values_check/rank0.json.gz"), Options{})
	for _, q := range r.Queues {
		if q.Negative {
			t.Errorf("stream %d: queue length went negative", q.Stream)
		}
	}
	r = Compute(tracetest.Load(t, "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"), Options{DropLastStep: true})
	if len(r.Queues) != 1 || r.Queues[0].Max != 1022 {
		t.Errorf("ns_resolution queues %+v, want max 1022 on stream 7 (HTA)", r.Queues)
	}
}
