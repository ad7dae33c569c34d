package live

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
)

// The cause on snapshots the agent wrote while real programs ran
// (scripts/record-live-snapshots.sh): it names input-bound where the
// steps wait for the DataLoader, gc-bound where gc.collect() fills them,
// cpu-compute-bound for matrix products and host-bound for a Python loop
// (the sampler's split), and stays undetermined where the step sleeps: a
// blocked time no class holds.
func TestRecordedCauses(t *testing.T) {
	for _, c := range []struct {
		file       string
		class      diagnose.Class
		confidence string
	}{
		{"snap-input.json", diagnose.Input, "high"},
		{"snap-workers.json", diagnose.Input, "high"},
		{"snap-gc.json", diagnose.GC, "high"},
		{"snap-cpu.json", diagnose.CPUCompute, "high"},
		{"snap-python.json", diagnose.Host, "high"},
		{"snap-sleep.json", diagnose.Undetermined, "none"},
	} {
		t.Run(c.file, func(t *testing.T) {
			s := readSnap(t, c.file)
			r := Build("", []*Snapshot{s}).Ranks[0]
			want := c.confidence
			if busy := r.CPUWaitAll >= diagnose.Default.CPUWaitNote; busy && want != "none" {
				// recorded on a loaded machine: the diagnosis's caveat
				want = lower(want)
				if r.Cause != nil && !strings.Contains(r.Cause.Why, "the machine is busy") {
					t.Errorf("a busy machine not said: %q", r.Cause.Why)
				}
			}
			if r.Cause == nil || r.Cause.Class != c.class || r.Cause.Confidence != want {
				t.Fatalf("cause %+v, want %s (%s)", r.Cause, c.class, want)
			}
			if r.Split != r.BreakdownN || r.Rest != 0 {
				t.Errorf("%d of %d steps split by the scheduler's counters, rest %v", r.Split, r.BreakdownN, r.Rest)
			}
			if sum := r.DataWait + r.GC + r.Running + r.Blocked + r.CPUWait + r.Rest; math.Abs(sum-1) > 1e-9 {
				t.Errorf("the parts add up to %v", sum)
			}
			// every step was sampled: the split's parts add up to theirs
			if r.Sampled != r.BreakdownN || !r.OnCPUSplit || !r.BlockedSplit {
				t.Errorf("%d of %d steps sampled, split on CPU %v, blocked %v", r.Sampled, r.BreakdownN, r.OnCPUSplit, r.BlockedSplit)
			}
			if d := r.Python + r.Native - r.Running; math.Abs(d) > 1e-9 {
				t.Errorf("Python %v + native %v != on CPU %v", r.Python, r.Native, r.Running)
			}
			if d := r.Device + r.Comm + r.RankWait + r.OtherBlocked - r.Blocked; math.Abs(d) > 1e-9 {
				t.Errorf("the blocked parts %+v != blocked %v", r, r.Blocked)
			}
			// one process, no collective, no device: nothing of either
			if r.Comm != 0 || r.RankWait != 0 || r.Device != 0 {
				t.Errorf("collectives %v, other ranks %v, device %v", r.Comm, r.RankWait, r.Device)
			}
			// the first steps alone: start-up, not judged
			early := *s
			early.Steps = s.Steps[:BreakdownSteps]
			if e := Build("", []*Snapshot{&early}).Ranks[0].Cause; e == nil || e.Class != diagnose.Undetermined {
				t.Errorf("on the first %d steps: %+v", BreakdownSteps, e)
			}
		})
	}
	// the loader's batch_size (8) times the steps' batches
	r := Build("", []*Snapshot{readSnap(t, "snap-input.json")}).Ranks[0]
	if math.Abs(r.SamplesPerS-8*r.Rate) > 1e-6*r.SamplesPerS {
		t.Errorf("%v samples/s at %v steps/s of 8 samples", r.SamplesPerS, r.Rate)
	}
	if r := Build("", []*Snapshot{readSnap(t, "snap-cpu.json")}).Ranks[0]; r.SamplesPerS != 0 {
		t.Errorf("samples/s %v without a DataLoader", r.SamplesPerS)
	}
}

