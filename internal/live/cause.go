package live

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
)

// Cause is what the diagnosis would name now, from what the live view
// measures: provisional, the report's verdict comes from the trace window
// and the whole run.
type Cause struct {
	// Class is input-bound, gc-bound or undetermined (the classes the live
	// breakdown measures: the rest of the step needs the trace to split).
	Class diagnose.Class `json:"class"`
	// Confidence is high, medium or low as the diagnosis grades it; none
	// when undetermined.
	Confidence string `json:"confidence"`
	// SharePct: the class's share of the breakdown's steps.
	SharePct float64 `json:"share_pct"`
	// Why says what it rests on.
	Why string `json:"why"`
}

// startupSteps: like the diagnosis's per-step record, the first steps
// (imports, the allocator's warm-up, the DataLoader's workers starting)
// are not judged.
const startupSteps = 3

// measured are the classes the live breakdown measures, each with its
// share of the breakdown and the rule whose factor estimates its saving
// (the diagnosis's main rule of the class).
type measure struct {
	class diagnose.Class
	name  string // in the breakdown
	rule  string
	share func(Rank) float64
}

var measured = []measure{
	{diagnose.Input, "data wait", "input.loader", func(r Rank) float64 { return r.DataWait }},
	{diagnose.GC, "GC", "gc.pauses", func(r Rank) float64 { return r.GC }},
}

// Diagnose is the cause the diagnosis would name from r's breakdown, with
// its thresholds (diagnose.Default) and rules' factors: a class's saving
// is its share times its rule's factor, and it is the verdict when it
// outranks every other class. The rest of the step (time on a CPU,
// blocked, waiting for a CPU) is not split into classes live: it counts
// as if one class held all of it and its fix saved all of it (the
// largest factor of any rule), so a cause is named only when no split of
// the rest could outrank it. Confidence follows the diagnosis's share and
// margin bars, lowered once when the step waited for a CPU
// CPUWaitNote of its time (the timings are the busy machine's). Nil
// without a breakdown.
func Diagnose(r Rank) *Cause {
	if r.BreakdownN == 0 {
		return nil
	}
	p := diagnose.Default
	undetermined := func(why string) *Cause {
		return &Cause{Class: diagnose.Undetermined, Confidence: "none", Why: why}
	}
	if r.BreakdownN < BreakdownSteps || r.FirstBreakdownStep <= startupSteps {
		return undetermined(fmt.Sprintf("too few steps yet (%d after the first %d)", BreakdownSteps, startupSteps))
	}
	type score struct {
		class         diagnose.Class
		name          string
		share, saving float64
	}
	var scores []score
	measuredShare := 0.0
	for _, m := range measured {
		sh := m.share(r)
		measuredShare += sh
		scores = append(scores, score{class: m.class, name: m.name, share: sh, saving: sh * ruleFactor(m.rule)})
	}
	slices.SortStableFunc(scores, func(a, b score) int {
		return cmp.Or(cmp.Compare(b.saving, a.saving), cmp.Compare(b.share, a.share))
	})
	top := scores[0]
	other := max(0, 1-measuredShare)
	worst := other * maxOtherFactor()
	second := max(scores[1].saving, worst)
	if top.share < p.MinFinding {
		return undetermined(fmt.Sprintf("data wait %.0f%%, GC %.0f%%; the other %.0f%% is not split live",
			pct(r.DataWait), pct(r.GC), pct(other)))
	}
	margin := top.saving - second
	if margin <= 0 {
		return undetermined(fmt.Sprintf("%s %.0f%% (~%.0f%% to save); the other %.0f%% is not split live",
			top.name, pct(top.share), pct(top.saving), pct(other)))
	}
	c := &Cause{Class: top.class, SharePct: round1(pct(top.share))}
	switch {
	case top.share >= p.HighShare && margin >= p.HighMargin:
		c.Confidence = "high"
	case top.share >= p.MediumShare && margin >= p.MediumMargin:
		c.Confidence = "medium"
	default:
		c.Confidence = "low"
	}
	c.Why = fmt.Sprintf("%s %.0f%%: ~%.0f%% to save; the rest at most ~%.0f%%",
		top.name, pct(top.share), pct(top.saving), pct(second))
	if r.CPUWaitAll >= p.CPUWaitNote {
		c.Confidence = lower(c.Confidence)
		c.Why += fmt.Sprintf("; the machine is busy: the thread waited for a CPU %.0f%% of the steps, data wait included", pct(r.CPUWaitAll))
	}
	return c
}

// ruleFactor is the diagnosis's factor of the rule id.
func ruleFactor(id string) float64 {
	for _, r := range diagnose.Rules {
		if r.ID == id {
			return r.Factor
		}
	}
	panic("live: no diagnosis rule " + id)
}

// maxOtherFactor is the largest factor of a rule of a class the live view
// does not measure: the most the rest of the step could save.
func maxOtherFactor() float64 {
	f := 0.0
	for _, r := range diagnose.Rules {
		if !slices.ContainsFunc(measured, func(m measure) bool { return m.class == r.Class }) {
			f = max(f, r.Factor)
		}
	}
	return f
}

func lower(c string) string {
	switch c {
	case "high":
		return "medium"
	case "medium":
		return "low"
	}
	return c
}

func pct(x float64) float64 { return 100 * x }

func round1(x float64) float64 { return float64(int(x*10+0.5)) / 10 }

// causeText is the cause as a line's text (classes and numbers only:
// nothing of the program's to escape).
func causeText(c *Cause) string {
	if c == nil {
		return "cause so far: no steps yet"
	}
	if c.Class == diagnose.Undetermined {
		return "cause so far (provisional): undetermined: " + c.Why
	}
	return fmt.Sprintf("cause so far (provisional): %s, %s confidence (%s)", c.Class, c.Confidence, c.Why)
}
