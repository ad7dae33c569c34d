package live

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
)

// Cause is what the diagnosis would name now, from what the live view
// measures: provisional, the report's verdict comes from the trace window
// and the whole run.
type Cause struct {
	// Class is one the live breakdown measures (input-bound, gc-bound;
	// CPU-only: host-bound, cpu-compute-bound; communication-bound) or
	// undetermined: the rest of the step needs the trace to split.
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

// measure is a class the live breakdown measures, with its share of the
// breakdown and the rule whose factor estimates its saving (the
// diagnosis's main rule of the class).
type measure struct {
	class diagnose.Class
	name  string // in the breakdown
	rule  string
	share float64
	// also: a rule of another class whose time this share may be (the
	// trace tells): as a runner-up, the share saves the larger factor
	also string
}

// measures are the classes r's breakdown measures: the data wait and GC
// always; with the sampler's split, the time in collectives
// (communication-bound: waiting for other ranks too, as the diagnosis's
// exposed communication holds it) and, on a CPU-only run, Python
// (host-bound: Python between ops) and native code (cpu-compute-bound, or
// framework-overhead when its ops are many tiny ones, which only the
// trace tells). With CUDA the host's Python and native time is the
// device's idle or not: the trace tells which class it is. Python and
// native code each take their part of the wait for a CPU, as the
// diagnosis's trace, timing ops by the clock, does on a busy machine
// (whose verdict then says so, as Diagnose does).
func measures(r Rank) []measure {
	ms := []measure{
		{class: diagnose.Input, name: "data wait", rule: "input.loader", share: r.DataWait},
		{class: diagnose.GC, name: "GC", rule: "gc.pauses", share: r.GC},
	}
	if on := r.Python + r.Native; r.OnCPUSplit && !r.UsesCUDA && on > 0 {
		k := 1 + r.CPUWait/on
		ms = append(ms,
			measure{class: diagnose.Host, name: "Python", rule: "host.python", share: r.Python * k},
			measure{class: diagnose.CPUCompute, name: "native code", rule: "cpu.native", share: r.Native * k, also: "cpu.tiny-ops"})
	}
	if r.BlockedSplit {
		ms = append(ms, measure{class: diagnose.Comm, name: "collectives", rule: "comm.exposed", share: r.Comm + r.RankWait})
	}
	return ms
}

// Diagnose is the cause the diagnosis would name from r's breakdown, with
// its thresholds (diagnose.Default) and rules' factors: a class's saving
// is its share times its rule's factor, and it is the verdict when it
// outranks every other class. The classes are measures' (the data wait
// and GC; with the sampler's split, collectives and, CPU-only, Python and
// native code); the rest of the step (a CPU-wait, blocked time outside
// collectives, time on a CPU with CUDA or unsampled) is not split into
// classes live: it counts as if one class held all of it and its fix
// saved all of it (the largest factor of any other rule), so a cause is
// named only when no split of the rest could outrank it. Confidence follows the diagnosis's share and
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
		class                 diagnose.Class
		name                  string
		share, saving, asNext float64
	}
	ms := measures(r)
	var scores []score
	measuredShare := 0.0
	var parts []string
	for _, m := range ms {
		measuredShare += m.share
		sc := score{class: m.class, name: m.name, share: m.share, saving: m.share * ruleFactor(m.rule)}
		sc.asNext = sc.saving
		if m.also != "" {
			sc.asNext = max(sc.saving, m.share*ruleFactor(m.also))
		}
		scores = append(scores, sc)
		parts = append(parts, fmt.Sprintf("%s %.0f%%", m.name, pct(m.share)))
	}
	slices.SortStableFunc(scores, func(a, b score) int {
		return cmp.Or(cmp.Compare(b.saving, a.saving), cmp.Compare(b.share, a.share))
	})
	top := scores[0]
	other := max(0, 1-measuredShare)
	second := other * maxOtherFactor(ms)
	for _, sc := range scores[1:] {
		second = max(second, sc.asNext)
	}
	if top.share < p.MinFinding {
		return undetermined(fmt.Sprintf("%s; the other %.0f%% is in no class measured live", strings.Join(parts, ", "), pct(other)))
	}
	margin := top.saving - second
	if margin <= 0 {
		return undetermined(fmt.Sprintf("%s %.0f%% (~%.0f%% to save), the rest could save ~%.0f%%; the other %.0f%% is in no class measured live",
			top.name, pct(top.share), pct(top.saving), pct(second), pct(other)))
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
	c.Why = fmt.Sprintf("%s %.0f%%", top.name, pct(top.share))
	if own := map[diagnose.Class]float64{diagnose.Host: r.Python, diagnose.CPUCompute: r.Native}[top.class]; own > 0 && top.share-own >= 0.005 {
		c.Why += fmt.Sprintf(" (%.0f%% of it its part of the wait for a CPU)", pct(top.share-own))
	}
	c.Why += fmt.Sprintf(": ~%.0f%% to save; the rest at most ~%.0f%%", pct(top.saving), pct(second))
	switch top.class {
	case diagnose.CPUCompute:
		c.Why += "; many tiny ops would make it framework-overhead: the trace tells"
	case diagnose.Comm:
		if r.RankWait > 0 {
			c.Why += fmt.Sprintf("; %.0f%% of the step waiting for other ranks", pct(r.RankWait))
		}
	}
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

// maxOtherFactor is the largest factor of a rule of a class ms do not
// measure: the most the rest of the step could save.
func maxOtherFactor(ms []measure) float64 {
	f := 0.0
	for _, r := range diagnose.Rules {
		if !slices.ContainsFunc(ms, func(m measure) bool { return m.class == r.Class }) {
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
