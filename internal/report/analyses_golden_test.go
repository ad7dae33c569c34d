package report

import (
	"bytes"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify/testkit"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/launch"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
)

// TestAnalysesGolden renders analyses 1-5 on the shared traces, as text
// (testdata/<analysis>/<trace>.txt) and JSON (.json); rewrite with
// go test ./internal/report -update.
func TestAnalysesGolden(t *testing.T) {
	for name, rel := range testkit.Golden {
		t.Run(name, func(t *testing.T) {
			tr := testkit.Load(t, rel)
			for _, def := range []string{"default", "tb"} {
				br, err := breakdown.Compute(tr, breakdown.Options{Definition: def})
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := WriteBreakdown(&b, br); err != nil {
					t.Fatal(err)
				}
				testkit.Compare(t, "breakdown/"+name+"."+def+".txt", b.Bytes())
				testkit.Compare(t, "breakdown/"+name+"."+def+".json", testkit.JSON(t, br))
				g, err := gpu.Compute(tr, gpu.Options{Definition: def})
				if err != nil {
					t.Fatal(err)
				}
				b.Reset()
				if err := WriteGPU(&b, g); err != nil {
					t.Fatal(err)
				}
				testkit.Compare(t, "gpu/"+name+"."+def+".txt", b.Bytes())
				testkit.Compare(t, "gpu/"+name+"."+def+".json", testkit.JSON(t, g))
			}
			var b bytes.Buffer
			id := idle.Compute(tr, idle.Options{})
			if err := WriteIdle(&b, id); err != nil {
				t.Fatal(err)
			}
			testkit.Compare(t, "idle/"+name+".txt", b.Bytes())
			testkit.Compare(t, "idle/"+name+".json", testkit.JSON(t, id))
			b.Reset()
			l := launch.Compute(tr, launch.Options{})
			if err := WriteLaunch(&b, l); err != nil {
				t.Fatal(err)
			}
			testkit.Compare(t, "launch/"+name+".txt", b.Bytes())
			testkit.Compare(t, "launch/"+name+".json", testkit.JSON(t, l))
			b.Reset()
			s := syncs.Compute(tr, syncs.Options{})
			if err := WriteSyncs(&b, s); err != nil {
				t.Fatal(err)
			}
			testkit.Compare(t, "syncs/"+name+".txt", b.Bytes())
			testkit.Compare(t, "syncs/"+name+".json", testkit.JSON(t, s))
		})
	}
}
