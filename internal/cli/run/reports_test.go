package run

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// TestReportsMatchAnalyze: the reports `run` writes into its directory
// carry the same diagnosis and operator table as `analyze DIR`, and use
// the run's evidence and Python profile (the fixture's planted cause is
// SlowDataset.__getitem__ at slow_dataset.py:17).
func TestReportsMatchAnalyze(t *testing.T) {
	dir := testutil.RunDir(t, "slow_dataset")
	ios, _, _, _ := iostreams.Test()
	text, _, _, err := writeReports(ios, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fromRun struct {
		TraceReport traceReport `json:"trace_report"`
	}
	if err := json.Unmarshal(b, &fromRun); err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	o := driver.DefaultOptions()
	o.JSON = true
	if _, err := driver.Analyze(&js, ios, []string{dir}, o); err != nil {
		t.Fatal(err)
	}
	var fromAnalyze traceReport
	if err := json.Unmarshal(js.Bytes(), &fromAnalyze); err != nil {
		t.Fatal(err)
	}
	got, want := fromRun.TraceReport.Traces, fromAnalyze.Traces
	if len(got) != 1 || len(want) != 1 {
		t.Fatalf("traces: run %d, analyze %d", len(got), len(want))
	}
	if compact(t, got[0].Diagnosis) != compact(t, want[0].Diagnosis) {
		t.Errorf("diagnosis differs:\nrun:     %.400s\nanalyze: %.400s", got[0].Diagnosis, want[0].Diagnosis)
	}
	if len(got[0].Operators.Rows) != len(want[0].Operators.Rows) || len(got[0].Operators.Rows) != driver.DefaultTop {
		t.Errorf("operator rows: run %d, analyze %d, want %d", len(got[0].Operators.Rows), len(want[0].Operators.Rows), driver.DefaultTop)
	}
	var d struct {
		Sources []string `json:"sources"`
	}
	_ = json.Unmarshal(got[0].Diagnosis, &d)
	if len(d.Sources) != 3 || d.Sources[1] != "run evidence" || d.Sources[2] != "python profile" {
		t.Errorf("sources %q, want trace, run evidence, python profile", d.Sources)
	}
	if !bytes.Contains(got[0].Diagnosis, []byte("slow_dataset.py")) || !bytes.Contains(got[0].Diagnosis, []byte("SlowDataset.__getitem__")) || !bytes.Contains([]byte(text), []byte("slow_dataset.py:17")) {
		t.Error("the finding lacks the Python line the profile found")
	}
}

type traceReport struct {
	Traces []struct {
		Diagnosis json.RawMessage `json:"diagnosis"`
		Operators struct {
			Rows []json.RawMessage `json:"rows"`
		} `json:"operators"`
	} `json:"traces"`
}

func compact(t *testing.T, b []byte) string {
	var c bytes.Buffer
	if err := json.Compact(&c, b); err != nil {
		t.Fatal(err)
	}
	return c.String()
}
