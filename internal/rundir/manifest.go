package rundir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
)

// ManifestFormat is the manifest's "format" value.
const ManifestFormat = "bottleneck.run"

// Manifest describes one run (docs/run.md, "Run directory").
type Manifest struct {
	Format  string  `json:"format"`
	Version int     `json:"version"`
	Tool    Tool    `json:"tool"`
	Command Command `json:"command"`
	// State is running (written at launch), ended, or failed (the program
	// could not be started).
	State       string      `json:"state"`
	Error       string      `json:"error,omitempty"`
	PID         int         `json:"pid,omitempty"`
	Started     time.Time   `json:"started"`
	Ended       time.Time   `json:"ended,omitzero"`
	DurationS   float64     `json:"duration_s,omitempty"`
	Exit        *Exit       `json:"exit,omitempty"`
	Interrupted bool        `json:"interrupted,omitempty"` // SIGINT received (Ctrl-C)
	Terminated  bool        `json:"terminated,omitempty"`  // SIGTERM/SIGHUP received
	TimedOut    bool        `json:"timed_out,omitempty"`   // --timeout expired
	Killed      bool        `json:"killed,omitempty"`      // bottleneck sent SIGKILL
	Processes   []Process   `json:"processes,omitempty"`
	Files       []File      `json:"files"`
	Settings    AgentConfig `json:"settings"`
	Warnings    []string    `json:"warnings,omitempty"`
}

// Tool names the tool and its version (internal/version).
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Command is what was run.
type Command struct {
	Mode   string   `json:"mode"`
	Python string   `json:"python,omitempty"`
	Target string   `json:"target,omitempty"`
	Args   []string `json:"args"`
	// Argv is the equivalent command without bottleneck.
	Argv []string `json:"argv"`
	Cwd  string   `json:"cwd"`
}

// Exit is the program's exit status.
type Exit struct {
	// Code is what bottleneck exits with: the program's status, 128+n
	// when signal n ended it.
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
	// Reason: exited, signaled, interrupted, terminated, timeout, killed.
	Reason string `json:"reason"`
}

// Process summarises one profiled Python process (one per rank).
type Process struct {
	Tag        string   `json:"tag"`
	PID        int      `json:"pid"`
	ExitReason string   `json:"exit_reason"` // from the agent; "" when it could not save (killed)
	StepSource string   `json:"step_source,omitempty"`
	Steps      int      `json:"steps"`
	Traces     []string `json:"traces,omitempty"`
	Final      bool     `json:"final"` // the agent finished normally
}

// File is one file of the run directory.
type File struct {
	Path  string       `json:"path"`
	Kind  FileKindName `json:"kind"`
	Bytes int64        `json:"bytes"`
	Tag   string       `json:"tag,omitempty"`
}

// WriteManifest writes dir/manifest.json atomically.
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, ManifestName), append(b, '\n'))
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestName), err)
	}
	if err := checkFormat(filepath.Join(dir, ManifestName), ManifestFormat, m.Format, m.Version); err != nil {
		return nil, err
	}
	return &m, nil
}

// ProfilerConfig is the torch.profiler window (see docs/run.md).
type ProfilerConfig struct {
	Enabled   bool `json:"enabled"`
	SkipFirst int  `json:"skip_first"`
	Wait      int  `json:"wait"`
	Warmup    int  `json:"warmup"`
	Active    int  `json:"active"`
	// MinWindowS: the window records more than Active steps when they
	// would take less than this (seconds; 0: exactly Active).
	MinWindowS float64 `json:"min_window_s"`
	Repeat     int     `json:"repeat"`
	// EarlyStartS: when two steps after the first take this long or
	// more (seconds; 0: never), the first window starts at once with one
	// warm-up step instead of after SkipFirst and Warmup (the agent's
	// _start): run sets it unless --skip-first or --warmup is given.
	EarlyStartS   float64 `json:"early_start_s"`
	RecordShapes  bool    `json:"record_shapes"`
	ProfileMemory bool    `json:"profile_memory"`
	WithStack     bool    `json:"with_stack"`
	WithFlops     bool    `json:"with_flops"`
	WithModules   bool    `json:"with_modules"`
}

// AgentConfig is what the agent reads from its config.json.
type AgentConfig struct {
	RunDir         string  `json:"run_dir"`
	ToolVersion    string  `json:"tool_version"`
	PythonProfiler string  `json:"python_profiler"`        // sample | cprofile | off
	SampleInterval float64 `json:"sample_interval"`        // seconds, outside the window
	WindowInterval float64 `json:"window_sample_interval"` // seconds, while the window records
	// SampleBudget: the share of the wall time the sampler may cost
	// outside the window; over it, it samples every few intervals (0:
	// every interval, as where --sample-interval is given).
	SampleBudget       float64        `json:"sample_budget"`
	Profiler           ProfilerConfig `json:"profiler"`
	StepSource         string         `json:"step_source"` // auto | optimizer | dataloader | forward | closure
	StopAfterProfile   bool           `json:"stop_after_profile"`
	SyncDebug          bool           `json:"sync_debug"`
	CheckpointInterval float64        `json:"checkpoint_interval"` // seconds; 0 disables
	// NVTX: "" (off), "steps" (a range per step and its phases) or "ops"
	// (also torch.autograd.profiler.emit_nvtx); see docs/run.md.
	NVTX string `json:"nvtx,omitempty"`
	// Set are run-time changes the agent makes to the program (bottleneck
	// try, run --verify), by name (ChangeNames): DataLoader settings,
	// thread counts, backend flags, the optimizer's implementation, the
	// garbage collector. Absent in an ordinary run.
	Set map[string]string `json:"set,omitempty"`
	// Live: the agent feeds `run --live`'s view (.live/<tag>.json).
	Live bool `json:"live,omitempty"`
	// JobExchange: a multi-node run without --job-dir; at its end each
	// rank's summary travels over torchrun's store to rank 0
	// (_bottleneck_jobexchange.py, docs/distributed.md).
	JobExchange *JobExchange `json:"job_exchange,omitempty"`
}

// JobExchange configures the agent's job exchange.
type JobExchange struct {
	// Exe is the bottleneck binary each rank runs to summarise its trace.
	Exe string `json:"exe"`
	// WaitS bounds rank 0's wait for the other ranks' summaries (seconds).
	WaitS float64 `json:"wait_s"`
}
