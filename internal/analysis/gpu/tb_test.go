package gpu

import (
	"math"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// GPU panel of reference/tb_plugin_out.txt: utilization, est. SM
// efficiency, est. achieved occupancy (%), tensor-core share (-1: not
// shown by the plugin).
var tbGPU = []struct {
	file           string
	dev            int
	util, sm, occ  float64
	tensorCoresPct float64
}{
	{"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 0, 96.83, 94.92, 46.45, 0.0},
	{"hta/nccl_parser_config/nccl_data.json.gz", 0, 23.26, 16.87, 35.31, 16.38},
	{"hta/negative_queue_length_values_check/rank0.json.gz", 0, 32.24, 17.49, 12.54, -1},
	{"hta/trace_filter/sampled_rank-0.json.gz", 0, 44.49, 20.76, 21.04, -1},
	{"hta/trace_filter/sampled_rank-1.json.gz", 1, 46.46, 25.19, 25.19, -1},
	{"hta/df_index_resolver/df_index_resolver.json.gz", 1, 56.27, 34.12, 31.95, -1},
	{"hta/trace_diff/control/control.json.gz", 3, 79.38, 59.21, 32.46, -1},
	{"hta/trace_diff/test/test.json.gz", 1, 83.44, 70.53, 35.85, -1},
}

func round2(v float64) float64 { return math.RoundToEven(v*100) / 100 }

func TestTBConformance(t *testing.T) {
	for _, ref := range tbGPU {
		t.Run(ref.file, func(t *testing.T) {
			r, err := Compute(tracetest.Load(t, ref.file), Options{Definition: breakdown.TB})
			if err != nil {
				t.Fatal(err)
			}
			var d *Device
			for i := range r.Devices {
				if r.Devices[i].Device == ref.dev {
					d = &r.Devices[i]
				}
			}
			if d == nil {
				t.Fatalf("no device %d in %+v", ref.dev, r.Devices)
			}
			if got := round2(d.UtilizationPct); got != ref.util {
				t.Errorf("utilization %.4f, want %v", d.UtilizationPct, ref.util)
			}
			if d.SMEfficiencyPct == nil || round2(*d.SMEfficiencyPct) != ref.sm {
				t.Errorf("SM efficiency %v, want %v", fmtp(d.SMEfficiencyPct), ref.sm)
			}
			if d.OccupancyPct == nil || round2(*d.OccupancyPct) != ref.occ {
				t.Errorf("occupancy %v, want %v", fmtp(d.OccupancyPct), ref.occ)
			}
			if ref.tensorCoresPct >= 0 && round2(d.TBTensorCorePct) != ref.tensorCoresPct {
				t.Errorf("TB tensor cores %.4f, want %v", d.TBTensorCorePct, ref.tensorCoresPct)
			}
		})
	}
}

func fmtp(p *float64) any {
	if p == nil {
		return "nil"
	}
	return *p
}
