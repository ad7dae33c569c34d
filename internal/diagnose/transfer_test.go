package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
)

// copy.h2d fires on copies not overlapped with kernels: from pageable
// memory it points at pinning, within the device at the ops that copy;
// under MinFinding it stays silent.
func TestCopyFinding(t *testing.T) {
	copies := func(share float64, cs ...gpu.Memcpy) *state {
		return &state{p: Default, device: true, step: 1000, steps: 1, share: map[Class]float64{Copy: share}, ev: map[Class][]Evidence{},
			in: Analyses{GPU: &gpu.Result{Devices: []gpu.Device{{Memcpy: cs}}}}, d: &Diagnosis{}}
	}
	pageable := gpu.Memcpy{Direction: "HtoD", HostMemory: "pageable", Count: 10, Bytes: 4e8, TimeUs: 300}
	pinned := gpu.Memcpy{Direction: "HtoD", HostMemory: "pinned", Count: 10, Bytes: 4e8, TimeUs: 300}
	dtod := gpu.Memcpy{Direction: "DtoD", Count: 10, Bytes: 4e8, TimeUs: 300}
	for _, c := range []struct {
		name  string
		s     *state
		title string // "": silent
		want  string
	}{
		{"pageable", copies(0.3, pageable), "Host-device copies take 30% of the step", "pin_memory"},
		{"pinned", copies(0.3, pinned), "Host-device copies take 30% of the step", "already come from pinned memory"},
		{"device to device", copies(0.3, dtod, gpu.Memcpy{Direction: "HtoD", TimeUs: 100}), "most of the copy time device-to-device", "views, in-place ops"},
		{"small", copies(Default.MinFinding/2, pageable), "", ""},
	} {
		c.s.copyFinding()
		got := ""
		if len(c.s.d.Findings) > 0 {
			f := &c.s.d.Findings[0]
			splitAlternatives(f)
			got = f.Title + " | " + f.AllChanges()
		}
		switch {
		case c.title == "" && len(c.s.d.Findings) > 0:
			t.Errorf("%s: fired: %s", c.name, got)
		case c.title != "" && (len(c.s.d.Findings) != 1 || c.s.d.Findings[0].Rule != "copy.h2d" || !strings.Contains(got, c.title) || !strings.Contains(got, c.want)):
			t.Errorf("%s: %q, want copy.h2d with %q and %q", c.name, got, c.title, c.want)
		}
	}
}
