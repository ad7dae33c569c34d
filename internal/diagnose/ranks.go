package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/ranks"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// RunDiagnosis is the verdict across ranks.
type RunDiagnosis struct {
	// Definition names the version of the diagnosis method (docs/diagnosis.md).
	Definition string `json:"definition"`
	// Verdict is the run's verdict: straggler when one rank holds the others back, else the class most ranks share, weighted by step time.
	Verdict Verdict `json:"verdict"`
	// PerRank is each diagnosed rank's verdict, by rank.
	PerRank []RankVerdict `json:"per_rank"`
	// Findings are the straggler finding, or else every rank's findings (titles prefixed with the rank) by estimated saving.
	Findings []Finding `json:"findings"`
}

// RankVerdict is one rank's primary class.
type RankVerdict struct {
	// Rank is the rank.
	Rank int `json:"rank"`
	// Primary is the rank's verdict class.
	Primary Class `json:"primary"`
	// SharePct is the primary class's share of the rank's mean step, in percent.
	SharePct float64 `json:"share_pct"`
	// Confidence is the rank's verdict confidence: high, medium, low or none.
	Confidence string `json:"confidence"`
	// StepUs is the rank's mean step time over the steps used.
	StepUs float64 `json:"step_us"`
	// CommPct is the rank's communication-bound share (exposed communication), in percent of its step.
	CommPct float64 `json:"communication_pct"`
}

// RankInput is one rank's diagnosis.
type RankInput struct {
	Rank      int
	Diagnosis *Diagnosis
}

// Spread is what the straggler rule reads of the comparison across
// ranks. ranks.Result fills it for analyze (SpreadOf); the merge of rank
// summaries (internal/summary) fills it from summaries, so that both say
// the same of the same ranks.
type Spread struct {
	// SlowestRank is the rank with the longest mean step time; -1 with no rank.
	SlowestRank int
	// Straggler is the rank the others wait for in collectives, -1 when none is found.
	Straggler int
	// MedianStepUs is the median of the ranks' mean step times.
	MedianStepUs float64
	// ImbalancePct is SlowestRank's mean step time minus MedianStepUs, in % of MedianStepUs.
	ImbalancePct float64
	// Steps is the number of step numbers any rank has.
	Steps int
	// SlowestSteps is how many of them SlowestRank is the slowest in.
	SlowestSteps int
	// StepsCompared is the number of steps every rank has.
	StepsCompared int
}

// SpreadOf reads the straggler rule's inputs from the cross-rank analysis
// (nil: none).
func SpreadOf(rr *ranks.Result) *Spread {
	if rr == nil {
		return nil
	}
	sp := &Spread{SlowestRank: rr.SlowestRank, Straggler: rr.Straggler, MedianStepUs: rr.MedianStepUs,
		ImbalancePct: rr.ImbalancePct, Steps: len(rr.Steps)}
	for _, st := range rr.Steps {
		if st.SlowestRank == rr.SlowestRank {
			sp.SlowestSteps++
		}
		if !slices.Contains(st.Us, -1) {
			sp.StepsCompared++
		}
	}
	return sp
}

// commExtremes are the ranks with the lowest and the highest
// communication share.
func commExtremes(per []RankVerdict) (lo, hi RankVerdict) {
	lo, hi = per[0], per[0]
	for _, r := range per {
		if r.CommPct < lo.CommPct {
			lo = r
		}
		if r.CommPct > hi.CommPct {
			hi = r
		}
	}
	return lo, hi
}

// consistentlySlowest reports whether the slowest rank is the slowest in
// at least two thirds of the steps (any answer with fewer than 3 steps:
// the confidence then says so): with short steps the slowest rank of the
// mean can be noise.
func consistentlySlowest(sp *Spread) bool {
	if sp.Steps < 3 {
		return true
	}
	return 3*sp.SlowestSteps >= 2*sp.Steps
}

// stepsCompared is the number of steps every rank has.
func stepsCompared(sp *Spread) int {
	if sp == nil {
		return 0
	}
	return sp.StepsCompared
}

var _ = addRule(Rule{
	ID: "ranks.straggler", Class: Straggler, Factor: 1.0,
	When:   "several ranks: imbalance >= Imbalance %, or communication shares spread >= CommSpread points",
	Change: "find out why the slow rank is slow (its own verdict below) and balance the work across ranks",
	Fires:  "TestPlantedStraggler", Silent: "TestStragglerNeedsConsistency",
})

// ComputeRanks diagnoses a multi-rank run from the cross-rank analysis and
// each rank's own diagnosis. The straggler rule: step-time imbalance (slowest
// vs median) >= Imbalance %, or communication shares that differ by >=
// CommSpread points (collectives equalise step times, so the rank the others
// wait for is the one that waits least).
func ComputeRanks(rr *ranks.Result, per []RankInput, params *Params) *RunDiagnosis {
	return ComputeSpread(SpreadOf(rr), per, params)
}

