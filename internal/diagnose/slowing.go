package diagnose

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "run.slowing", Class: Slowing, Factor: 0.9,
	When: "run evidence: the steps after start-up (>= 24, the window's included) get slower: each quarter's median >= 1.05x the one before, the last quarter's >= 1.5x the first's, and a line through the medians of eight blocks of them explains >= 70% of their variance, and the steps less their time waiting for a CPU grow so too (else the machine got busier: a note on the window), and, where the agent counted the calls a step of a model called on one sample, their time per call grows so too (else each step did more items, as an RL episode lasting longer: a note on the window); at stake: their mean less the first quarter's median, as a share of their mean (of the step, as every finding's); where the model is called per item (cpu.tiny-ops) and the calls were not counted, the change says a step may do more items; where the agent counted the steps' outermost module calls (>= 2 counted steps in the first and the last quarter) and they grew >= 1.25x at < 1.25x the time per call, the change says a loop in the step runs longer (a solver library's adaptive steps, by its module's name); it goes first after memory.growth",
	Change: orTry(orTry("a step does work that grows with what the run keeps (torch.cat onto a kept tensor, a list, dict or DataFrame appended to and processed whole, a search over everything kept): preallocate a buffer, or keep a list of chunks and concatenate once",
		"bound what is kept (collections.deque(maxlen=N)): the work per step then stops growing"),
		"process only the new items"),
	detect: (*state).slowingFinding,
	Fires:  "TestSlowingFinding", Silent: "TestSlowingFinding",
})

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
			where = append(where, lineLocation(l, "main-thread samples, whole run"))
		}
	}
	title := fmt.Sprintf("Steps get slower as the run goes on: %s (steps %d-%d) to %s (steps %d-%d)",
		units.Seconds(g.FirstMedianS), g.FirstSteps[0], g.FirstSteps[1], units.Seconds(g.LastMedianS), g.LastSteps[0], g.LastSteps[1])
	ms := []Evidence{{"median step, first quarter of the run", g.FirstMedianS * 1e6, "us", "evidence"},
		{"median step, last quarter of the run", g.LastMedianS * 1e6, "us", "evidence"},
		{"step time added per step", g.SlopeS * 1e6, "us", "evidence"},
		{"R² of the line through the step times (medians of eight blocks)", g.R2, "", "evidence"}}
	change := ""
	if len(g.Stages) > 0 {
		at := make([]string, len(g.Stages))
		for i, n := range g.Stages {
			at[i] = strconv.Itoa(n)
		}
		title += fmt.Sprintf(", in %d stages (from steps %s)", len(g.Stages)+1, strings.Join(at, ", "))
		change = fmt.Sprintf("the step's work rises in stages, not with what the run keeps: a schedule that grows the input (progressive resizing, a sequence-length or batch-size ramp) "+
			"or the trained part (layers unfrozen) at steps %s; each stage has a steady state of its own, and the window shows an earlier one: "+
			"record the last stage's (bottleneck run --skip-first %d ...), which the run's end pays most", strings.Join(at, ", "), g.Stages[len(g.Stages)-1]+5)
	}
	if in := s.in.Run.InputGrowth; in != nil {
		title += fmt.Sprintf(": the model's input grows, %s at step %d to %s at step %d", shapeText(in.First), in.FirstStep, shapeText(in.Last), in.LastStep)
		ms = append(ms, Evidence{"input elements, first step", float64(runevidence.Numel(in.First)), "", "evidence"},
			Evidence{"input elements, latest step", float64(runevidence.Numel(in.Last)), "", "evidence"})
		change = "every call of the model processes everything fed to it so far, as a generation loop does that appends each new token to its input " +
			"and runs the whole sequence again: cache what the earlier positions computed and feed only the new ones " +
			"(the keys and values of attention: a KV cache; past_key_values / use_cache=True in Hugging Face models, or model.generate()), " +
			"or bound the input (a sliding window of the last N positions)"
	}
	if g.FirstCalls > 0 {
		ms = append(ms, Evidence{"outermost module calls a counted step, first quarter", g.FirstCalls, "", "evidence"},
			Evidence{"outermost module calls a counted step, last quarter", g.LastCalls, "", "evidence"})
	}
	if g.MoreCalls {
		title += fmt.Sprintf(", each calling %s more times (%.0f to %.0f a step)", s.callsClass(), g.FirstCalls, g.LastCalls)
		change = moreCallsChange(s.in.Run.StepCalls, g)
	}
	if g.FirstItems > 0 {
		// counted, and the time per item grew too (else MoreItems)
		ms = append(ms, Evidence{"calls a step of the model called on one sample, first quarter", g.FirstItems, "", "evidence"},
			Evidence{"calls a step of the model called on one sample, last quarter", g.LastItems, "", "evidence"})
	} else if m, n, ok := s.itemModelOfRun(); ok && len(g.Stages) == 0 && s.in.Run.InputGrowth == nil && !g.MoreCalls {
		// an agent that did not count the items a step: an RL program's
		// step is an episode, which lasts longer as its policy learns
		// (pytorch/examples' reinforce: 27.8 ms to 219 ms a step while
		// CartPole's episodes grew)
		change = fmt.Sprintf("each step may do more items as the run goes on, not work that grows with what it keeps: the model (%s) runs about %.0f times a step on one sample each, "+
			"and a step that is an RL episode lasts longer as its policy learns: then the time per item is the measure (this run did not count the items a step; a run with this version does); "+
			"else %s", modelCallRef(*m), n, rule("run.slowing").Change)
	}
	// Share of the run's step time, as run.periodic's: the growth's mean
	// over the run against a window of early steps read 500% (reinforce)
	share := g.ExcessS / (g.FirstMedianS + g.ExcessS)
	s.emit(s.finding("run.slowing", title, share*s.step, ms, where, change))
}

