package critpath_test

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/critpath"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

const simpleAdd = "hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"

// The known value HTA's own test asserts.
func TestSimpleAddKnownValue(t *testing.T) {
	tr := tracetest.Load(t, simpleAdd)
	r := critpath.Compute(tr, critpath.Options{Annotation: "[param|pytorch.model.alex_net|0|0|0|measure|forward]", Instance: 1})
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if r.PathNodes != 315 {
		t.Errorf("critical path has %d nodes, HTA finds 315", r.PathNodes)
	}
	testutil.CompareResult(t, "simple_add_forward_1", r, report.WriteCritPath)
}

func TestGolden(t *testing.T) {
	for name, c := range map[string]struct {
		rel string
		opt critpath.Options
	}{
		"alexnet":       {"hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", critpath.Options{}},
		"ns_resolution": {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", critpath.Options{}},
		"event_sync":    {"hta/critical_path/cuda_event_sync/event_sync_trace.json.gz", critpath.Options{}},
	} {
		t.Run(name, func(t *testing.T) {
			testutil.CompareResult(t, name, critpath.Compute(tracetest.Load(t, c.rel), c.opt), report.WriteCritPath)
		})
	}
}
