package summary

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
)

// ReportFormat names the job report's JSON format.
const ReportFormat = "bottleneck.job-report/1"

// The detector's rule (docs/distributed.md, "Finding stragglers"). Its
// constants are statistics' and the report's, not the simulation's:
// MinRanks is where a median and MAD over ranks start to mean something,
// Z = 5 robust standard deviations leaves ~3e-7 of normal ranks above it
// (0.003 false ranks in a 10,000-rank job), and FloorPct keeps a rank
// whose excess would cost the job under 2% of a step unnamed however
// quiet the others are.
const (
	MinRanks = 16
	Z        = 5.0
	FloorPct = 2.0
)

// The cause classes of a straggler.
const (
	CauseCompute = "compute" // its own kernels take longer
	CauseData    = "data"    // it waits longer for its input
	CauseHost    = "host"    // its host (Python, framework, launches) takes longer
	CauseLink    = "link"    // its communication takes longer, not waiting for others
)

// Report is the job report.
type Report struct {
	Format string `json:"format"`
	// Ranks is the number of ranks merged.
	Ranks int `json:"ranks"`
	// WorldSize is the largest world size the summaries give; 0 when none does.
	WorldSize int `json:"world_size,omitempty"`
	// Missing are the ranks below WorldSize that no summary has, as ranges.
	Missing []Range `json:"missing,omitempty"`
	// Hosts is the number of distinct hosts named.
	Hosts int `json:"hosts"`
	// Steps is the number of step numbers any rank has; StepsCompared those every rank has.
	Steps         int `json:"steps"`
	StepsCompared int `json:"steps_compared"`
	// MatchedSteps are the steps every rank has with collectives: the others' wait is measured on them.
	MatchedSteps int `json:"matched_steps"`
	// StepUs is the distribution over ranks of their mean step time.
	StepUs Dist `json:"step_us"`
	// Slowest are the ranks with the longest mean steps, at most 10.
	Slowest []RankRow `json:"slowest"`
	// Stragglers are the ranks the detector flags, largest excess first, and the rule's straggler.
	Stragglers []Straggler `json:"stragglers"`
	// SlowHosts are the hosts with stragglers, most first.
	SlowHosts []HostRow `json:"slow_hosts,omitempty"`
	// Detector says whether the median/MAD detector ran and its thresholds.
	Detector DetectorNote `json:"detector"`
	// Diagnosis is the job's verdict.
	Diagnosis *diagnose.RunDiagnosis `json:"diagnosis"`
	// PerRank are every rank's figures, by rank.
	PerRank []RankRow `json:"per_rank"`
	// PerStep are the job's steps by number.
	PerStep []StepRow `json:"per_step"`

	medians []float64              // of each cause's part over the ranks (cause)
	diag    map[int]*RankDiagnosis // the ranks' own verdicts (detectorVerdict)
}

// Range is a run of ranks, From..To inclusive.
type Range struct {
	From int `json:"from"`
	To   int `json:"to"`
}