// ComputeSpread is ComputeRanks on the straggler rule's inputs alone (nil:
// no comparison across ranks).
func ComputeSpread(rr *Spread, per []RankInput, params *Params) *RunDiagnosis {
	p := Default
	if params != nil {
		p = *params
	}
	d := &RunDiagnosis{Definition: Definition, PerRank: []RankVerdict{}, Findings: []Finding{}}
	byRank := map[int]*Diagnosis{}
	for _, r := range per {
		if r.Diagnosis == nil {
			continue
		}
		byRank[r.Rank] = r.Diagnosis
		rv := RankVerdict{Rank: r.Rank, Primary: r.Diagnosis.Verdict.Primary, SharePct: r.Diagnosis.Verdict.SharePct,
			Confidence: r.Diagnosis.Verdict.Confidence, StepUs: stats.Round1(r.Diagnosis.StepUs)}
		for _, c := range r.Diagnosis.Classes {
			if c.Class == Comm {
				rv.CommPct = c.SharePct
			}
		}
		d.PerRank = append(d.PerRank, rv)
	}
	slices.SortFunc(d.PerRank, func(a, b RankVerdict) int { return cmp.Compare(a.Rank, b.Rank) })
	if len(d.PerRank) == 0 {
		d.Verdict = Verdict{Primary: Undetermined, Confidence: "none", Why: "no rank could be diagnosed"}
		return d
	}
	// straggler
	slow, lostUs, why := -1, 0.0, ""
	var ms []Evidence
	lo, hi := commExtremes(d.PerRank)
	if rr != nil && rr.ImbalancePct >= p.Imbalance && rr.SlowestRank >= 0 && consistentlySlowest(rr) {
		slow = rr.SlowestRank
		if rr.Straggler >= 0 {
			slow = rr.Straggler
		}
		lostUs = rr.ImbalancePct / 100 * rr.MedianStepUs
		why = fmt.Sprintf("rank %d's steps are %.0f%% longer than the median rank's", rr.SlowestRank, rr.ImbalancePct)
		if rr.Straggler < 0 && lo.Rank != rr.SlowestRank && hi.CommPct-lo.CommPct >= p.CommSpread {
			// no collective matched across ranks to say who arrives last;
			// the longest steps, waiting included, can be a waiting
			// rank's (a CI run under load named a rank that spent most
			// of its step in all-reduce): the rank that waits least is
			// the one the others wait for
			slow = lo.Rank
			why = fmt.Sprintf("the ranks' steps differ by up to %.0f%% (rank %d's are the longest, waiting included); rank %d spends %.0f%% of its step in communication, the others up to %.0f%%: they wait for it",
				rr.ImbalancePct, rr.SlowestRank, lo.Rank, lo.CommPct, hi.CommPct)
		}
		if rr.Straggler >= 0 && rr.Straggler != rr.SlowestRank {
			// the longest step is not the culprit's: a rank that waits in
			// collectives has long steps because another arrives late
			comm := map[int]float64{}
			most := 0.0
			for _, r := range d.PerRank {
				comm[r.Rank] = r.CommPct
				if r.Rank != rr.Straggler {
					most = max(most, r.CommPct)
				}
			}
			why = fmt.Sprintf("the ranks' steps differ by up to %.0f%% (rank %d's are the longest, waiting included); in collectives the others wait for rank %d: it spends %.0f%% of its step in communication, the others up to %.0f%%",
				rr.ImbalancePct, rr.SlowestRank, rr.Straggler, comm[rr.Straggler], most)
		}
		ms = append(ms, Evidence{"step-time imbalance (slowest vs median rank)", rr.ImbalancePct, "%", "ranks"},
			Evidence{"median step", rr.MedianStepUs, "us", "ranks"})
	} else if hi.CommPct-lo.CommPct >= p.CommSpread {
		slow = lo.Rank
		var sum float64
		n := 0
		for _, r := range d.PerRank {
			if r.Rank != lo.Rank {
				sum += (r.CommPct - lo.CommPct) / 100 * r.StepUs
				n++
			}
		}
		lostUs = sum / float64(max(n, 1))
		why = fmt.Sprintf("the other ranks spend up to %.0f%% of the step in communication, rank %d only %.0f%%: they wait for it", hi.CommPct, lo.Rank, lo.CommPct)
		ms = append(ms, Evidence{fmt.Sprintf("rank %d communication share", hi.Rank), hi.CommPct, "%", "step_breakdown"},
			Evidence{fmt.Sprintf("rank %d communication share", lo.Rank), lo.CommPct, "%", "step_breakdown"})
	}
	if slow >= 0 {
		var step float64
		for _, r := range d.PerRank {
			step = max(step, r.StepUs)
		}
		share := lostUs / max(step, 1)
		conf := "medium"
		if share >= p.HighShare/2 {
			conf = "high"
		}
		if steps := stepsCompared(rr); steps < 3 {
			// with so few steps a difference between ranks can be noise
			conf = "low"
			why += fmt.Sprintf("; only %d step(s) compared, so the difference may be noise", steps)
		}
		v := Verdict{Primary: Straggler, Detail: fmt.Sprintf("rank %d holds the others back", slow), SharePct: stats.Round1(100 * share), Confidence: conf, Why: why}
		where := []Location{{Kind: "rank", Name: fmt.Sprint(slow)}}
		change, alts := rule("ranks.straggler").Change, []Alternative(nil)
		if sd := byRank[slow]; sd != nil {
			v.Why += fmt.Sprintf("; rank %d itself is %s (%.0f%%)", slow, sd.Verdict.Primary, sd.Verdict.SharePct)
			if len(sd.Findings) > 0 {
				top := sd.Findings[0]
				where = append(where, top.Where...)
				change = fmt.Sprintf("rank %d: %s — %s", slow, top.Title, top.Change)
				alts = top.Alternatives
			}
			if common := everyRankFindings(per, sd.Findings, 100*p.MinFinding); len(common) > 0 {
				// what every rank needs stays visible behind the slow one
				// (DDP accumulation without no_sync on two ranks of a
				// loaded machine showed in the rank sections alone)
				v.Why += fmt.Sprintf("; on every rank too (rank %d's words): %s", slow, strings.Join(common, "; "))
			}
		}
		f := Finding{Rule: "ranks.straggler", Class: Straggler, Title: fmt.Sprintf("Rank %d is the straggler: the others lose %s per step waiting", slow, units.Duration(lostUs)),
			Measured: ms, Where: where, Change: change, Alternatives: alts, AtStakeUs: stats.Round1(lostUs), AtStakePct: stats.Round1(100 * share),
			SavingUs: stats.Round1(lostUs * rule("ranks.straggler").Factor), SavingPct: stats.Round1(100 * share * rule("ranks.straggler").Factor), Confidence: conf}
		d.Findings = append(d.Findings, f)
		d.Verdict = v
		return d
	}
	// no straggler: the class most ranks share, weighted by step time
	w := map[Class]float64{}
	for _, r := range d.PerRank {
		w[r.Primary] += r.StepUs
	}
	best := d.PerRank[0].Primary
	for c, x := range w {
		if x > w[best] || (x == w[best] && c < best) {
			best = c
		}
	}
	n, conf := 0, "high"
	for _, r := range d.PerRank {
		if r.Primary == best {
			n++
			if r.Confidence == "low" || (r.Confidence == "medium" && conf == "high") {
				conf = r.Confidence
			}
		}
	}
	if n < len(d.PerRank) {
		conf = lower(conf)
	}
	// findings: each rank's, named by rank, ranked by saving
	for _, r := range per {
		if r.Diagnosis == nil {
			continue
		}
		for _, f := range r.Diagnosis.Findings {
			f.Title = fmt.Sprintf("rank %d: %s", r.Rank, f.Title)
			d.Findings = append(d.Findings, f)
		}
	}
	slices.SortStableFunc(d.Findings, func(a, b Finding) int { return cmp.Compare(b.SavingUs, a.SavingUs) })
	d.Verdict = Verdict{Primary: best, Detail: detail[best], Confidence: conf,
		Why: fmt.Sprintf("%d of %d ranks are %s; no straggler (imbalance below %.0f%%, communication shares within %.0f points)", n, len(d.PerRank), best, p.Imbalance, p.CommSpread)}
	return d
}

// everyRankFindings are the titles of the slow rank's findings after its
// first (the straggler finding's change) that would save at least
// minSavingPct of its step and whose rules fire on every diagnosed rank,
// at most two; not comm.exposed, whose time on the other ranks is their
// wait for the straggler.
func everyRankFindings(per []RankInput, slow []Finding, minSavingPct float64) []string {
	var out, rules []string
	for _, f := range slow[min(1, len(slow)):] {
		every := f.Rule != "comm.exposed" && f.SavingPct >= minSavingPct
		for _, r := range per {
			if every && r.Diagnosis != nil && !slices.ContainsFunc(r.Diagnosis.Findings, func(g Finding) bool { return g.Rule == f.Rule }) {
				every = false
			}
		}
		if every && !slices.Contains(rules, f.Rule) && len(out) < 2 {
			out, rules = append(out, f.Title), append(rules, f.Rule)
		}
	}
	return out
}
