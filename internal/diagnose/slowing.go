package diagnose

import (
	"fmt"

	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// slowingFinding: the run's steps get slower as it goes on
// (RunEvidence.Slowing): a step does work that grows with what the run
// has kept, so no window of a few steps is its steady state, and the
// run's cost grows with the square of its length. It goes first after a
// memory leak: the later steps pay what the window does not show. At
// stake: what the growth adds to the mean step over the run. Where: the
// hottest lines over the whole run, whose later steps dominate it.
func (s *state) slowingFinding() {
	g := s.slowing()
	if g == nil {
		return
	}
	var where []Location
	if s.py != nil {
		for _, l := range s.py.RunHot[:min(3, len(s.py.RunHot))] {
			where = append(where, Location{Kind: "python", Name: l.Func, File: l.File, Line: l.Line, SharePct: l.Pct, Note: "main-thread samples, whole run"})
		}
	}
	title := fmt.Sprintf("Steps get slower as the run goes on: %s (steps %d-%d) to %s (steps %d-%d)",
		units.Seconds(g.FirstMedianS), g.FirstSteps[0], g.FirstSteps[1], units.Seconds(g.LastMedianS), g.LastSteps[0], g.LastSteps[1])
	ms := []Evidence{{"median step, first quarter of the run", g.FirstMedianS * 1e6, "us", "evidence"},
		{"median step, last quarter of the run", g.LastMedianS * 1e6, "us", "evidence"},
		{"step time added per step", g.SlopeS * 1e6, "us", "evidence"},
		{"R² of the line through the step times", g.R2, "", "evidence"}}
	s.emit(s.finding("run.slowing", title, g.ExcessS*1e6, ms, where, ""))
}

// slowing is the run's step growth when the run evidence has one.
func (s *state) slowing() *StepGrowth {
	if r := s.in.Run; r != nil {
		return r.Slowing
	}
	return nil
}
