package diagnose

import (
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/ranks"
)

// A straggler needs a difference beyond the noise: the same rank slowest
// in most steps; with fewer than 3 steps the confidence is low.
func TestStragglerNeedsConsistency(t *testing.T) {
	per := []RankInput{{0, &Diagnosis{StepUs: 100, Verdict: Verdict{Primary: Host}}}, {1, &Diagnosis{StepUs: 115, Verdict: Verdict{Primary: Host}}}}
	row := func(slow int) ranks.StepRow { return ranks.StepRow{Us: []float64{100, 115}, SlowestRank: slow} }
	for _, c := range []struct {
		steps    []ranks.StepRow
		primary  Class
		conf     string
		scenario string
	}{
		{[]ranks.StepRow{row(1), row(1), row(1), row(0)}, Straggler, "medium", "rank 1 slowest in 3 of 4 steps"},
		{[]ranks.StepRow{row(1), row(0), row(1), row(0)}, Host, "", "the slowest rank alternates: noise"},
		{[]ranks.StepRow{row(1)}, Straggler, "low", "one step"},
	} {
		rr := &ranks.Result{SlowestRank: 1, Straggler: -1, ImbalancePct: 15, MedianStepUs: 100, Steps: c.steps}
		d := ComputeRanks(rr, per, nil)
		if d.Verdict.Primary != c.primary || (c.conf != "" && d.Verdict.Confidence != c.conf) {
			t.Errorf("%s: %s (%s), want %s (%s)", c.scenario, d.Verdict.Primary, d.Verdict.Confidence, c.primary, c.conf)
		}
		if straggler := slices.ContainsFunc(d.Findings, func(f Finding) bool { return f.Rule == "ranks.straggler" }); straggler != (c.primary == Straggler) {
			t.Errorf("%s: ranks.straggler finding %v, want %v", c.scenario, straggler, c.primary == Straggler)
		}
	}
}

// Under a straggler verdict, the slow rank's other findings that fire on
// every rank are named in the verdict (DDP accumulation without no_sync
// on both ranks hid behind "rank 1 is the straggler"); not those on one
// rank only, small ones, or comm.exposed (the others' wait for it).
func TestStragglerNamesEveryRankFindings(t *testing.T) {
	f := func(rule, title string, saving float64) Finding {
		return Finding{Rule: rule, Title: title, SavingPct: saving}
	}
	noSync := f("comm.no-sync", "DistributedDataParallel syncs the gradients 4 times per optimizer update", 20)
	per := []RankInput{
		{0, &Diagnosis{StepUs: 100, Verdict: Verdict{Primary: Comm}, Findings: []Finding{f("comm.exposed", "Communication", 40), noSync, f("gpu.kernels", "Kernels", 30)}}},
		{1, &Diagnosis{StepUs: 130, Verdict: Verdict{Primary: Host}, Findings: []Finding{f("host.python", "Python", 30), f("comm.exposed", "Communication", 10),
			f("cpu.native", "Native ops", 20), noSync, f("gpu.kernels", "Kernels", 2)}}},
	}
	row := ranks.StepRow{Us: []float64{100, 130}, SlowestRank: 1}
	rr := &ranks.Result{SlowestRank: 1, Straggler: -1, ImbalancePct: 30, MedianStepUs: 100, Steps: []ranks.StepRow{row, row, row}}
	d := ComputeRanks(rr, per, nil)
	if want := "; on every rank too (rank 1's words): DistributedDataParallel syncs the gradients 4 times per optimizer update"; d.Verdict.Primary != Straggler || !strings.HasSuffix(d.Verdict.Why, want) {
		t.Errorf("verdict %s: %q, want it to end %q", d.Verdict.Primary, d.Verdict.Why, want)
	}
}
