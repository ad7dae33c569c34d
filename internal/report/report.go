// Package report holds the report bottleneck prints: a plain data structure
// (what JSON output marshals, see docs/json.md) and its text rendering.
// It never reads traces; the driver fills it from the analyses.
package report

import (
	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/critpath"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/input"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/launch"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/memory"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/ranks"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Schema names the JSON report format; bump on incompatible changes.
const Schema = "bottleneck.report/v1"

// Report is everything one invocation found.
type Report struct {
	Schema   string        `json:"schema"`
	Tool     string        `json:"tool_version"`
	Inputs   []Input       `json:"inputs"`
	Failures []FileProblem `json:"unreadable_files,omitempty"`
	Skipped  []FileProblem `json:"skipped_files,omitempty"`
	Traces   []TraceReport `json:"traces"`
	// Ranks compares the ranks when several traces were read.
	Ranks *ranks.Result `json:"ranks,omitempty"`
	// Diagnosis is the verdict across ranks (several traces only).
	Diagnosis *diagnose.RunDiagnosis `json:"diagnosis,omitempty"`
	// ReadSeconds and ReadMBps describe the reading itself.
	ReadSeconds float64 `json:"read_seconds"`
	BytesRead   int64   `json:"bytes_read"`
}

// FileProblem is a file that was skipped or could not be read.
type FileProblem struct {
	Path  string `json:"path"`
	Error string `json:"error"`
}

// Input describes one trace file as read.
type Input struct {
	Path          string                 `json:"path"`
	Rank          int                    `json:"rank"` // -1: unknown
	RankSource    string                 `json:"rank_source,omitempty"`
	Compressed    bool                   `json:"compressed"`
	Bytes         int64                  `json:"uncompressed_bytes"`
	Events        int                    `json:"events"`
	EventsByKind  map[string]int         `json:"events_by_kind"`
	Flows         int                    `json:"flows"`
	MemoryEvents  int                    `json:"memory_events"`
	SpanUs        float64                `json:"span_us"`
	StartUs       float64                `json:"start_us"`
	BaseTimeNs    int64                  `json:"base_time_ns,omitempty"`
	Steps         []int                  `json:"steps"`
	SyntheticStep bool                   `json:"whole_trace_is_one_step"`
	Devices       []trace.Device         `json:"devices"`
	Distributed   *trace.DistributedInfo `json:"distributed,omitempty"`
	Legacy        bool                   `json:"legacy_autograd_export,omitempty"`
	Problems      []Problem              `json:"problems,omitempty"`
}

// Problem is damage found in an input.
type Problem struct {
	Offset int64  `json:"byte_offset"`
	What   string `json:"what"`
	Detail string `json:"detail,omitempty"`
	Count  int    `json:"count"`
	Fatal  bool   `json:"stopped_reading"`
}

// TraceReport holds the analyses of one trace (one rank).
type TraceReport struct {
	Path    string               `json:"path"`
	Rank    int                  `json:"rank"`
	Ops     *optable.OpTable     `json:"operators"`
	Kernels *optable.KernelTable `json:"kernels"`

	// Diagnosis is the verdict and findings (docs/diagnosis.md).
	Diagnosis *diagnose.Diagnosis `json:"diagnosis,omitempty"`

	// Window says whether the recorded window is steady state and which
	// steps the figures use.
	Window    *window.Result    `json:"window,omitempty"`
	Breakdown *breakdown.Result `json:"step_breakdown,omitempty"`
	GPU       *gpu.Result       `json:"gpu,omitempty"`
	Idle      *idle.Result      `json:"gpu_idle,omitempty"`
	Launch    *launch.Result    `json:"kernel_launches,omitempty"`
	Syncs     *syncs.Result     `json:"synchronization,omitempty"`
	Input     *input.Result     `json:"input_pipeline,omitempty"`
	Memory    *memory.Result    `json:"memory,omitempty"`
	Flops     *flops.Result     `json:"flops,omitempty"`
	Regions   *regions.Result   `json:"regions,omitempty"`
	CritPath  *critpath.Result  `json:"critical_path,omitempty"`
	// Errors lists analyses that could not run on this trace, and why.
	Errors map[string]string `json:"analysis_errors,omitempty"`
}
