package idle

import (
	"math"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// HTA's idle_time_breakdown from reference/hta_out_*.txt (µs), HTA's
// defaults: last step dropped, 30 µs threshold. Traces with integer µs
// timestamps match to the µs. Known differences, not asserted: on traces
// with ns decimals HTA's own arithmetic differs (ns_resolution: HTA host
// 1709 / kernel 8404 µs, ours 1347 / 5106 over the same 4876 events;
// nccl_data: 357247 / 2155 vs 355485 / 1414; amd_trace: 8780 vs 8763).
var htaIdle = []struct {
	file                string
	stream              int64
	host, kernel, other float64
}{
	{"hta/df_index_resolver/df_index_resolver.json.gz", 7, 791330, 16727, 73829},
	{"hta/trace_diff/control/control.json.gz", 21, 237710, 71, 0},
	{"hta/trace_diff/test/test.json.gz", 16, 422925, 829, 0},
	{"hta/trace_filter/sampled_rank-0.json.gz", 23, 596037, 70, 34},
}

func TestHTAConformance(t *testing.T) {
	for _, ref := range htaIdle {
		t.Run(ref.file, func(t *testing.T) {
			r := Compute(tracetest.Load(t, ref.file), Options{DropLastStep: true})
			var st *Stream
			for i := range r.Streams {
				if r.Streams[i].Stream == ref.stream {
					st = &r.Streams[i]
				}
			}
			if st == nil {
				t.Fatalf("no stream %d in %+v", ref.stream, r.Streams)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"host wait", st.HostWaitUs, ref.host}, {"kernel wait", st.KernelWaitUs, ref.kernel}, {"other", st.OtherUs, ref.other}} {
				if math.Abs(c.got-c.want) > 0.5 {
					t.Errorf("%s = %.3f µs, want %v", c.name, c.got, c.want)
				}
			}
		})
	}
}
