package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// h200Diagnosis is the part of `analyze --json` the H200 tests read.
type h200Diagnosis struct {
	StepUs         float64 `json:"step_us"`
	FindingsStepUs float64 `json:"findings_step_us"`
	Verdict        struct {
		Primary string `json:"primary"`
		Why     string `json:"why"`
	} `json:"verdict"`
	Findings []struct {
		Rule      string  `json:"rule"`
		SavingPct float64 `json:"saving_pct"`
		Method    string  `json:"saving_method"`
	} `json:"findings"`
}

func analyzeH200(t *testing.T, run string) h200Diagnosis {
	t.Helper()
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "rundir", "h200", run)
	code, out, stderr := runMain(t, "analyze", "--json", dir)
	if code != 0 {
		t.Fatalf("analyze %s: exit %d: %s", run, code, stderr)
	}
	var r struct {
		Traces []struct {
			Diagnosis h200Diagnosis `json:"diagnosis"`
		} `json:"traces"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Traces) != 1 {
		t.Fatalf("analyze --json %s: %v (%d traces)", run, err, len(r.Traces))
	}
	return r.Traces[0].Diagnosis
}

// TestH200PredictedAgainstMeasured: real runs on an H200, each program as
// it was and with the advised change made (testdata/rundir/README.md).
// The first run's verdict names the cause, its finding's replayed saving
// predicts the step the changed run measured (the recorded window's mean
// step, device work included) within 2x either way; and a rule whose
// change measured no gain there stays silent (fused=True for the fp32
// GPT's AdamW: 73.6 -> 72.1 ms a step, not significant).
func TestH200PredictedAgainstMeasured(t *testing.T) {
	for _, c := range []struct {
		base, changed, verdict, rule string
		silent                       string
	}{
		// a 256 MiB pageable copy every step (8.8 GB/s), then pinned and
		// non_blocking (53.7 GB/s): the host's wait in the copy is the copy
		{"pageable", "pageable_fixed", "copy-bound", "copy.h2d", ""},
		// fp32 GEMMs on CUDA cores, then TF32 (bottleneck try --set tf32=true)
		{"gpt_fp32", "gpt_tf32", "gpu-compute-bound", "gpu.precision", "host.optimizer"},
		// loss.item() every step, then the loss summed on the device: the
		// host's own work overlaps the device's
		{"item_sync", "item_sync_fixed", "host-bound", "sync.blocking", ""},
		// num_workers=0, then 8 (bottleneck try --set num_workers=8)
		{"loader_gpu", "loader_workers8", "input-bound", "input.loader", ""},
	} {
		t.Run(c.base, func(t *testing.T) {
			b, n := analyzeH200(t, c.base), analyzeH200(t, c.changed)
			if b.Verdict.Primary != c.verdict {
				t.Errorf("verdict %s (%s), want %s", b.Verdict.Primary, b.Verdict.Why, c.verdict)
			}
			saving := -1.0
			for _, f := range b.Findings {
				if f.Rule == c.silent {
					t.Errorf("%s fired: %+v", c.silent, f)
				}
				if f.Rule == c.rule {
					saving = f.SavingPct
					if f.Method != "replay" {
						t.Errorf("%s's saving by %q, want replay", c.rule, f.Method)
					}
				}
			}
			if saving < 0 || saving >= 100 || n.StepUs <= 0 {
				t.Fatalf("no %s finding to predict with (%+v), or no changed step (%.0f µs)", c.rule, b.Findings, n.StepUs)
			}
			predicted, measured := 1/(1-saving/100), b.StepUs/n.StepUs
			if r := predicted / measured; r < 0.5 || r > 2 {
				t.Errorf("%s predicted %.2fx (%.0f%% saved), measured %.2fx (%.0f -> %.0f µs): off by more than 2x",
					c.rule, predicted, saving, measured, b.StepUs, n.StepUs)
			}
			t.Logf("%s: predicted %.2fx, measured %.2fx", c.rule, predicted, measured)
		})
	}
}

// TestProfilerBase: a window a little slower than the steps next to it
// (1.05x to 1.3x) has the profiler's cost taken out of the replay's
// baseline where the host's work holds the step (the Trainer's GPT-2:
// 1.09x), not where the device does whatever the host costs (the pinned
// copies: 97% of the step, its window 1.06x the steps next to it).
func TestProfilerBase(t *testing.T) {
	for run, want := range map[string]bool{"hf_gpt2": true, "pageable_fixed": false, "item_sync_fixed": false} {
		d := analyzeH200(t, run)
		if got := d.FindingsStepUs > 0 && d.FindingsStepUs < d.StepUs; got != want {
			t.Errorf("%s: findings' step %.0f µs of %.0f µs recorded: profiler's cost taken out %v, want %v", run, d.FindingsStepUs, d.StepUs, got, want)
		}
	}
}
