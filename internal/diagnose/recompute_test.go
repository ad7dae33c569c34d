package diagnose

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
)

// Recomputed forward at >= MinFinding of the step is a finding, with the
// device's time when there is a device; under it, with memory near
// capacity, or with none recomputed, it stays silent.
func TestRecomputeFinding(t *testing.T) {
	rec := func(hostUs, deviceUs float64) *optable.OpTable {
		return &optable.OpTable{Recompute: &optable.Recompute{Calls: 40, HostUs: hostUs, DeviceUs: deviceUs,
			Ops: []optable.RecomputeOp{{Name: "aten::linear", Calls: 30, HostUs: hostUs * 0.9}, {Name: "aten::layer_norm", Calls: 10, HostUs: hostUs * 0.1}}}}
	}
	for _, c := range []struct {
		name    string
		ops     *optable.OpTable
		device  bool
		memory  bool
		atStake float64 // 0: silent
	}{
		{"cpu", rec(1100, 0), false, false, 220},                  // 5 steps of a 1000 µs step: 22%
		{"gpu: device time", rec(100, 1500), true, false, 300},    // the host's share is small, the kernels' is not
		{"small", rec(200, 0), false, false, 0},                   // 4% of the step
		{"memory near capacity", rec(1100, 0), false, true, 0},    // checkpointing is what fits it
		{"no checkpointing", &optable.OpTable{}, false, false, 0}, // nothing recomputed
	} {
		s := &state{p: Default, step: 1000, steps: 5, device: c.device, share: map[Class]float64{}, ev: map[Class][]Evidence{}, d: &Diagnosis{}, in: Analyses{Ops: c.ops}}
		if c.memory {
			s.ev[Memory] = []Evidence{{"peak reserved device memory", 95, "%", "memory"}}
		}
		s.recomputeFinding()
		f := findingOf(s.d, "autograd.recompute")
		switch {
		case c.atStake == 0 && f != nil:
			t.Errorf("%s: %+v", c.name, f)
		case c.atStake > 0 && (f == nil || f.AtStakeUs != c.atStake || f.Where[0].Name != "aten::linear" || (f.Class == GPUCompute) != c.device):
			t.Errorf("%s: %+v, want %v µs at stake", c.name, f, c.atStake)
		}
	}
}
