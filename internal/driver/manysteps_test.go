package driver

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
)

// The analyses' work grows with the events, not with the steps: the same
// ops cut into 10,000 steps rather than 1,000 cost about the same per
// event. The measure is the bytes the analyses and the diagnosis
// allocate (what load cannot change); the outlier check's copy of every
// other step's duration per step made it 19x the bytes per event
// (11,213 against 578). Work that allocates nothing (a scan) escapes it:
// BenchmarkAnalyzeSteps with -cpuprofile finds that.
func TestWorkIsLinearInSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and analyses two traces of 20-70 MB")
	}
	ios, _, _, _ := iostreams.Test()
	perEvent := func(steps, opsPerStep int) float64 {
		path := filepath.Join(t.TempDir(), "steps.json")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tracegen.Generate(f, tracegen.Options{Seed: 1, Steps: steps, OpsPerStep: opsPerStep, WorldSize: 1}); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		res, _, err := Load(ios, []string{path}, true)
		if err != nil || len(res.Traces) != 1 {
			t.Fatal(err, res.Failures)
		}
		if n := len(res.Traces[0].Steps); n != steps {
			t.Fatalf("%d steps read, %d generated", n, steps)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := Build(res, 0, DefaultOptions())
		runtime.ReadMemStats(&after)
		if len(r.Traces) != 1 || len(r.Traces[0].Window.Steps) != steps {
			t.Fatalf("the report has no window of %d steps", steps)
		}
		return float64(after.TotalAlloc-before.TotalAlloc) / float64(res.Traces[0].Events.Len())
	}
	few, many := perEvent(1000, 10), perEvent(10000, 1)
	t.Logf("bytes allocated per event: %.0f at 1,000 steps, %.0f at 10,000", few, many)
	if many > 2*few {
		t.Errorf("10,000 steps allocate %.0f bytes per event, 1,000 steps %.0f: more than twice as much; some analysis does per-step work over all steps or events (BenchmarkAnalyzeSteps, -cpuprofile, finds it)", many, few)
	}
}
