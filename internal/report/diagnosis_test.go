package report_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/load"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// diagnosisGolden are the shared traces whose verdicts docs/verdicts.md
// argues, by short name; several paths make one multi-rank report.
var diagnosisGolden = map[string][]string{
	"ns_resolution":  {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"},
	"negative_queue": {"hta/negative_queue_length_values_check/rank0.json.gz"},
	"nccl_data":      {"hta/nccl_parser_config/nccl_data.json.gz"},
	"control":        {"hta/trace_diff/control/control.json.gz"},
	"test":           {"hta/trace_diff/test/test.json.gz"},
	"trace_filter":   {"hta/trace_filter/sampled_rank-0.json.gz", "hta/trace_filter/sampled_rank-1.json.gz"},
	"df_index":       {"hta/df_index_resolver/df_index_resolver.json.gz"},
	"alexnet":        {"hta/critical_path/alexnet/*_trace.json.gz"},
	"amd":            {"hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"},
	"triton":         {"hta/triton_example/triton_example.json.gz"},
	"cpu_only":       {"hta/cpu_only/rank-34.*.pt.trace.json.gz"},
	"h100_qwen":      {"tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"},
	"mi210_gpu_only": {"tracelens/mi210/gpu_only_trace.json.gz"},
	"vllm_decode":    {"tracelens/vllm_decode_full/graph_execution.json.gz"},
	"dlrm_8_ranks":   {"param/dlrm_kineto/worker*.json.gz"},
	"zoology":        {"misc/zoology_cpu_activity_on_gpu_machine.json.gz"},
	"dtu_mlops_cpu":  {"misc/dtu_mlops_cpu_profile_memory.json.gz"},
	"particle":       {"misc/particle_transformer_degenerate.json.gz"},
}

// TestDiagnosisGolden renders the verdict and findings of each shared
// trace (testdata/diagnosis/<name>.txt and .json); rewrite with -update
// and re-read docs/verdicts.md when they change.
func TestDiagnosisGolden(t *testing.T) {
	dir := testutil.Traces(t)
	for name, rels := range diagnosisGolden {
		t.Run(name, func(t *testing.T) {
			var paths []string
			for _, rel := range rels {
				m, _ := filepath.Glob(filepath.Join(dir, rel))
				if len(m) == 0 {
					t.Skipf("no trace matches %s", rel)
				}
				paths = append(paths, m...)
			}
			res, err := load.Load(paths, load.Options{})
			if err != nil {
				t.Fatal(err)
			}
			r := driver.Build(res, 0, driver.Options{Rank: -1})
			var b bytes.Buffer
			report.WriteVerdict(&b, r)
			text := b.String()
			if !strings.HasPrefix(text, "Verdict") {
				t.Fatalf("the report does not open with the verdict:\n%s", text)
			}
			// (the file's opening: the terminal's brief below is shorter; each
			// further change has a line of its own)
			if n := strings.Count(text, "\n"); len(r.Traces) == 1 && n > 32 {
				t.Errorf("the opening takes %d lines, more than a screen", n)
			}
			// the terminal's brief: one screen, no line over the width
			var brief bytes.Buffer
			report.WriteBrief(&brief, r, report.TerminalWidth)
			if n := strings.Count(brief.String(), "\n"); n > 22 {
				t.Errorf("the brief takes %d lines:\n%s", n, brief.String())
			}
			for _, line := range strings.Split(brief.String(), "\n") {
				if n := utf8.RuneCountInString(line); n > report.TerminalWidth {
					t.Errorf("brief line of %d columns: %s", n, line)
				}
			}
			var js any = r.Diagnosis
			if r.Diagnosis == nil {
				js = r.Traces[0].Diagnosis
			}
			testutil.Compare(t, "diagnosis/"+name+".txt", b.Bytes())
			testutil.Compare(t, "diagnosis/"+name+".json", testutil.JSON(t, js))
			for _, tr := range r.Traces {
				checkDiagnosis(t, tr.Diagnosis)
			}
		})
	}
}

// checkDiagnosis holds for every diagnosis: findings carry numbers and are
// ranked by saving; the primary class is the one whose fix saves most,
// and its finding (when it has one) is not ranked below a finding that
// saves less; no attribution exceeds the step.
func checkDiagnosis(t *testing.T, d *diagnose.Diagnosis) {
	t.Helper()
	if d == nil {
		t.Fatal("no diagnosis")
	}
	for i, f := range d.Findings {
		if len(f.Measured) == 0 {
			t.Errorf("finding %s has no measured numbers", f.Rule)
		}
		if f.SavingUs > f.AtStakeUs {
			t.Errorf("finding %s saves more than is at stake", f.Rule)
		}
		if i > 0 && f.SavingUs > d.Findings[i-1].SavingUs && d.Findings[i-1].SavingUs > 0 {
			t.Errorf("findings not ranked by saving: %s after %s", f.Rule, d.Findings[i-1].Rule)
		}
	}
	if d.Verdict.Primary == diagnose.Undetermined {
		return
	}
	var savings []float64
	var primary diagnose.ClassScore
	for _, c := range d.Classes {
		if c.SharePct > 100.05 || c.SavingPct > c.SharePct {
			t.Errorf("class %s: share %.1f%%, saving %.1f%%", c.Class, c.SharePct, c.SavingPct)
		}
		if c.Class == diagnose.Unexplained {
			continue
		}
		savings = append(savings, c.SavingPct)
		if c.Class == d.Verdict.Primary {
			primary = c
		}
	}
	if len(savings) > 0 && primary.SavingPct != slices.Max(savings) {
		t.Errorf("primary %s saves %.1f%%, not the most of %v", d.Verdict.Primary, primary.SavingPct, savings)
	}
}
