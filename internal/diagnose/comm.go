package diagnose

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "comm.no-sync", Class: Comm, Factor: 0.9,
	When:   "communication >= MinFinding of the step and DistributedDataParallel synced gradients after >= 2 forwards per optimizer update on average (regions: gradient accumulation without no_sync()); at stake: the syncs beyond one per update's share of the exposed communication",
	Change: "run every micro-batch but the last under model.no_sync(): the gradients are all-reduced once per update",
	detect: (*state).noSyncFinding,
	Fires:  "TestGradSyncFinding", Silent: "TestGradSyncFinding",
})

// noSyncFinding: comm.no-sync. Gradient accumulation under DistributedDataParallel
// without model.no_sync() all-reduces the gradients after every
// micro-batch, where the update needs them once; the syncs beyond one per
// update are communication to remove (at stake: their part of comm, the
// step's exposed communication). Silent with one sync per update: no
// accumulation, no_sync in place, two models with an optimizer each, or
// a model called twice before one backward. It reports whether it fired.
func (s *state) noSyncFinding() {
	if !s.big(Comm) || !s.syncsEveryMicroBatch() {
		return
	}
	comm := s.at(Comm)
	g := s.in.Regions.GradSync
	perUpdate := float64(g.Synced) / float64(g.Updates)
	excess := 1 - 1/perUpdate
	ms := []Evidence{{"DDP gradient syncs per optimizer update", perUpdate, "", "regions"},
		{"DDP forwards per optimizer update", float64(g.Forwards) / float64(g.Updates), "", "regions"}}
	where := s.topOps(2, false, "DistributedDataParallel.forward", "all_reduce", "allreduce")
	if s.py != nil { // the micro-batch's backward, when the profile caught it
		if i := slices.IndexFunc(slices.Concat(s.py.Hot, s.py.RunHot), func(l runevidence.Line) bool { return strings.Contains(l.Text, "backward(") }); i >= 0 {
			where = slices.Insert(where, 0, s.pyLines(slices.Concat(s.py.Hot, s.py.RunHot)[i:], 1)...)
		}
	}
	s.emit(s.finding("comm.no-sync", fmt.Sprintf("DistributedDataParallel syncs the gradients %.3g times per optimizer update: gradient accumulation without no_sync()", perUpdate),
		excess*comm, ms, where,
		fmt.Sprintf("run the forward and backward of every micro-batch but the last under `with model.no_sync():`, so the gradients are all-reduced once per update instead of %.3g times (the accumulated gradients are the same)", perUpdate)))
}

// syncsEveryMicroBatch: DDP synced the gradients at least
// MinSyncsPerUpdate times per optimizer update (comm.no-sync's case).
func (s *state) syncsEveryMicroBatch() bool {
	r := s.in.Regions
	if r == nil || r.GradSync == nil {
		return false
	}
	g := r.GradSync
	return g.Updates > 0 && g.Synced >= s.p.MinSyncsPerUpdate*g.Updates
}

var _ = addRule(Rule{
	ID: "comm.exposed", Class: Comm, Factor: 0.5,
	When: "communication not overlapped with computation >= MinFinding of the step",
	Change: orTry(orTry("overlap communication with backward: DDP bucket_cap_mb, gradient_as_bucket_view=True",
		"no_sync() during gradient accumulation: one all-reduce per update"),
		"fewer, larger collectives: each pays its latency once"),
	detect: (*state).commFinding,
	Fires:  "TestGradSyncFinding", Silent: "TestShareRulesFireFromMinFinding",
})

// commFinding: comm.exposed.
func (s *state) commFinding() {
	if !s.big(Comm) {
		return
	}
	change := ""
	if !s.syncsEveryMicroBatch() && s.in.Regions != nil && s.in.Regions.GradSync != nil && s.in.Regions.GradSync.Forwards > s.in.Regions.GradSync.Synced {
		// several forwards per update, synced once: no_sync() in
		// place, or a model called twice before one backward
		change = "overlap communication with backward: DDP bucket_cap_mb, gradient_as_bucket_view=True; fewer, larger collectives (the gradients already sync once per optimizer update)"
	}
	ms := s.ev[Comm]
	if bytes, params, ok := s.smallGradients(); ok {
		// the ddp-tutorial-series' Linear(20, 1) on 2 gloo ranks: 84
		// bytes of gradients, 52% of the step in their all-reduce, told
		// "overlap communication with backward: DDP bucket_cap_mb"
		ms = append(slices.Clip(ms), Evidence{"gradient bytes the optimizers update", float64(bytes), "B", "evidence"})
		change = fmt.Sprintf("the gradients are only %s (%d parameters): DDP all-reduces them as one bucket once the backward has ended, so no backward is left to overlap with and each all-reduce costs its latency, not its size (bucket_cap_mb and gradient_as_bucket_view cannot change that): fewer all-reduces per sample, a larger batch per rank (one all-reduce per step either way), or gradient accumulation with every batch but each k-th under model.no_sync(); a model this small may train faster in one process without DDP", units.Bytes(bytes), params)
	}
	f := s.finding("comm.exposed", fmt.Sprintf("Communication not overlapped with compute takes %.0f%% of the step", s.findingPct(s.share[Comm])), s.at(Comm), ms, s.topOps(3, false, "nccl", "gloo", "all_reduce", "allreduce", "all_gather", "broadcast", "reduce_scatter", "all_to_all"), change)
	if n, w, partial := s.partialRanks(); partial {
		f.Measured = append(f.Measured, Evidence{fmt.Sprintf("ranks in the input: %d of %d", n, w), 0, "", "distributedInfo"})
		f.Change = thenDo(fmt.Sprintf("a collective waits for the slowest rank and this input holds %d of %d ranks: analyze all ranks together (bottleneck analyze DIR) to tell a straggler from the network", n, w), f.Change)
		if s.d.Verdict.Primary != Comm { // else the verdict's confidence, already lowered
			f.Confidence = lower(f.Confidence)
		}
	}
	s.emit(f)
}

// smallGradients: the program calls a DistributedDataParallel model and
// its optimizers update under SmallGradientBytes of parameters in all
// (their element count times the largest parameter's element size):
// under DDP's first bucket (1 MiB) the whole gradient is one bucket,
// all-reduced when the backward ends, whose cost is the collective's
// latency.
func (s *state) smallGradients() (bytes int64, params int, ok bool) {
	r := s.in.Run
	if r == nil || len(r.Optimizers) == 0 || !slices.ContainsFunc(r.Models, func(m rundir.ModelCall) bool { return m.Class == "DistributedDataParallel" }) {
		return 0, 0, false
	}
	for _, o := range r.Optimizers {
		if o.Numel <= 0 {
			return 0, 0, false // not recorded
		}
		size := int64(4)
		if len(o.Largest) > 0 {
			switch o.Largest[0].DType {
			case "float16", "bfloat16":
				size = 2
			case "float64":
				size = 8
			}
		}
		bytes += o.Numel * size
		params += int(o.Numel)
	}
	return bytes, params, bytes < s.p.SmallGradientBytes
}
