package report

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/launch"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// TestAnalysesGolden renders analyses 1-5 on the shared traces, as text
// (testdata/<analysis>/<trace>.txt) and JSON (.json); rewrite with
// go test ./internal/report -update.
func TestAnalysesGolden(t *testing.T) {
	for name, rel := range tracetest.Golden {
		t.Run(name, func(t *testing.T) {
			tr := tracetest.Load(t, rel)
			for _, def := range []breakdown.Def{"default", breakdown.TB} {
				br, err := breakdown.Compute(tr, breakdown.Options{Definition: def})
				if err != nil {
					t.Fatal(err)
				}
				testutil.CompareResult(t, "breakdown/"+name+"."+string(def), br, WriteBreakdown)
				g, err := gpu.Compute(tr, gpu.Options{Definition: def})
				if err != nil {
					t.Fatal(err)
				}
				testutil.CompareResult(t, "gpu/"+name+"."+string(def), g, WriteGPU)
			}
			testutil.CompareResult(t, "idle/"+name, idle.Compute(tr, idle.Options{}), WriteIdle)
			testutil.CompareResult(t, "launch/"+name, launch.Compute(tr, launch.Options{}), WriteLaunch)
			testutil.CompareResult(t, "syncs/"+name, syncs.Compute(tr, syncs.Options{}), WriteSyncs)
		})
	}
}