func readSnap(t *testing.T, name string) *Snapshot {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(name, b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// shareSnap: 40 steps of 10 ms, each waiting wait of it for data, gc of
// it in GC, cpuWait of it for a CPU, the rest on a CPU.
func shareSnap(t *testing.T, wait, gc, cpuWait float64) Rank {
	t.Helper()
	var rows [][]any
	for i := 1; i <= 40; i++ {
		d := 0.010
		rows = append(rows, []any{i, float64(i) * d, d, wait * d, gc * d, nil, nil, (1 - cpuWait) * d, cpuWait * d, nil, nil, nil, nil, nil, nil})
	}
	b, _ := json.Marshal(map[string]any{"format": Format, "tag": "rank0", "step": 40, "state": "off", "steps": rows})
	s, err := Parse("rank0.json", b)
	if err != nil {
		t.Fatal(err)
	}
	return Build("", []*Snapshot{s}).Ranks[0]
}

// The diagnosis's bars: a share and a margin over the most the unsplit
// rest could save (all of it), else undetermined.
func TestCauseThresholds(t *testing.T) {
	for _, c := range []struct {
		name              string
		wait, gc, cpuWait float64
		class             diagnose.Class
		confidence        string
	}{
		{"mostly data wait", 0.9, 0, 0, diagnose.Input, "high"},
		{"data wait 62%", 0.62, 0, 0, diagnose.Input, "medium"},      // saves 55.8%, the rest 38%: margin 0.18
		{"data wait 55%", 0.55, 0, 0, diagnose.Input, "low"},         // saves 49.5%, the rest 45%: margin 0.045
		{"data wait 50%", 0.50, 0, 0, diagnose.Undetermined, "none"}, // saves 45%, the rest could save 50%
		{"little of either", 0.03, 0.01, 0, diagnose.Undetermined, "none"},
		{"GC", 0.0, 0.8, 0, diagnose.GC, "high"},
		{"busy machine", 0.9, 0, 0.5, diagnose.Input, "medium"}, // lowered: CPU wait >= CPUWaitNote
	} {
		t.Run(c.name, func(t *testing.T) {
			r := shareSnap(t, c.wait, c.gc, c.cpuWait)
			if r.Cause == nil || r.Cause.Class != c.class || r.Cause.Confidence != c.confidence {
				t.Errorf("cause %+v, want %s (%s)", r.Cause, c.class, c.confidence)
			}
		})
	}
}

// Without the scheduler's counters (not Linux) the rest is one part, and
// the cause needs only the data wait and GC.
func TestBreakdownWithoutSchedstat(t *testing.T) {
	var rows [][]any
	for i := 1; i <= 30; i++ {
		rows = append(rows, []any{i, float64(i) * 0.01, 0.01, 0.008, 0.0, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil})
	}
	b, _ := json.Marshal(map[string]any{"format": Format, "tag": "rank0", "step": 30, "state": "off", "steps": rows})
	s, err := Parse("rank0.json", b)
	if err != nil {
		t.Fatal(err)
	}
	r := Build("", []*Snapshot{s}).Ranks[0]
	if r.Split != 0 || math.Abs(r.Rest-0.2) > 1e-9 || r.Running != 0 || r.Blocked != 0 || r.CPUWait != 0 {
		t.Errorf("breakdown %+v", r)
	}
	if got := breakdown(r); got != "last 20 steps: data wait 80.0% · GC 0.0% · rest 20.0%" {
		t.Errorf("breakdown line %q", got)
	}
	if r.Cause == nil || r.Cause.Class != diagnose.Input || r.Cause.Confidence != "high" {
		t.Errorf("cause %+v", r.Cause)
	}
}

// splitSnap: 40 steps of 10 ms on a CPU cpu of the step (CPU-only, or
// with CUDA), the rest blocked, whose sampler saw python, native, device,
// comm and other (shares of the step).
func splitSnap(t *testing.T, tag string, cuda bool, cpu float64, sampled [5]float64) *Snapshot {
	t.Helper()
	var rows [][]any
	for i := 1; i <= 40; i++ {
		d := 0.010
		var c any
		if cuda {
			c = 1 << 30
		}
		rows = append(rows, []any{i, float64(i) * d, d, 0.0, 0.0, nil, c, cpu * d, 0.0, nil,
			sampled[0] * d, sampled[1] * d, sampled[2] * d, sampled[3] * d, sampled[4] * d})
	}
	b, _ := json.Marshal(map[string]any{"format": Format, "tag": tag, "step": 40, "state": "off", "steps": rows})
	s, err := Parse(tag+".json", b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The sampler's split names host-bound (Python), cpu-compute-bound
// (native code) and communication-bound (collectives) with the
// diagnosis's bars, and nothing where they do not allow it: with CUDA
// (Python and native time are then the device's idle or not), an even
// split, a sleep, a device sync (the device busy, not idle).
func TestCauseFromSplit(t *testing.T) {
	for _, c := range []struct {
		name       string
		cuda       bool
		cpu        float64
		sampled    [5]float64 // python, native, device, comm, other
		class      diagnose.Class
		confidence string
	}{
		{"Python 80%", false, 0.9, [5]float64{0.8, 0.1, 0, 0, 0.1}, diagnose.Host, "high"},
		{"Python 80% with CUDA", true, 0.9, [5]float64{0.8, 0.1, 0, 0, 0.1}, diagnose.Undetermined, "none"},
		{"native 85%", false, 0.9, [5]float64{0.05, 0.85, 0, 0, 0.1}, diagnose.CPUCompute, "high"},
		{"Python and native alike", false, 0.9, [5]float64{0.45, 0.45, 0, 0, 0.1}, diagnose.Undetermined, "none"},
		{"a sleep", false, 0.1, [5]float64{0.05, 0.05, 0, 0, 0.9}, diagnose.Undetermined, "none"},
		{"device syncs", true, 0.1, [5]float64{0.05, 0.05, 0.9, 0, 0}, diagnose.Undetermined, "none"},
		{"collectives", false, 0.2, [5]float64{0, 0.2, 0, 0.8, 0}, diagnose.Comm, "high"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Build("", []*Snapshot{splitSnap(t, "rank0", c.cuda, c.cpu, c.sampled)}).Ranks[0]
			if r.Cause == nil || r.Cause.Class != c.class || r.Cause.Confidence != c.confidence {
				t.Errorf("cause %+v, want %s (%s)", r.Cause, c.class, c.confidence)
			}
			if r.RankWait != 0 {
				t.Errorf("one rank waiting %v for others", r.RankWait)
			}
			if c.class == diagnose.CPUCompute && !strings.Contains(r.Cause.Why, "framework-overhead") {
				t.Errorf("native code named without its caveat: %q", r.Cause.Why)
			}
		})
	}
}

// Two ranks, one sleeping in its step while the other waits in the
// all-reduce: the one with the least time in collectives spent the
// transfer alone, the other's excess is waiting for it.
func TestRankWait(t *testing.T) {
	v := Build("", []*Snapshot{
		splitSnap(t, "rank0", false, 0.2, [5]float64{0, 0.2, 0, 0.8, 0}),
		splitSnap(t, "rank1", false, 0.2, [5]float64{0, 0.2, 0, 0.05, 0.75}),
	})
	r0, r1 := v.Ranks[0], v.Ranks[1]
	if math.Abs(r0.RankWait-0.75) > 1e-9 || math.Abs(r0.Comm-0.05) > 1e-9 || r1.RankWait != 0 || math.Abs(r1.Comm-0.05) > 1e-9 {
		t.Errorf("rank0 collectives %v, waiting %v; rank1 %v, %v", r0.Comm, r0.RankWait, r1.Comm, r1.RankWait)
	}
	if c := r0.Cause; c == nil || c.Class != diagnose.Comm || !strings.Contains(c.Why, "75% of the step waiting for other ranks") {
		t.Errorf("rank0's cause %+v", c)
	}
	if c := r1.Cause; c == nil || c.Class != diagnose.Undetermined {
		t.Errorf("rank1's cause %+v", c)
	}
	if l := Line(v); !strings.Contains(l, "blocked 80.0% (device 0.0%, collectives 5.0%, other ranks 75.0%, other 0.0%)") {
		t.Errorf("line %q", l)
	}
}
