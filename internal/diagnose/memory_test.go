package diagnose

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/memory"
)

// memory.capacity fires when a GPU's peak reserved memory reaches
// MemoryPct of the device, and stays silent below it and for the host's
// memory, whose size the trace does not give.
func TestMemoryCapacityFinding(t *testing.T) {
	for _, c := range []struct {
		name  string
		dev   memory.Device
		fires bool
	}{
		{"near capacity", memory.Device{Device: "cuda:0", DeviceType: 1, TotalBytes: 80e9, PeakReservedPct: 95, PeakAllocatedPct: 88}, true},
		{"room left", memory.Device{Device: "cuda:0", DeviceType: 1, TotalBytes: 80e9, PeakReservedPct: 60, PeakAllocatedPct: 50}, false},
		{"the host", memory.Device{Device: "cpu", DeviceType: 0, TotalBytes: 64e9, PeakReservedPct: 99}, false},
	} {
		s := &state{p: Default, device: true, step: 1000, steps: 1, share: map[Class]float64{}, ev: map[Class][]Evidence{},
			in: Analyses{Memory: &memory.Result{Devices: []memory.Device{c.dev}}}, d: &Diagnosis{}}
		s.memoryPressure()
		s.memoryCapacityFinding()
		f := findRule(s.d.Findings, "memory.capacity")
		if (f != nil) != c.fires {
			t.Errorf("%s: finding %+v, want fired %v", c.name, f, c.fires)
		}
		if f != nil && (len(f.Measured) != 2 || f.Measured[0].Value != 95 || f.SavingUs != 0) {
			t.Errorf("%s: measured %+v, saving %v: want the peak reserved and allocated shares, no saving", c.name, f.Measured, f.SavingUs)
		}
	}
}
