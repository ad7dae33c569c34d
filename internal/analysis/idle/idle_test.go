package idle

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// A communication stream idles until compute hands it data: its gaps are
// not host waits to explain (nccl_data's five largest were NCCL's before).
func TestTopHostWaitsSkipCommunication(t *testing.T) {
	r := Compute(tracetest.Load(t, "hta/nccl_parser_config/nccl_data.json.gz"), Options{})
	if len(r.TopHostWaits) == 0 {
		t.Fatal("no host waits")
	}
	for _, g := range r.TopHostWaits {
		if classify.IsCommKernel(g.Kernel) {
			t.Errorf("host wait ending in %s", g.Kernel)
		}
	}
}
