package flame

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

// The window's samples are taken at the window's own interval: a window
// tree's period is that interval, the whole run's is the run's.
func TestPyProfileWindowPeriod(t *testing.T) {
	p := &pyprofile.Profile{Profiler: "sample", IntervalS: 0.02, WindowIntervalS: 0.005}
	if got := FromPyProfile(p, PyOptions{Window: true}).PeriodNs; got != 5e6 {
		t.Errorf("window period %d ns, want 5 ms", got)
	}
	if got := FromPyProfile(p, PyOptions{}).PeriodNs; got != 2e7 {
		t.Errorf("run period %d ns, want 20 ms", got)
	}
}
