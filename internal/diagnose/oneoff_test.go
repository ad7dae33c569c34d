package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
)

// Work outside the usual steps that outweighs them all is named, with
// where the whole run's samples go, and follows the first finding; not
// when it is less than the steps at their median, under a second, or in a
// program bottleneck ended after its window.
func TestOneOffFinding(t *testing.T) {
	hot := []runevidence.Line{{File: "/w/train_unconditional.py", Line: 692, Func: "main", Pct: 96}}
	for _, c := range []struct {
		name    string
		oneOff  runevidence.OneOffWork
		stopped bool
		fires   bool
	}{
		{"sample images after the first epoch and the last", runevidence.OneOffWork{SlowSteps: []int{16}, SlowS: 64.8, AfterS: 57.9, UsualS: 5.3}, false, true},
		{"after the loop only", runevidence.OneOffWork{AfterS: 12, UsualS: 5.3}, false, true},
		{"less than the steps", runevidence.OneOffWork{AfterS: 4, UsualS: 5.3}, false, false},
		{"under a second", runevidence.OneOffWork{AfterS: 0.8, UsualS: 0.5}, false, false},
		{"ended by bottleneck", runevidence.OneOffWork{AfterS: 12, UsualS: 5.3}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			run := runevidence.RunEvidence{OneOff: &c.oneOff, StoppedAfterProfile: c.stopped, Python: &runevidence.PythonEvidence{RunHot: hot}}
			d := Compute(cpuTrace(&run))
			f := findingOf(d, "run.one-off")
			if (f != nil) != c.fires {
				t.Fatalf("finding %+v, want %v", f, c.fires)
			}
			if f == nil {
				return
			}
			if f.OnceS != c.oneOff.TotalS() || f.SavingUs != 0 || !strings.Contains(f.Title, "more than all its steps at their median (5.30 s)") ||
				!strings.Contains(f.Change, "the run's main-thread samples go to train_unconditional.py:692 96%") || len(f.Where) == 0 || f.Where[0].Line != 692 {
				t.Errorf("%+v", f)
			}
			if slow := strings.Contains(f.Title, "in 1 slow step"); slow != (len(c.oneOff.SlowSteps) > 0) {
				t.Errorf("title %q", f.Title)
			}
			if len(d.Findings) > 1 && d.Findings[1].Rule != "run.one-off" {
				t.Errorf("second finding %s, want run.one-off", d.Findings[1].Rule)
			}
			if d.Verdict.Primary == "" || strings.Contains(d.Verdict.Why, "one-off") {
				t.Errorf("verdict %+v", d.Verdict)
			}
		})
	}
}
