package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

func runMain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ios, _, out, errOut := iostreams.Test()
	code = Main(ios, args)
	return code, out.String(), errOut.String()
}

// TestEveryCommandReadsARunDirectory: analyze, report, serve's loader and
// export read a run directory as `run` does: its traces (not its manifest
// or environment as unreadable traces), with the run's evidence and Python
// profile in the diagnosis, and the same verdict in every output.
func TestEveryCommandReadsARunDirectory(t *testing.T) {
	dir := testutil.RunDir(t, "slow_dataset")

	code, out, stderr := runMain(t, "analyze", "--json", dir)
	if code != 0 {
		t.Fatalf("analyze exit %d: %s", code, stderr)
	}
	var r struct {
		Failures []any `json:"failures"`
		Skipped  []any `json:"skipped"`
		Traces   []struct {
			Diagnosis struct {
				Verdict struct {
					Primary string `json:"primary"`
				} `json:"verdict"`
				Sources []string `json:"sources"`
			} `json:"diagnosis"`
		} `json:"traces"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Failures) != 0 || len(r.Skipped) != 0 || len(r.Traces) != 1 {
		t.Fatalf("analyze read %d traces, failures %v, skipped %v", len(r.Traces), r.Failures, r.Skipped)
	}
	d := r.Traces[0].Diagnosis
	if d.Verdict.Primary != "input-bound" || strings.Join(d.Sources, ",") != "trace,run evidence,python profile" {
		t.Errorf("analyze: verdict %q from %q", d.Verdict.Primary, d.Sources)
	}

	code, md, stderr := runMain(t, "export", "-f", "markdown", dir)
	md = strings.ReplaceAll(md, `\_`, "_") // Markdown escapes
	if code != 0 || !strings.Contains(md, "input-bound") || !strings.Contains(md, "SlowDataset.__getitem__") {
		t.Errorf("export markdown exit %d (%s) lacks the run's finding:\n%s", code, stderr, md)
	}
	if strings.Contains(md, "needs a Python profile") {
		t.Error("export markdown says a Python profile is missing")
	}
}

// TestReportKeepsTheRunsReport: `report DIR` writes a new file beside the
// run's report.html and replaces it only with --force; the page carries
// the run's diagnosis.
func TestReportKeepsTheRunsReport(t *testing.T) {
	dir := testutil.RunDir(t, "slow_dataset")
	orig := filepath.Join(dir, "report.html")
	if err := os.WriteFile(orig, []byte("the run's report"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runMain(t, "report", dir); code != 0 {
		t.Fatalf("report exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(orig); string(b) != "the run's report" {
		t.Fatal("report replaced the run's report.html without --force")
	}
	page, err := os.ReadFile(filepath.Join(dir, "report-2.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`"sources":["trace","run evidence","python profile"]`)) {
		t.Errorf("report-2.html lacks the run's evidence: %s", regexp.MustCompile(`"sources":\[[^]]*\]`).Find(page))
	}
	if code, _, stderr := runMain(t, "report", "--force", dir); code != 0 {
		t.Fatalf("report --force exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(orig); !bytes.Contains(b, []byte(`"sources":["trace","run evidence","python profile"]`)) {
		t.Error("report --force did not write report.html with the run's evidence")
	}
}
