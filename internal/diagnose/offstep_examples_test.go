package diagnose_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// TestPlantedOffStep runs the examples with work that does not belong in
// the step (a validation pass under torch.no_grad, tensors formatted for
// a log line) planted in the loop: host.off-step is the first finding and
// points at the planted line. The controls run the same validation every
// 50 steps and print a tensor once at the end, or run a frozen teacher
// under no_grad whose logits the loss needs: no off-step finding.
func TestPlantedOffStep(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python programs")
	}
	py := testutil.TorchPython(t)
	for _, c := range []struct {
		file    string
		planted bool
	}{
		{"eval_every_step.py", true},
		{"eval_decorated.py", true},
		{"log_tensor_every_step.py", true},
		{"eval_every_50_steps.py", false},
		{"distill_teacher.py", false},
	} {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join(testutil.RepoRoot(), "examples", "diagnose", c.file)
			r, txt := bottleneckRun(t, nil, "--python", py, path)
			if len(r.TraceReport.Traces) != 1 || r.TraceReport.Traces[0].Diagnosis == nil {
				t.Fatalf("want one diagnosed trace, got %+v", r.TraceReport)
			}
			d := r.TraceReport.Traces[0].Diagnosis
			if !c.planted {
				for _, f := range d.Findings {
					if f.Rule == "host.off-step" {
						t.Errorf("off-step found: %s\n%s", f.Title, txt)
					}
				}
				return
			}
			line := plantedLine(t, path)
			if len(d.Findings) == 0 || d.Findings[0].Rule != "host.off-step" {
				if load, ok := othersLoad(d); ok && d.Findings[0].Rule == "run.slowing" {
					// the premise, a machine that runs as fast at the end
					// as at the start, is absent: the planted loops' work
					// does not grow (CI, load 2.9 on 2 CPUs: 2.91 ms steps
					// at the start, 10.1 ms at the end)
					t.Skipf("machine's speed changed: steps got slower with work that does not grow, other processes holding the CPUs (%s)", load)
				}
				if title, busy := contendedFirst(d); busy {
					t.Skipf("machine busy: %s", title)
				}
				t.Fatalf("first finding is not host.off-step\n%s", txt)
			}
			f := d.Findings[0]
			if !pointsAt(f.Where, path, line) {
				t.Errorf("finding does not point at %s:%d: %+v", c.file, line, f.Where)
			}
			if want := fmt.Sprintf("%s:%d", c.file, line); !strings.Contains(f.AllChanges(), want) {
				t.Errorf("the change does not name %s: %s", want, f.AllChanges())
			}
			if len(f.Measured) == 0 || f.AtStakeUs <= 0 {
				t.Errorf("finding without numbers: %+v", f)
			}
		})
	}
}
