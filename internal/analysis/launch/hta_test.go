package launch

import (
	"math"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// HTA's cuda_kernel_launch_stats from reference/hta_out_*.txt (last step
// dropped), to the printed precision. Traces with ns decimals match under
// HTARounding (HTA rounds starts up and ends down to whole µs); rounded
// marks them, and exact gives our own figures there. amd_trace is not
// compared: HTA knows only CUDA launch names and counts 0 launches where we
// count 16 hipLaunchKernel calls.
var htaLaunch = []struct {
	file                      string
	rounded                   bool
	n, short, rtOut, delayOut int
	mean                      float64
	exact                     [2]int // short, runtime outliers without rounding
}{
	{file: "hta/df_index_resolver/df_index_resolver.json.gz", n: 17832, short: 9686, rtOut: 2, delayOut: 6605, mean: 576.5},
	{file: "hta/trace_diff/control/control.json.gz", n: 7875, short: 3042, rtOut: 25, delayOut: 5111, mean: 2014.61},
	{file: "hta/trace_diff/test/test.json.gz", n: 8310, short: 4551, rtOut: 65, delayOut: 8142, mean: 38138.18},
	{file: "hta/trace_filter/sampled_rank-0.json.gz", n: 602, short: 140, delayOut: 469, mean: 16412.16},
	{file: "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", n: 98, short: 23, rtOut: 11, delayOut: 43, mean: 400.85},
	{file: "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", rounded: true,
		n: 4876, short: 2173, rtOut: 663, delayOut: 4713, mean: 66048.57, exact: [2]int{2186, 675}},
	{file: "hta/nccl_parser_config/nccl_data.json.gz", rounded: true,
		n: 2516, short: 1347, delayOut: 180, mean: 28.07, exact: [2]int{1380, 0}},
}

func TestHTAConformance(t *testing.T) {
	for _, ref := range htaLaunch {
		t.Run(ref.file, func(t *testing.T) {
			tr := tracetest.Load(t, ref.file)
			r := Compute(tr, Options{DropLastStep: true, HTARounding: ref.rounded})
			if r.Launched != ref.n || r.ShortKernels != ref.short || r.RuntimeOutliers != ref.rtOut || r.DelayOutliers != ref.delayOut {
				t.Errorf("n %d short %d runtime outliers %d delay outliers %d, want %d %d %d %d",
					r.Launched, r.ShortKernels, r.RuntimeOutliers, r.DelayOutliers, ref.n, ref.short, ref.rtOut, ref.delayOut)
			}
			if math.Abs(r.LaunchDelay.MeanUs-ref.mean) > 0.005 {
				t.Errorf("mean launch delay %.3f, want %v", r.LaunchDelay.MeanUs, ref.mean)
			}
			if ref.rounded {
				r := Compute(tr, Options{DropLastStep: true})
				if got := [2]int{r.ShortKernels, r.RuntimeOutliers}; got != ref.exact {
					t.Errorf("exact times: short, runtime outliers %v, want %v", got, ref.exact)
				}
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
