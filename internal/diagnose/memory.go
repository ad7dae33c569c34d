package diagnose

import (
	"fmt"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "memory.capacity", Class: Memory, Factor: 0,
	When: "peak reserved device memory >= MemoryPct of the device",
	Change: orTry(orTry("make room before it fails: activation checkpointing (torch.utils.checkpoint)",
		"a smaller micro-batch with gradient accumulation: the same update in less memory"),
		"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: less memory lost to fragmentation"),
	detect: (*state).memoryCapacityFinding,
	Fires:  "TestMemoryCapacityFinding", Silent: "TestMemoryCapacityFinding",
})

// memoryCapacityFinding: memory.capacity.
func (s *state) memoryCapacityFinding() {
	if len(s.ev[Memory]) == 0 {
		return
	}
	s.emit(s.finding("memory.capacity", "Device memory is near capacity", 0, s.ev[Memory], nil, ""))
}

var _ = addRule(Rule{
	ID: "memory.growth", Class: MemoryGrowth, Factor: 0,
	When:   "run evidence: the process's memory grows by >= MemoryGrowthMiB over the steps after start-up, and at least half as fast over the later half of them, and a variable of the training loop grew every step holding tensors with their graph (or >= GrowthItemKiB of tensors per step)",
	Change: "store detached values: loss.item() / tensor.detach() (.cpu() for outputs) before keeping them across steps; compute kept predictions under torch.no_grad(); drop retain_graph=True",
	detect: (*state).memoryGrowthFinding,
	Fires:  "TestMemoryGrowthFinding", Silent: "TestMemoryGrowthFinding",
})

func (s *state) memoryGrowthFinding() {
	m := s.memoryGrowth()
	if m == nil {
		return
	}
	var where []Location
	graph := false
	for _, g := range s.leakingVars() {
		note := fmt.Sprintf("%s %s grows by %.0f per step, holds %s", g.Scope, g.Kind, g.PerStep, g.Holds)
		if g.Kind == "autograd graph" {
			note = fmt.Sprintf("its autograd graph grows by %.0f nodes per step", g.PerStep)
		}
		graph = graph || strings.Contains(g.Holds, "graph")
		where = append(where, Location{Kind: "python", Name: g.Name, File: g.File, Line: g.Line, Note: note})
	}
	ms := []Evidence{{"memory growth per step (" + m.Source + ", fitted)", m.SlopeBytes / (1 << 20), "MiB", "evidence"},
		{"memory growth over the run (" + m.Source + ", fitted)", (m.LastBytes - m.FirstBytes) / (1 << 20), "MiB", "evidence"},
		{"steps measured", float64(m.Steps), "", "evidence"}, {"fit R²", m.R2, "", "evidence"}}
	change := ""
	if graph {
		change = "the kept tensors hold their autograd graph (and the activations it saved): keep loss.item() or tensor.detach() instead, compute kept predictions under torch.no_grad(), and drop retain_graph=True unless a second backward needs it"
	}
	title := fmt.Sprintf("Memory grows %s per step: %s kept across steps", units.Bytes(m.SlopeBytes), where[0].Name)
	s.emit(s.finding("memory.growth", title, 0, ms, where, change))
}

var _ = addRule(Rule{
	ID: "gc.pauses", Class: GC, Factor: 0.8,
	When: "run evidence: garbage-collection pauses (gc.callbacks) per step after start-up >= MinFinding of the step, taken from the host share",
	Change: orTry(orTry("collect less often: gc.collect() every N steps or per epoch, not every step",
		"gc.freeze() after start-up (model and data built): full collections then skip long-lived objects"),
		"fewer small Python objects per step: less for each collection to walk"),
	detect: (*state).gcFinding,
	Fires:  "TestGCFinding", Silent: "TestGCFinding",
})

// gcFinding: collections pause the step; it names the lines that were
// running when the long collections began.
func (s *state) gcFinding() {
	r := s.in.Run
	if s.share[GC] < s.p.MinFinding || r == nil || r.GC == nil {
		return
	}
	var where []Location
	var explicit *rundir.GCSite
	for i := range r.GC.Sites {
		site := &r.GC.Sites[i]
		if len(where) == 3 {
			break
		}
		note := fmt.Sprintf("%d collections, %s in all", site.Count, units.Duration(site.PauseS*1e6))
		if site.Explicit {
			note += "; calls gc.collect"
			if explicit == nil {
				explicit = site
			}
		}
		where = append(where, Location{Kind: "python", Name: site.Func, File: site.File, Line: site.Line, Note: note})
	}
	change := ""
	if explicit != nil {
		change = fmt.Sprintf("gc.collect() runs in the loop (%s:%d): call it every N steps or at the end of an epoch, or drop it", explicit.File, explicit.Line)
		change = thenDo(change, "gc.freeze() after start-up: long-lived objects then stay out of later collections")
	} else {
		change = orTry(orTry("full collections over many live Python objects: gc.freeze() after start-up (model and data built), which keeps them out of later collections",
			"fewer small Python objects per step (tensors instead of lists of Python numbers): less for each collection to walk"),
			"gc.set_threshold with a larger first threshold: fewer collections")
	}
	title := fmt.Sprintf("Garbage collection pauses the step %s per step (%.0f%% of the step)", units.Duration(r.GC.PausePerStepS*1e6), pct(r.GC.Share))
	f := s.finding("gc.pauses", title, s.share[GC]*s.step, s.ev[GC], where, change)
	if explicit == nil {
		f.Try = map[string]string{"gc_freeze": "true"}
	}
	s.emit(f)
}
