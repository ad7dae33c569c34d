package diagnose

import (
	"fmt"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

var _ = addRule(Rule{
	ID: "host.optimizer", Class: Host, Factor: 0.5,
	When:   "Optimizer.step region >= OptimizerShare of the step, no closure inside it, no dense embedding gradient (host.dense-embedding), no sparse gradient in the run's evidence (fused=True raises on them, foreach=True updates them one at a time)",
	Change: "use the multi-tensor optimizer: foreach=True, or fused=True (Adam/AdamW/SGD on CUDA)",
	detect: (*state).optimizerFinding,
	Fires:  "TestOptimizerFinding", Silent: "TestOptimizerFinding",
})

// optimizerFinding: the optimizer step's share of the step (regions), on
// a device or a CPU. A dense embedding gradient is told apart: the update
// then runs over every row of the table though a batch touches few of
// them, and sparse gradients remove most of it. An optimizer that steps
// sparse gradients has no such fix: facebookresearch/dlrm's SGD over
// EmbeddingBag(sparse=True) tables spent 22.8 of its 23.4 ms adding them,
// and fused=True raised on them.
func (s *state) optimizerFinding() {
	r, per, ok := s.optimizerStep()
	if _, dense := s.denseEmbeddingUpdate(); !ok || dense || s.sparseGrads(r.Name) {
		return
	}
	ms := []Evidence{{"optimizer step per call", per, "us", "regions"}, {"calls", float64(r.Calls), "", "regions"}}
	change := ""
	switch {
	case r.MultiTensor:
		change = orTry("the update already runs as foreach/fused ops: compile the step (torch.compile(optimizer.step)) to fuse it further", "update fewer, larger parameter tensors")
	case !s.device:
		change = "the update runs one parameter at a time: " + s.cpuUpdateFix(r)
	}
	title := fmt.Sprintf("%s takes %.0f%% of the step", r.Name, s.findingPct(per/s.step))
	if r.Closure {
		title = fmt.Sprintf("The update in %s, after its closure's forward and backward, takes %.0f%% of the step", r.Name, s.findingPct(per/s.step))
	}
	f := s.finding("host.optimizer", title, per, ms, s.optimizerWhere(r), change)
	f.Try = s.fusedTry(r)
	s.emit(f)
}

// fusedTry is the run-time change run --verify makes for an update whose
// fix is fused=True on a CPU (cpuUpdateFix), predicted to save
// host.optimizer's saving: nil where the fix is another (no
// fused form of the class, a torch before 2.4, which raises on it) or
// the update already runs as foreach or fused ops. A cleanrl DQN on the
// project's CPU measured 1.09x the whole run with fused=True in the
// program; its report predicted 8% of the step.
func (s *state) fusedTry(r regions.Region) map[string]string {
	if s.device || r.MultiTensor || !fusedOnCPU[optimizerClass(r.Name)] {
		return nil
	}
	if _, old := s.torchBefore(2, 4); old {
		return nil
	}
	return map[string]string{"fused_optimizer": "true"}
}

// optimizerWhere is the optimizer's region, after the program's line that
// steps it when the run recorded it.
func (s *state) optimizerWhere(r regions.Region) []Location {
	where := []Location{{Kind: "op", Name: r.Name}}
	if o := s.runOptimizer(r.Name); o != nil && o.StepSite != nil {
		where = append([]Location{{Kind: "python", Name: o.StepSite.Func, File: o.StepSite.File, Line: o.StepSite.Line, Note: "calls " + o.Class + ".step()"}}, where...)
	}
	return where
}

// sparseGrads: the run's evidence says the optimizer whose step region is
// region ("": any optimizer) stepped parameters with sparse gradients
// (nn.Embedding/EmbeddingBag(sparse=True)), on which fused=True raises.
func (s *state) sparseGrads(region string) bool {
	if s.in.Run == nil {
		return false
	}
	for _, o := range s.in.Run.Optimizers {
		if region != "" && o.Class != optimizerClass(region) {
			continue
		}
		if o.SparseGrads > 0 || slices.ContainsFunc(o.Largest, func(p rundir.OptimizerParam) bool { return p.SparseGrad }) {
			return true
		}
	}
	return false
}

// denseEmbeddingUpdate: the run's evidence says how much of the update is
// the table; a trace alone only how long its dense backward takes.
func (s *state) denseEmbeddingUpdate() (denseUpdate, bool) {
	r, per, ok := s.optimizerStep()
	if !ok {
		return denseUpdate{}, false
	}
	dense, rows := s.denseEmbeddingBackward()
	if dense <= 0 {
		return denseUpdate{}, false
	}
	table, known := s.embeddingTable(r.Name)
	if known && table.share >= 0.5 && table.touched < s.p.DenseEmbeddingRows || !known && dense >= s.p.DenseEmbeddingShare*per {
		return denseUpdate{r, per, dense, rows, table, known}, true
	}
	return denseUpdate{}, false
}

var _ = addRule(Rule{
	ID: "host.dense-embedding", Class: Host, Factor: 0.8,
	When:   "Optimizer.step region >= OptimizerShare of the step and the dense embedding backward ops (embedding_dense_backward, _embedding_bag_dense_backward) per step >= DenseEmbeddingShare of the optimizer step: the table is a large part of the parameters and every row is updated every step; with run evidence, the rows with a gradient at the first step < DenseEmbeddingRows of the table's; at stake: the optimizer step plus the dense backward",
	Change: "give the embedding sparse gradients: nn.Embedding/nn.EmbeddingBag(..., sparse=True) and torch.optim.SparseAdam (or SGD/Adagrad, which take sparse gradients) for the embedding's parameters, the dense optimizer for the rest; only the rows in the batch are then updated",
	detect: (*state).denseEmbeddingFinding,
	Fires:  "TestOptimizerFinding", Silent: "TestOptimizerFinding",
})

// denseEmbeddingFinding: host.dense-embedding.
func (s *state) denseEmbeddingFinding() {
	u, ok := s.denseEmbeddingUpdate()
	if !ok {
		return
	}
	r, per, dense, table := u.r, u.per, u.dense, u.table
	ms := []Evidence{{"optimizer step per call", per, "us", "regions"}, {"calls", float64(r.Calls), "", "regions"},
		{"dense embedding backward per step", dense, "us", "ops"}}
	stake := per + dense
	if u.known {
		ms = append(ms, Evidence{fmt.Sprintf("largest parameter %v, dense gradient: share of the optimizer's %d elements", table.shape, table.numel), 100 * table.share, "%", "run evidence"})
		if table.touched >= 0 {
			ms = append(ms, Evidence{"its rows with a gradient at the first step", 100 * table.touched, "%", "run evidence"})
		}
		stake = table.share*per + dense
	}
	f := s.finding("host.dense-embedding", fmt.Sprintf("%s updates every row of a dense embedding gradient: it and the embedding's dense backward take %.0f%% of the step", r.Name, 100*(per+dense)/s.step),
		stake, ms, append(s.optimizerWhere(r), u.rows...), "")
	if !u.known {
		f.Confidence = "low"
	}
	s.emit(f)
}

// denseUpdate is an optimizer step that updates every row of a dense
// embedding gradient (host.dense-embedding).
type denseUpdate struct {
	r          regions.Region
	per, dense float64    // the optimizer step and the dense backward, per step
	rows       []Location // the dense backward's ops
	table      embeddingTable
	known      bool // the run's evidence says how much of the update is the table
}