// Dist is a distribution's order statistics.
type Dist struct {
	Min float64 `json:"min"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// RankRow is one rank's means over its used steps, µs.
type RankRow struct {
	Rank   int     `json:"rank"`
	Host   string  `json:"host,omitempty"`
	Device string  `json:"device,omitempty"`
	File   string  `json:"file"`
	Steps  int     `json:"steps"`
	StepUs float64 `json:"step_us"`
	// WaitUs is the wait for other ranks per step: its collectives' time beyond the shortest rank's, on the matched steps.
	WaitUs float64 `json:"wait_us"`
	// OwnUs is StepUs - WaitUs: the step without waiting for others.
	OwnUs    float64 `json:"own_us"`
	DataUs   float64 `json:"data_us"`
	HostUs   float64 `json:"host_us"`
	KernelUs float64 `json:"kernel_us"`
	// LinkUs is exposed communication beyond the wait: the rank's own communication.
	LinkUs float64 `json:"link_us"`
	// LastArrivals counts the matched steps where the others waited for this rank.
	LastArrivals int `json:"last_arrivals"`
	// Verdict is the rank's own verdict class.
	Verdict diagnose.Class `json:"verdict,omitempty"`
}

// Straggler is a flagged rank.
type Straggler struct {
	Rank int    `json:"rank"`
	Host string `json:"host,omitempty"`
	// Cause is compute, data, host or link.
	Cause string `json:"cause"`
	// ExcessUs is how much longer than the median rank its own step (or, for link by wait, its wait) is, per step.
	ExcessUs  float64 `json:"excess_us"`
	ExcessPct float64 `json:"excess_pct"`
	// Z is the excess in robust standard deviations (1.4826 MAD); 0 when the detector did not run.
	Z float64 `json:"z"`
	// By says which rule named it: "detector" or "rule" (the cross-rank verdict's straggler).
	By string `json:"by"`
}

// HostRow is one host's ranks.
type HostRow struct {
	Host       string  `json:"host"`
	Ranks      int     `json:"ranks"`
	Stragglers int     `json:"stragglers"`
	StepUs     float64 `json:"step_us"`
}

// StepRow is one step across ranks.
type StepRow struct {
	Step        int     `json:"step"`
	Ranks       int     `json:"ranks"`
	MeanUs      float64 `json:"mean_us"`
	MaxUs       float64 `json:"max_us"`
	SlowestRank int     `json:"slowest_rank"`
	// LastRank is the rank with the shortest collectives (the one the others waited for); -1 when not matched.
	LastRank int `json:"last_rank"`
}

// DetectorNote records the detector's run.
type DetectorNote struct {
	Ran      bool    `json:"ran"`
	Why      string  `json:"why,omitempty"`
	MinRanks int     `json:"min_ranks"`
	Z        float64 `json:"z"`
	FloorPct float64 `json:"floor_pct"`
}

// Report computes the job report; worldSize, when above 0, is the number
// of ranks the job ran (else the largest the summaries give). It reads
// the ranks in rank order, so equal sets of summaries give equal reports.
func (j *Job) Report(worldSize int) *Report {
	recs := make([]*rankRec, 0, len(j.ranks))
	for _, r := range j.ranks {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, func(a, b *rankRec) int { return cmp.Compare(a.rank, b.rank) })
	rep := &Report{Format: ReportFormat, Ranks: len(recs), Stragglers: []Straggler{}, PerRank: []RankRow{}, PerStep: []StepRow{},
		Detector: DetectorNote{MinRanks: MinRanks, Z: Z, FloorPct: FloorPct}}
	hosts := map[string]bool{}
	rep.WorldSize = worldSize
	for _, r := range recs {
		if worldSize > 0 {
			break
		}
		rep.WorldSize = max(rep.WorldSize, r.worldSize)
	}
	for _, r := range recs {
		if r.host != "" {
			hosts[r.host] = true
		}
	}
	rep.Hosts = len(hosts)
	rep.Missing = missing(recs, rep.WorldSize)

	// step table over the union of step numbers
	index := map[int]int{}
	var nums []int
	for _, r := range recs {
		for i := range r.step {
			n := r.num(i)
			if _, ok := index[n]; !ok {
				index[n] = -1
				nums = append(nums, n)
			}
		}
	}
	slices.Sort(nums)
	for i, n := range nums {
		index[n] = i
	}
	type stepAcc struct {
		have, withColls int
		sum, max        float64
		slowest, last   int
		minColl         float32
	}
	acc := make([]stepAcc, len(nums))
	for i := range acc {
		acc[i] = stepAcc{slowest: -1, last: -1}
	}
	for _, r := range recs {
		for i, v := range r.step {
			a := &acc[index[r.num(i)]]
			a.have++
			a.sum += float64(v)
			if a.slowest < 0 || float64(v) > a.max {
				a.max, a.slowest = float64(v), r.rank
			}
			if r.flags[i]&flagColls != 0 {
				a.withColls++
				if a.last < 0 || r.coll[i] < a.minColl {
					a.minColl, a.last = r.coll[i], r.rank
				}
			}
		}
	}
	n := len(recs)
	matched := make([]bool, len(nums))
	for i, a := range acc {
		if a.have == n {
			rep.StepsCompared++
		}
		matched[i] = n >= 2 && a.have == n && a.withColls == n
		if matched[i] {
			rep.MatchedSteps++
		}
		row := StepRow{Step: nums[i], Ranks: a.have, MeanUs: a.sum / float64(max(a.have, 1)), MaxUs: a.max, SlowestRank: a.slowest, LastRank: -1}
		if matched[i] {
			row.LastRank = a.last
		}
		rep.PerStep = append(rep.PerStep, row)
	}
	rep.Steps = len(nums)

	// per rank: means, wait, last arrivals
	byRank := map[int]int{}
	for ri, r := range recs {
		byRank[r.rank] = ri
		row := RankRow{Rank: r.rank, Host: r.host, Device: r.device, File: r.file, Steps: r.used}
		if r.diag != nil {
			row.Verdict = r.diag.Primary
		}
		var wait float64
		waited := 0
		for i := range r.step {
			si := index[r.num(i)]
			if !matched[si] || r.flags[i]&flagUsed == 0 {
				continue
			}
			wait += float64(r.coll[i] - acc[si].minColl)
			waited++
		}
		if r.used > 0 {
			u := float64(r.used)
			row.StepUs, row.DataUs, row.HostUs, row.KernelUs = r.sumStep/u, r.sumData/u, r.sumHost/u, r.sumKernel/u
			comm := r.sumComm / u
			if waited > 0 {
				row.WaitUs = wait / float64(waited)
			}
			row.OwnUs = row.StepUs - row.WaitUs
			row.LinkUs = max(0, comm-row.WaitUs)
		}
		rep.PerRank = append(rep.PerRank, row)
	}
	for i, a := range acc {
		if matched[i] {
			rep.PerRank[byRank[a.last]].LastArrivals++
		}
	}

	// the cross-rank rule's inputs, as ranks.Compare gives them (the
	// others' wait per step rather than per collective)
	spread := &diagnose.Spread{SlowestRank: -1, Straggler: -1, Steps: len(nums), StepsCompared: rep.StepsCompared}
	var means []float64
	slowest := -1
	for i, r := range recs {
		var sum float64
		for _, v := range r.step {
			sum += float64(v)
		}
		m := sum / float64(max(len(r.step), 1))
		means = append(means, m)
		if slowest < 0 || m > means[slowest] {
			slowest = i
		}
	}
	if n > 0 {
		rep.StepUs = dist(means)
		spread.SlowestRank = recs[slowest].rank
		spread.MedianStepUs = stats.Median(means)
		if spread.MedianStepUs > 0 {
			spread.ImbalancePct = (means[slowest] - spread.MedianStepUs) * 100 / spread.MedianStepUs
		}
		for _, a := range acc {
			if a.slowest == spread.SlowestRank {
				spread.SlowestSteps++
			}
		}
	}
	if rep.MatchedSteps > 0 {
		best := -1
		for i, row := range rep.PerRank {
			if row.LastArrivals == 0 {
				continue
			}
			if best < 0 || row.LastArrivals > rep.PerRank[best].LastArrivals ||
				row.LastArrivals == rep.PerRank[best].LastArrivals && row.WaitUs < rep.PerRank[best].WaitUs {
				best = i
			}
		}
		if best >= 0 {
			spread.Straggler = rep.PerRank[best].Rank
		}
	}
	slow := slices.Clone(rep.PerRank)
	slices.SortStableFunc(slow, func(a, b RankRow) int { return cmp.Compare(b.StepUs, a.StepUs) })
	rep.Slowest = slow[:min(10, len(slow))]

	var per []diagnose.RankInput
	for _, r := range recs {
		if r.diag != nil {
			per = append(per, diagnose.RankInput{Rank: r.rank, Diagnosis: r.diag.diagnosis()})
		}
	}
	rep.Diagnosis = diagnose.ComputeSpread(spread, per, nil)

	rep.detect()
	if rep.Diagnosis.Verdict.Primary == diagnose.Straggler {
		if s := ruleStraggler(rep.Diagnosis); s >= 0 && !slices.ContainsFunc(rep.Stragglers, func(x Straggler) bool { return x.Rank == s }) {
			row := rep.PerRank[byRank[s]]
			cause, excess := rep.cause(row)
			rep.Stragglers = append(rep.Stragglers, Straggler{Rank: s, Host: row.Host, Cause: cause, ExcessUs: round1(excess),
				ExcessPct: round1(100 * excess / max(stats.Median(ownOf(rep.PerRank)), 1)), By: "rule"})
		}
	} else if len(rep.Stragglers) > 0 {
		rep.diag = map[int]*RankDiagnosis{}
		for _, r := range recs {
			rep.diag[r.rank] = r.diag
		}
		rep.Diagnosis = detectorVerdict(rep)
	}
	if f := rep.Diagnosis.Findings; len(f) > MaxReportFindings {
		rep.Diagnosis.Findings = f[:MaxReportFindings]
	}
	rep.SlowHosts = slowHosts(rep)
	return rep
}

// ruleStraggler is the rank the cross-rank verdict names, -1 when none.
func ruleStraggler(d *diagnose.RunDiagnosis) int {
	for _, f := range d.Findings {
		for _, w := range f.Where {
			if w.Kind == "rank" {
				var r int
				if _, err := fmt.Sscan(w.Name, &r); err == nil {
					return r
				}
			}
		}
	}
	return -1
}

// detect flags the ranks whose own step (the step without waiting for
// others) or whose wait stands out from the job's: more than Z robust
// standard deviations and FloorPct of the median step above the median
// rank. A rank that others wait for has a long own step; a rank whose
// collectives alone last longer (its link) has a wait no other rank
// shares: a late rank makes every other rank wait, which moves the
// median, not one rank.
func (rep *Report) detect() {
	if rep.Ranks < MinRanks {
		rep.Detector.Why = fmt.Sprintf("%d ranks: the detector needs %d for a median and MAD over ranks to mean something; the cross-rank rule alone names a straggler", rep.Ranks, MinRanks)
		return
	}
	rep.Detector.Ran = true
	own := ownOf(rep.PerRank)
	wait := make([]float64, len(rep.PerRank))
	for i, r := range rep.PerRank {
		wait[i] = r.WaitUs
	}
	medOwn, sdOwn := robust(own)
	medWait, sdWait := robust(wait)
	floor := FloorPct / 100 * medOwn
	for i, r := range rep.PerRank {
		if r.Steps == 0 {
			continue
		}
		if ex := own[i] - medOwn; ex > max(Z*sdOwn, floor) {
			cause, _ := rep.cause(r)
			rep.Stragglers = append(rep.Stragglers, Straggler{Rank: r.Rank, Host: r.Host, Cause: cause, ExcessUs: round1(ex),
				ExcessPct: round1(100 * ex / max(medOwn, 1)), Z: round1(ex / max(sdOwn, 1e-9)), By: "detector"})
		} else if ex := wait[i] - medWait; rep.MatchedSteps > 0 && ex > max(Z*sdWait, floor) {
			rep.Stragglers = append(rep.Stragglers, Straggler{Rank: r.Rank, Host: r.Host, Cause: CauseLink, ExcessUs: round1(ex),
				ExcessPct: round1(100 * ex / max(medOwn, 1)), Z: round1(ex / max(sdWait, 1e-9)), By: "detector"})
		}
	}
	slices.SortStableFunc(rep.Stragglers, func(a, b Straggler) int { return cmp.Compare(b.ExcessUs, a.ExcessUs) })
}

// cause is the component of the rank's own step furthest above the
// median rank's: its kernels (compute), its input (data), its host or its
// own communication (link); and that excess.
func (rep *Report) cause(r RankRow) (string, float64) {
	if rep.medians == nil {
		rep.medians = make([]float64, len(causes))
		vals := make([]float64, len(rep.PerRank))
		for c, get := range causes {
			for i, x := range rep.PerRank {
				vals[i] = get.of(x)
			}
			rep.medians[c] = stats.Median(vals)
		}
	}
	best, bestEx := CauseCompute, math.Inf(-1)
	for c, get := range causes {
		if ex := get.of(r) - rep.medians[c]; ex > bestEx {
			best, bestEx = get.cause, ex
		}
	}
	return best, max(bestEx, 0)
}

// causes are the parts of a rank's own step, each a cause class.
var causes = []struct {
	cause string
	of    func(RankRow) float64
}{
	{CauseCompute, func(x RankRow) float64 { return x.KernelUs }},
	{CauseData, func(x RankRow) float64 { return x.DataUs }},
	{CauseHost, func(x RankRow) float64 { return x.HostUs }},
	{CauseLink, func(x RankRow) float64 { return x.LinkUs }},
}

// detectorVerdict is the job's verdict when the detector flags ranks the
// cross-rank rule (slowest vs median rank) does not: many ranks hide one
// straggler's excess in the noise of the slowest rank.
func detectorVerdict(rep *Report) *diagnose.RunDiagnosis {
	d := rep.Diagnosis
	top := rep.Stragglers[0]
	kinds := map[string]int{}
	for _, s := range rep.Stragglers {
		kinds[s.Cause]++
	}
	why := fmt.Sprintf("%d of %d ranks stand out from the median rank by more than %.0f robust standard deviations and %.0f%% of a step; the worst, rank %d, by %.1f%% (cause: %s)",
		len(rep.Stragglers), rep.Ranks, Z, FloorPct, top.Rank, top.ExcessPct, top.Cause)
	d.Verdict = diagnose.Verdict{Primary: diagnose.Straggler, Detail: fmt.Sprintf("rank %d holds the others back", top.Rank),
		SharePct: top.ExcessPct, Confidence: "medium", Why: why}
	if top.Z >= 2*Z && top.ExcessPct >= 2*FloorPct {
		d.Verdict.Confidence = "high"
	}
	// the findings: each straggler, with its own top finding's change
	// when its summary has one
	d.Findings = []diagnose.Finding{}
	for _, s := range rep.Stragglers[:min(len(rep.Stragglers), MaxReportFindings)] {
		f := diagnose.Finding{Rule: "ranks.straggler", Class: diagnose.Straggler,
			Title:  fmt.Sprintf("Rank %d is a straggler (%s): %.1f%% of a step over the median rank", s.Rank, s.Cause, s.ExcessPct),
			Where:  []diagnose.Location{{Kind: "rank", Name: fmt.Sprint(s.Rank)}},
			Change: causeChange[s.Cause], AtStakeUs: s.ExcessUs, AtStakePct: s.ExcessPct, SavingUs: s.ExcessUs, SavingPct: s.ExcessPct,
			Confidence: d.Verdict.Confidence}
		if rd := rep.diag[s.Rank]; rd != nil && len(rd.Findings) > 0 {
			f.Change = fmt.Sprintf("rank %d: %s — %s", s.Rank, rd.Findings[0].Title, rd.Findings[0].Change)
			f.Alternatives = rd.Findings[0].Alternatives
		}
		d.Findings = append(d.Findings, f)
	}
	return d
}

// MaxReportFindings caps the job verdict's findings: with thousands of
// ranks, every rank's findings would bury the report (--json lists every
// rank's figures).
const MaxReportFindings = 20

var causeChange = map[string]string{
	CauseCompute: "look at this rank's GPU (clocks, temperature, ECC errors, a different model) and at uneven work (its shard, sequence lengths)",
	CauseData:    "look at this rank's input: its storage or network share, DataLoader workers, CPU affinity of its node",
	CauseHost:    "look at this rank's host: other processes on its CPUs, CPU affinity, Python work only it does (logging, evaluation on rank 0)",
	CauseLink:    "look at this rank's links: NIC or NVLink errors and speed, its switch port, the NCCL topology it chose",
}

func ownOf(rows []RankRow) []float64 {
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = r.OwnUs
	}
	return out
}

// robust is the median and 1.4826 MAD (a normal's standard deviation).
func robust(xs []float64) (med, sd float64) {
	med = stats.Median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - med)
	}
	return med, 1.4826 * stats.Median(dev)
}

func slowHosts(rep *Report) []HostRow {
	byHost := map[string]*HostRow{}
	var sums = map[string]float64{}
	for _, r := range rep.PerRank {
		if r.Host == "" {
			continue
		}
		h := byHost[r.Host]
		if h == nil {
			h = &HostRow{Host: r.Host}
			byHost[r.Host] = h
		}
		h.Ranks++
		sums[r.Host] += r.StepUs
	}
	for _, s := range rep.Stragglers {
		if h := byHost[s.Host]; h != nil {
			h.Stragglers++
		}
	}
	var out []HostRow
	for name, h := range byHost {
		if h.Stragglers == 0 {
			continue
		}
		h.StepUs = round1(sums[name] / float64(h.Ranks))
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b HostRow) int {
		if c := cmp.Compare(b.Stragglers, a.Stragglers); c != 0 {
			return c
		}
		return cmp.Compare(a.Host, b.Host)
	})
	return out
}

// missing are the ranks below world no record has, as ranges; it walks
// the gaps between the records (sorted by rank), not every rank of a
// world size a summary may exaggerate.
func missing(recs []*rankRec, world int) []Range {
	var out []Range
	next := 0 // the lowest rank not yet accounted for
	for _, r := range recs {
		if r.rank >= world {
			break
		}
		if r.rank > next {
			out = append(out, Range{next, r.rank - 1})
		}
		next = max(next, r.rank+1)
	}
	if next < world {
		out = append(out, Range{next, world - 1})
	}
	return out
}

func dist(xs []float64) Dist {
	s := slices.Clone(xs)
	slices.Sort(s)
	q := func(p float64) float64 { return round1(s[min(len(s)-1, int(p*float64(len(s)-1)+0.5))]) }
	return Dist{Min: round1(s[0]), P50: q(0.5), P90: q(0.9), P99: q(0.99), Max: round1(s[len(s)-1])}
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