// callsClass names the module class the steps called most outermost
// ("the model" when unknown).
func (s *state) callsClass() string {
	if c := s.in.Run.StepCalls; c != nil && c.Class != "" {
		return c.Class
	}
	return "the model"
}

// moreCallsChange: the steps grew by calling the model more times, each
// call taking as long; an ODE solver's by its adaptive steps.
func moreCallsChange(c *rundir.StepCalls, g *runevidence.StepGrowth) string {
	if solver, ok := solverLibrary(c); ok {
		// torchdiffeq's ode_demo.py: 26 to 56-62 evaluations a step over
		// 300 iterations (8 to 14.6 ms)
		return fmt.Sprintf("%s's adaptive steps grow as the learned dynamics get harder to integrate: the model's evaluations go from %.0f to %.0f a step, each taking as long; "+
			"bound them where the accuracy allows: %s, or a regulariser that keeps the dynamics easy to solve (kinetic-energy or Jacobian-norm penalties)", solver, g.FirstCalls, g.LastCalls, fewerEvaluations)
	}
	return fmt.Sprintf("each step does more of the same work as the run goes on: its outermost module calls go from %.0f to %.0f a step, each taking as long, so a loop in the step runs more times "+
		"(an adaptive solver's steps, a loop until convergence, an episode lasting longer), not work growing with what the run keeps: bound that loop where the result allows (a fixed number of iterations, a looser tolerance)",
		g.FirstCalls, g.LastCalls)
}

// itemModelOfRun is itemModel over the window's layer op calls, for
// rules outside the tiny-op ones.
func (s *state) itemModelOfRun() (*rundir.ModelCall, float64, bool) {
	if s.in.Run == nil {
		return nil, 0, false
	}
	_, perBatch, _ := s.layerCalls()
	return s.itemModel(perBatch)
}

// shapeText writes a shape as PyTorch prints a tensor's size: [1, 307].
func shapeText(shape []int64) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// slowing is the run's step growth when the run evidence has one.
func (s *state) slowing() *runevidence.StepGrowth {
	if r := s.in.Run; r != nil {
		return r.Slowing
	}
	return nil
}
