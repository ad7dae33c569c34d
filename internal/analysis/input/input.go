// Package input measures the input pipeline: how long each step waits in
// the DataLoader's __next__ and how much of that wait the GPU sat idle.
//
// Definitions (version "input/1"):
//
//   - DataLoader time of a step: the union of the host spans of the
//     user_annotation (old traces: Operator) events named enumerate(DataLoader)#...__next__ that
//     start inside the step (nested or repeated calls count once).
//   - GPU idle during DataLoader: the part of that union during which no
//     kernel, memcpy or memset ran on any device (device work of the whole
//     trace, whatever step launched it).
//   - Step time: from the step's host start to its end moved to device time
//     (trace.Step.DeviceEnd), as in the step-time breakdown.
//
// Calls that start outside every step (a trace without ProfilerStep has one
// synthetic step covering everything) are counted in OutsideSteps.
package input

import (
	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Definition names the version of the definitions above.
const Definition = "input/1"

// Step is one step's input-pipeline figures.
type Step struct {
	// Step is the ProfilerStep number (0 for the synthetic whole-trace step).
	Step int `json:"step"`
	// StepUs is the step's time, from its host start to its end moved to device time.
	StepUs float64 `json:"step_us"`
	// Calls is the number of DataLoader __next__ calls that start in the step.
	Calls int `json:"calls"`
	// DataLoaderUs is the union of those calls' host spans (nested or repeated calls count once).
	DataLoaderUs float64 `json:"dataloader_us"`
	// DataLoaderPct is DataLoaderUs as a percentage of the step time.
	DataLoaderPct float64 `json:"dataloader_pct"`
	// GPUIdleUs is the part of the DataLoader time with no kernel, copy or memset running on any device.
	GPUIdleUs float64 `json:"gpu_idle_us"`
	// GPUIdlePct is GPUIdleUs as a percentage of the DataLoader time.
	GPUIdlePct float64 `json:"gpu_idle_pct"`
	// GPUIdleOfStepPct is GPUIdleUs as a percentage of the step time.
	GPUIdleOfStepPct float64 `json:"gpu_idle_of_step_pct"`
}

// Result is the input-pipeline analysis of one trace.
type Result struct {
	// Definition names the version of the definition (docs/metrics.md, "Input pipeline").
	Definition string `json:"definition"`
	// SyntheticStep: the trace has no ProfilerStep; the one step spans the whole trace.
	SyntheticStep bool `json:"synthetic_step"`
	// Steps are every step's figures, in time order.
	Steps []Step `json:"steps"`
	// Calls is the number of DataLoader __next__ calls in the trace, inside steps or not.
	Calls int `json:"calls"`
	// StepUs is the summed time of all steps.
	StepUs float64 `json:"step_us"`
	// DataLoaderUs is the summed DataLoader time of all steps.
	DataLoaderUs float64 `json:"dataloader_us"`
	// DataLoaderPct is DataLoaderUs as a percentage of StepUs.
	DataLoaderPct float64 `json:"dataloader_pct"`
	// GPUIdleUs is the summed GPU idle time during DataLoader calls of all steps.
	GPUIdleUs float64 `json:"gpu_idle_us"`
	// GPUIdlePct is GPUIdleUs as a percentage of DataLoaderUs.
	GPUIdlePct float64 `json:"gpu_idle_pct"`
	// MeanDataLoaderUs is the mean DataLoader time per step.
	MeanDataLoaderUs float64 `json:"mean_dataloader_us"`
	// OutsideSteps counts __next__ calls that start outside every step.
	OutsideSteps int `json:"outside_steps"`
	// OutsideStepsUs is the union of those calls' host spans.
	OutsideStepsUs float64 `json:"outside_steps_us"`
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

func pct(a, b int64) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) * 100 / float64(b)
}

// isWork reports whether events of kind k keep a device busy here.
func isWork(k trace.Kind) bool {
	return k == trace.KindKernel || k == trace.KindMemcpy || k == trace.KindMemset
}

// Compute measures DataLoader waits per step.
func Compute(t *trace.Trace) *Result {
	ev := &t.Events
	r := &Result{Definition: Definition, SyntheticStep: t.SyntheticStep, Steps: []Step{}}

	// Which names are DataLoader calls: decided once per string (0: not
	// yet, 1: no, 2: yes; a slice, as a map cost 8 ms on a million names).
	isDL := make([]uint8, t.NumStrings())
	perStep := make([][]interval.Span, len(t.Steps))
	var outside []interval.Span
	busy := make([]interval.Span, 0, ev.Count(isWork))
	for i, k := range ev.Kind {
		switch {
		case isWork(k):
			if ev.Dur[i] > 0 {
				busy = append(busy, interval.Span{Start: ev.Start[i], End: ev.End(i)})
			}
		case k == trace.KindUserAnnotation || k == trace.KindCPUOp: // old traces: cat Operator
			if isDL[ev.Name[i]] == 0 {
				isDL[ev.Name[i]] = 1
				if classify.IsDataLoader(t.Name(i)) {
					isDL[ev.Name[i]] = 2
				}
			}
			if isDL[ev.Name[i]] != 2 {
				continue
			}
			sp := interval.Span{Start: ev.Start[i], End: ev.End(i)}
			r.Calls++
			if s := ev.Step[i]; s != trace.None {
				perStep[s] = append(perStep[s], sp)
			} else {
				outside = append(outside, sp)
			}
		}
	}
	busySet := interval.Of(busy)
	r.OutsideSteps = len(outside)
	r.OutsideStepsUs = us(interval.Of(outside).Total())

	var stepTotal, dlTotal, idleTotal int64
	for si, st := range t.Steps {
		set := interval.Of(perStep[si])
		dl := set.Total()
		var idle int64
		for _, sp := range set {
			idle += sp.Len() - busySet.OverlapLen(sp)
		}
		stepNs := st.DeviceEnd - st.Start
		r.Steps = append(r.Steps, Step{
			Step: st.Num, StepUs: us(stepNs), Calls: len(perStep[si]),
			DataLoaderUs: us(dl), DataLoaderPct: pct(dl, stepNs),
			GPUIdleUs: us(idle), GPUIdlePct: pct(idle, dl), GPUIdleOfStepPct: pct(idle, stepNs),
		})
		stepTotal += stepNs
		dlTotal += dl
		idleTotal += idle
	}
	r.StepUs = us(stepTotal)
	r.DataLoaderUs = us(dlTotal)
	r.DataLoaderPct = pct(dlTotal, stepTotal)
	r.GPUIdleUs = us(idleTotal)
	r.GPUIdlePct = pct(idleTotal, dlTotal)
	if len(t.Steps) > 0 {
		r.MeanDataLoaderUs = us(dlTotal) / float64(len(t.Steps))
	}
	return r
}
