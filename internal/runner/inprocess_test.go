package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

func TestBeginMergesSettingsOverDefaults(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	ac, err := Begin(dir, `{"profiler": {"active": 3}, "step_source": "dataloader", "stop_after_profile": true}`,
		"1.0", "/usr/bin/python3", 42, []string{"nb.py", "--x"})
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultAgentConfig()
	if ac.Profiler.Active != 3 || ac.Profiler.SkipFirst != d.Profiler.SkipFirst || ac.Profiler.Warmup != d.Profiler.Warmup ||
		!ac.Profiler.Enabled || ac.StepSource != "dataloader" || ac.SampleInterval != d.SampleInterval {
		t.Errorf("settings not merged over the defaults: %+v", ac)
	}
	if ac.StopAfterProfile {
		t.Error("stop_after_profile would end the user's process; Begin must turn it off")
	}
	if !filepath.IsAbs(ac.RunDir) || ac.ToolVersion != "1.0" {
		t.Errorf("run_dir %q, tool_version %q", ac.RunDir, ac.ToolVersion)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.State != "running" || m.Command.Mode != string(InProcess) || m.PID != 42 || m.Command.Argv[0] != "/usr/bin/python3" {
		t.Errorf("manifest: %+v", m)
	}
	if _, err := Begin(dir, "", "1.0", "py", 1, nil); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Errorf("second Begin in the same directory: %v", err)
	}
	// the window starts early on long steps unless a start is set
	for s, want := range map[string]float64{
		`{"profiler": {"active": 3}}`:                            d.Profiler.EarlyStartS,
		`{"profiler": {"skip_first": 10}}`:                       0,
		`{"profiler": {"warmup": 1}}`:                            0,
		`{"profiler": {"warmup": 1, "early_start_s": 5}}`:        5,
		`{"profiler": {"skip_first": 10, "early_start_s": 0.5}}`: 0.5,
	} {
		ac, err := Begin(filepath.Join(t.TempDir(), "run"), s, "1.0", "py", 1, nil)
		if err != nil || ac.Profiler.EarlyStartS != want {
			t.Errorf("%s: early_start_s %v (%v), want %v", s, ac.Profiler.EarlyStartS, err, want)
		}
	}
	// an interval set is kept whatever a sample costs, unless a budget is set too
	for s, want := range map[string]float64{
		`{"profiler": {"active": 3}}`:                      d.SampleBudget,
		`{"sample_interval": 0.01}`:                        0,
		`{"sample_interval": 0.01, "sample_budget": 0.01}`: 0.01,
	} {
		ac, err := Begin(filepath.Join(t.TempDir(), "run"), s, "1.0", "py", 1, nil)
		if err != nil || ac.SampleBudget != want {
			t.Errorf("%s: sample_budget %v (%v), want %v", s, ac.SampleBudget, err, want)
		}
	}
}

func TestBeginRejectsBadSettings(t *testing.T) {
	for _, s := range []string{`{"profiler": {"activ": 3}}`, `{"profiler": {"active": 0}}`, `[1]`, `{"skip_first": -1}`} {
		if _, err := Begin(filepath.Join(t.TempDir(), "run"), s, "1.0", "py", 1, nil); err == nil {
			t.Errorf("settings %s accepted", s)
		}
	}
}

func TestFinishClosesOnlyARunningInProcessRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Begin(dir, "", "1.0", "py", 1, nil); err != nil {
		t.Fatal(err)
	}
	// what the agent leaves: its files and its coordination folders
	for name, body := range map[string]string{
		"env-rank0.json":      `{"format": "bottleneck.env", "version": 1, "python": {"version": "3.11"}}`,
		"evidence-rank0.json": `{"format": "bottleneck.evidence", "version": 1, "pid": 1, "final": true, "step_source": "optimizer", "steps": 11, "exit": {"reason": "ok"}}`,
		".claims/rank0":       "1",
	} {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := Finish(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.State != "ended" || m.Ended.IsZero() || len(m.Processes) != 1 || m.Processes[0].Steps != 11 || !m.Processes[0].Final {
		t.Errorf("manifest after Finish: %+v", m)
	}
	if _, err := os.Stat(filepath.Join(dir, "env.json")); err != nil {
		t.Error("env.json not written")
	}
	if _, err := os.Stat(filepath.Join(dir, ".claims")); err == nil {
		t.Error(".claims left behind")
	}
	if _, err := Finish(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "already ended") {
		t.Errorf("second Finish: %v", err)
	}
	if _, err := Finish(context.Background(), t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a run directory") {
		t.Errorf("Finish of an empty directory: %v", err)
	}
	other := t.TempDir()
	if err := rundir.WriteManifest(other, &rundir.Manifest{Format: rundir.ManifestFormat, Version: rundir.FormatVersion, State: "running", Command: rundir.Command{Mode: string(Script)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Finish(context.Background(), other); err == nil || !strings.Contains(err.Error(), "not \"in-process\"") {
		t.Errorf("Finish of a `bottleneck run` directory: %v", err)
	}
}
