package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// InProcess is the mode of a run recorded inside an already running Python
// process by the Python API (`with bottleneck_profiler.profile(): ...`):
// the process starts its own agent; bottleneck only opens and closes the
// run directory around it (Begin, Finish).
const InProcess Mode = "in-process"

// Begin opens a run directory for an in-process recording: it merges
// settings (a JSON object of AgentConfig fields, "" for none) over the
// defaults, writes the manifest in state "running" and returns the agent
// configuration the process must start its agent with.
func Begin(dir, settings, version, python string, pid int, args []string) (rundir.AgentConfig, error) {
	ac := DefaultAgentConfig()
	if settings != "" {
		dec := json.NewDecoder(bytes.NewReader([]byte(settings)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ac); err != nil {
			return ac, fmt.Errorf("settings: %w", err)
		}
		// a start set is kept however long the steps, as run's flags
		// (ProfilerConfig.EarlyStartS)
		var given struct {
			SampleInterval json.RawMessage            `json:"sample_interval"`
			SampleBudget   json.RawMessage            `json:"sample_budget"`
			Profiler       map[string]json.RawMessage `json:"profiler"`
		}
		if json.Unmarshal([]byte(settings), &given) == nil {
			if given.Profiler["early_start_s"] == nil && (given.Profiler["skip_first"] != nil || given.Profiler["warmup"] != nil) {
				ac.Profiler.EarlyStartS = 0
			}
			// an interval set is kept whatever a sample costs, as run's flag
			if given.SampleInterval != nil && given.SampleBudget == nil {
				ac.SampleBudget = 0
			}
		}
	}
	if ac.Profiler.Active < 1 || ac.Profiler.SkipFirst < 0 || ac.Profiler.Warmup < 0 || ac.Profiler.Wait < 0 || ac.Profiler.Repeat < 0 || ac.Profiler.MinWindowS < 0 {
		return ac, errors.New("settings: active must be >= 1; skip_first, wait, warmup, repeat and min_window_s >= 0")
	}
	start := time.Now()
	runDir, err := NewRunDir(dir, start)
	if err != nil {
		return ac, err
	}
	ac.RunDir = runDir
	ac.ToolVersion = version
	// stopping the program after the window would end the user's session
	ac.StopAfterProfile = false
	cwd, _ := os.Getwd()
	m := &rundir.Manifest{
		Format:   rundir.ManifestFormat,
		Version:  rundir.FormatVersion,
		Tool:     rundir.Tool{Name: "bottleneck", Version: version},
		Command:  rundir.Command{Mode: string(InProcess), Python: python, Args: args, Argv: append([]string{python}, args...), Cwd: cwd},
		State:    "running",
		PID:      pid,
		Started:  start,
		Settings: ac,
	}
	return ac, rundir.WriteManifest(runDir, m)
}

// Finish closes an in-process run directory once the agent has saved: it
// writes env.json and completes the manifest (state "ended", processes,
// files). The process keeps running, so there is no exit status.
func Finish(ctx context.Context, dir string) (*rundir.Manifest, error) {
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: not a run directory: %w", dir, err)
	}
	if m.Command.Mode != string(InProcess) {
		return nil, fmt.Errorf("%s: run of mode %q, not %q", dir, m.Command.Mode, InProcess)
	}
	if m.State != "running" {
		return nil, fmt.Errorf("%s: run already %s", dir, m.State)
	}
	hostInfo := make(chan map[string]any, 1)
	go func() { hostInfo <- collectHost(ctx) }()
	end := time.Now()
	m.Ended = end
	m.DurationS = end.Sub(m.Started).Seconds()
	m.State = "ended"
	cleanRunDir(dir)
	var host map[string]any
	select {
	case host = <-hostInfo:
	case <-time.After(3 * time.Second):
	}
	if err := writeEnvSummary(dir, host); err != nil {
		m.Warnings = append(m.Warnings, "env.json: "+err.Error())
	}
	m.Processes = processSummaries(dir)
	if _, err := rundir.SaveSources(dir); err != nil {
		m.Warnings = append(m.Warnings, "copying the program's sources: "+err.Error())
	}
	if err := m.ScanFiles(dir); err != nil {
		m.Warnings = append(m.Warnings, "listing files: "+err.Error())
	}
	return m, rundir.WriteManifest(dir, m)
}
