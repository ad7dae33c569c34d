package diagnose

import (
	"fmt"

	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "autograd.recompute", Class: CPUCompute, Factor: 1.0,
	When:   "layers' forward ops (aten::linear, conv, norms, embedding, attention, dropout, RNNs: their outermost calls) inside a backward op, in the table's steps (operators.recompute), >= MinFinding of the step: host time on a CPU-only trace, device time with a device (then class gpu-compute-bound); silent when memory.capacity fires",
	Change: "activation checkpointing (torch.utils.checkpoint, Hugging Face's gradient_checkpointing) trades this time for memory: where the memory is there, checkpoint fewer layers (every other block, only the largest) or none (Hugging Face: model.gradient_checkpointing_disable(), TrainingArguments(gradient_checkpointing=False)); or keep the matmuls' outputs and recompute only the cheap ops (selective activation checkpointing: torch.utils.checkpoint.create_selective_checkpoint_contexts with a policy that saves aten.mm)",
	detect: (*state).recomputeFinding,
	Fires:  "TestRecomputeFinding", Silent: "TestRecomputeFinding",
})

// recomputeFinding: layers' forward ops run again inside the backward
// (operators.recompute), as activation checkpointing (torch.utils.checkpoint,
// Hugging Face's gradient_checkpointing) does to save memory. The time is
// the price of that memory; when the device's memory is not near capacity
// it may be paid for nothing (a checkpointed MLP trained here: 173 ms a
// step, 139 ms without, and the trace's recomputed linears and norms took
// 11% of the step). At stake: the recomputed forward's time per step, host
// time on a CPU-only trace, device time with a device. Silent when memory
// is near capacity (memory.capacity advises checkpointing then).
func (s *state) recomputeFinding() {
	t := s.in.Ops
	if t == nil || t.Recompute == nil || len(s.ev[Memory]) > 0 {
		return
	}
	steps := float64(s.steps)
	if t.Steps > 0 {
		steps = float64(t.Steps)
	}
	r := t.Recompute
	us, what := r.HostUs, "host"
	if s.device {
		us, what = r.DeviceUs, "device"
	}
	atStake := us / max(steps, 1)
	if s.step <= 0 || atStake < s.p.MinFinding*s.step {
		return
	}
	var where []Location
	for _, op := range r.Ops[:min(3, len(r.Ops))] {
		where = append(where, Location{Kind: "op", Name: op.Name, Note: fmt.Sprintf("%d calls inside backward ops, host %s", op.Calls, units.Duration(op.HostUs))})
	}
	title := fmt.Sprintf("Activation checkpointing runs the forward again inside the backward: %.0f%% of the step", s.findingPct(atStake/s.step))
	ms := []Evidence{{"recomputed forward per step (" + what + ")", atStake, "us", "operators"},
		{"layers' forward calls inside backward ops per step", float64(r.Calls) / max(steps, 1), "", "operators"}}
	f := s.finding("autograd.recompute", title, atStake, ms, where, "")
	if s.device {
		f.Class = GPUCompute // the recomputed kernels are the device's work
	}
	s.emit(f)
}
