package diagnose

import (
	"fmt"
	"path/filepath"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
)

// Work that does not belong in the step: an evaluation pass, metric
// computation, formatting tensors for logging, all run every step. The
// sampler's stacks show it: a forward pass under torch.no_grad /
// inference_mode (the decorator's frame, or a `with` block around the
// user's line), frames of a metric library, torch's tensor printing.
// File I/O (checkpoints, log files) is the io.in-step rule's.

// offStepWork is the main thread's share in work that does not belong in
// the step (the window's, which is the steps' own, where known; the whole
// run's includes the program's start-up), when host.off-step fires.
func (s *state) offStepWork() (float64, bool) {
	if s.py == nil || s.py.OffStepShare < s.p.MinFinding || len(s.py.OffStep) == 0 {
		return 0, false
	}
	win := s.py.OffStepWindowShare
	if win < 0 {
		return s.py.OffStepShare, true
	}
	out := 0.0
	if r := s.in.Run; r != nil && !s.py.OutliersLeftOut {
		out = r.WindowOutlierShare
	}
	// work every N steps lands in the window's outlier steps: when they
	// hold most of it, it is not in every step (samples are few: an
	// evaluation every 50 steps held 15% of a long window's samples and
	// its two outlier steps 9% of its time)
	return win, win-out >= s.p.MinFinding && out < win/2
}

var _ = addRule(Rule{
	ID: "host.off-step", Class: Host, Factor: 0.9,
	When:   "Python profile: main-thread samples over the whole run in a forward pass under torch.no_grad/inference_mode (decorator frame or a with block around the user's line), metric libraries (torchmetrics, sklearn.metrics, torcheval) or tensor printing (torch/_tensor_str.py) >= MinFinding, both over the whole run and within the recorded window beyond what its outlier steps hold above the median, which must be under half the window's share (work every N steps fills at most one); file I/O is io.in-step's",
	Change: "run evaluation, metrics and tensor logging every N steps or once per epoch (asynchronously where possible), not in every step",
	detect: (*state).offStepFinding,
	Fires:  "TestOffStepInOutlierSteps", Silent: "TestOffStepInOutlierSteps",
})

// offStepFinding: work that does not belong in the step takes at least
// MinFinding of the main thread over the run, and of the window beyond
// what its outlier steps hold (a window of many short steps can take in
// an evaluation every N steps: it makes its step an outlier).
func (s *state) offStepFinding() {
	share, ok := s.offStepWork()
	if !ok {
		return
	}
	var where []Location
	for _, l := range s.py.OffStep[:min(3, len(s.py.OffStep))] {
		where = append(where, lineLocation(l.Line, l.Kind))
	}
	top := s.py.OffStep[0]
	var change string
	switch top.Kind {
	case runevidence.OffStepEval:
		change = fmt.Sprintf("the evaluation pass at %s:%d runs in every step: run it every N steps or once per epoch (if step %% N == 0), or on a copy of the weights in another process", filepath.Base(top.File), top.Line.Line)
	case runevidence.OffStepMetrics:
		change = fmt.Sprintf("metrics are computed in every step at %s:%d: accumulate the predictions on the device and compute the metric every N steps or per epoch (torchmetrics: update() per step, compute() per epoch)", filepath.Base(top.File), top.Line.Line)
	default:
		change = fmt.Sprintf("a tensor is formatted for logging in every step at %s:%d: log every N steps, and a scalar (loss.item() then) rather than a whole tensor", filepath.Base(top.File), top.Line.Line)
	}
	ms := []Evidence{{"main-thread samples in work that does not belong in the step (whole run, imports left out)", pct(s.py.OffStepShare), "%", "pyprofile"}}
	if s.py.OffStepWindowShare >= 0 {
		ms = append(ms, Evidence{"main-thread samples in it within the recorded window", pct(s.py.OffStepWindowShare), "%", "pyprofile"})
	}
	title := fmt.Sprintf("Work that does not belong in the step takes %.0f%% of the main thread: %s at %s:%d", pct(share), top.Kind, filepath.Base(top.File), top.Line.Line)
	s.emit(s.finding("host.off-step", title, min(share, 1)*s.step, ms, where, change))
}
