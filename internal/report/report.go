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
	// Schema names the report's format, "bottleneck.report/v1" (docs/json.md, "Versioning").
	Schema string `json:"schema"`
	// Tool is the version of bottleneck that wrote the report.
	Tool string `json:"tool_version"`
	// Inputs are the traces read, one per file, by rank and then path.
	Inputs []Input `json:"inputs"`
	// Failures are the paths that could not be read as traces, with the error.
	Failures []FileProblem `json:"unreadable_files,omitempty"`
	// Skipped are the directory entries left out as not traces, with why.
	Skipped []FileProblem `json:"skipped_files,omitempty"`
	// Traces are the analyses of each trace read (only the selected rank's with --rank).
	Traces []TraceReport `json:"traces"`
	// Ranks compares the ranks when several traces were read.
	Ranks *ranks.Result `json:"ranks,omitempty"`
	// Diagnosis is the verdict across ranks (several traces only).
	Diagnosis *diagnose.RunDiagnosis `json:"diagnosis,omitempty"`
	// ReadSeconds is the wall time spent reading and parsing every input.
	ReadSeconds float64 `json:"read_seconds"`
	// BytesRead is the uncompressed bytes read over all inputs.
	BytesRead int64 `json:"bytes_read"`
}

// FileProblem is a file that was skipped or could not be read.
type FileProblem struct {
	// Path is the file as named on the command line or found in a directory.
	Path string `json:"path"`
	// Error says why it was skipped or could not be read.
	Error string `json:"error"`
}

// Input describes one trace file as read.
type Input struct {
	// Path is the trace file as named on the command line or found in a directory.
	Path string `json:"path"`
	// Rank is the trace's distributed rank; -1: unknown.
	Rank int `json:"rank"`
	// RankSource is where the rank comes from: "distributedInfo", "file name", or absent when unknown.
	RankSource string `json:"rank_source,omitempty"`
	// Compressed: the file is gzip-compressed.
	Compressed bool `json:"compressed"`
	// Bytes is the trace's size after decompression, as read.
	Bytes int64 `json:"uncompressed_bytes"`
	// Events is the number of events kept (duration, instant, counter and memory events; flows and metadata apart).
	Events int `json:"events"`
	// EventsByKind counts the kept events by kind: cpu_op, user_annotation, python_function, runtime, driver, kernel, memcpy, memset, device_sync, gpu_annotation, device_other, memory, instant, counter, trace_span, other.
	EventsByKind map[string]int `json:"events_by_kind"`
	// Flows is the number of flow events (ph s, t and f: the ends and steps of ac2g, fwdbwd and other arrows).
	Flows int `json:"flows"`
	// MemoryEvents is the number of [memory] allocation and free events.
	MemoryEvents int `json:"memory_events"`
	// SpanUs is the time from the first program event's start to the last one's end (the profiler's own span, instants and counters left out).
	SpanUs float64 `json:"span_us"`
	// StartUs is the first program event's start, on the trace's clock (relative to base_time_ns when the trace has it).
	StartUs float64 `json:"start_us"`
	// BaseTimeNs is the trace's baseTimeNanoseconds, the origin of its timestamps (absent: the trace has none).
	BaseTimeNs int64 `json:"base_time_ns,omitempty"`
	// Steps are the ProfilerStep#N numbers in time order, or the iterations found from StepMarks numbered from 0 (empty when the trace has neither).
	Steps []int `json:"steps"`
	// SyntheticStep: the trace has no ProfilerStep#N marks, so the analyses treat the whole trace as one step "0".
	SyntheticStep bool `json:"whole_trace_is_one_step"`
	// StepMarks: the trace has no ProfilerStep#N marks and its steps are the iterations between repeats of this event (absent otherwise).
	StepMarks string `json:"step_marks,omitempty"`
	// Devices is the trace's deviceProperties, one entry per GPU, with Kineto's key names.
	Devices []trace.Device `json:"devices"`
	// Distributed is the trace's distributedInfo block (absent when it has none).
	Distributed *trace.DistributedInfo `json:"distributed,omitempty"`
	// Legacy: the file is the autograd profiler's export (a bare list of events without categories).
	Legacy bool `json:"legacy_autograd_export,omitempty"`
	// Problems is the damage found while reading, one entry per kind of damage.
	Problems []Problem `json:"problems,omitempty"`
}

// Problem is damage found in an input.
type Problem struct {
	// Offset is the byte offset of the first occurrence in the uncompressed file.
	Offset int64 `json:"byte_offset"`
	// What names the damage briefly and stably, e.g. "invalid escape".
	What string `json:"what"`
	// Detail is the first occurrence's specifics.
	Detail string `json:"detail,omitempty"`
	// Count is how many times this damage occurred in the file.
	Count int `json:"count"`
	// Fatal: the damage stopped the reading; the rest of the file was lost.
	Fatal bool `json:"stopped_reading"`
}

// TraceReport holds the analyses of one trace (one rank).
type TraceReport struct {
	// Path is the trace file, as in inputs[].path.
	Path string `json:"path"`
	// Rank is the trace's distributed rank; -1: unknown.
	Rank int `json:"rank"`
	// Ops is the operator table (docs/analyze.md, "What it prints").
	Ops *optable.OpTable `json:"operators"`
	// Kernels is the kernel table of device kernels by name (docs/analyze.md).
	Kernels *optable.KernelTable `json:"kernels"`

	// Diagnosis is the verdict and findings (docs/diagnosis.md).
	Diagnosis *diagnose.Diagnosis `json:"diagnosis,omitempty"`

	// Window says whether the recorded window is steady state and which
	// steps the figures use.
	Window *window.Result `json:"window,omitempty"`
	// Breakdown is the step-time breakdown by category.
	Breakdown *breakdown.Result `json:"step_breakdown,omitempty"`
	// GPU is the per-device utilization, efficiency and copy figures.
	GPU *gpu.Result `json:"gpu,omitempty"`
	// Idle is the device idle-time breakdown per stream.
	Idle *idle.Result `json:"gpu_idle,omitempty"`
	// Launch is the kernel launch statistics.
	Launch *launch.Result `json:"kernel_launches,omitempty"`
	// Syncs is the host-device synchronization analysis.
	Syncs *syncs.Result `json:"synchronization,omitempty"`
	// Input is the DataLoader (input pipeline) analysis.
	Input *input.Result `json:"input_pipeline,omitempty"`
	// Memory is the allocator analysis of the [memory] events.
	Memory *memory.Result `json:"memory,omitempty"`
	// Flops is the FLOPs, TFLOPS and MFU analysis.
	Flops *flops.Result `json:"flops,omitempty"`
	// Regions is the time per annotation, module and device annotation.
	Regions *regions.Result `json:"regions,omitempty"`
	// CritPath is the critical path of one step.
	CritPath *critpath.Result `json:"critical_path,omitempty"`
	// Errors lists analyses that could not run on this trace, and why.
	Errors map[string]string `json:"analysis_errors,omitempty"`
}

// Findings are the report's findings: the run's across ranks when there
// are several, else the first trace's (nil: none diagnosed).
func (r *Report) Findings() []diagnose.Finding {
	if r.Diagnosis != nil {
		return r.Diagnosis.Findings
	}
	if len(r.Traces) > 0 && r.Traces[0].Diagnosis != nil {
		return r.Traces[0].Diagnosis.Findings
	}
	return nil
}
