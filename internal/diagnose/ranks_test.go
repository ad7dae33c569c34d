package diagnose

import (
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
	}
}
