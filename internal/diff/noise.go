package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// resamples is the bootstrap's size: enough for stable 2.5/97.5
// percentiles, cheap for the few hundred steps a run times.
const resamples = 2000

// minSignificantPct: a change smaller than this is never called
// significant, however many steps make its interval narrow.
const minSignificantPct = 1.0

// medianRatioInterval is the 95% percentile-bootstrap interval of
// median(new)/median(base) - 1, in percent. The seed is fixed so that the
// same inputs always give the same interval.
func medianRatioInterval(base, new []float64) (low, high float64) {
	return ratioInterval(base, new, stats.Median)
}

// MeanRatioInterval is medianRatioInterval for the means: the change of
// the total time the steps take, slow ones included (a collection every
// 9 steps that got cheaper moves the mean, not the median).
func MeanRatioInterval(base, new []float64) (low, high float64) {
	return ratioInterval(base, new, mean)
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func ratioInterval(base, new []float64, stat func([]float64) float64) (low, high float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	ratios := make([]float64, resamples)
	bs, ns := make([]float64, len(base)), make([]float64, len(new))
	for i := range ratios {
		for j := range bs {
			bs[j] = base[rng.IntN(len(base))]
		}
		for j := range ns {
			ns[j] = new[rng.IntN(len(new))]
		}
		if mb := stat(bs); mb > 0 {
			ratios[i] = 100 * (stat(ns)/mb - 1)
		}
	}
	slices.Sort(ratios)
	return ratios[resamples*25/1000], ratios[resamples*975/1000-1]
}

func headline(b, n *sideData) Headline {
	h := Headline{BaseUs: b.summary.MedianUs, NewUs: n.summary.MedianUs}
	h.DeltaUs = h.NewUs - h.BaseUs
	h.DeltaPct = pct(h.BaseUs, h.NewUs)
	if h.NewUs > 0 {
		h.ThroughputPct = 100 * (h.BaseUs/h.NewUs - 1)
	}
	h.NoiseKnown = len(b.samples) >= 3 && len(n.samples) >= 3
	if h.NoiseKnown {
		h.LowPct, h.HighPct = medianRatioInterval(b.samples, n.samples)
		h.Significant = (h.LowPct > 0 || h.HighPct < 0) && abs(h.DeltaPct) >= minSignificantPct
	}
	h.VerdictChanged = b.summary.Verdict != n.summary.Verdict && b.summary.Verdict != "" && n.summary.Verdict != ""
	step := fmt.Sprintf("step time %s -> %s (%+.1f%%", units.Duration(h.BaseUs), units.Duration(h.NewUs), h.DeltaPct)
	switch {
	case !h.NoiseKnown:
		lead := fmt.Sprintf("Step time changed by %+.1f%%, noise unknown: ", h.DeltaPct)
		if abs(h.DeltaPct) < minSignificantPct {
			lead = "No significant change (noise unknown): "
		}
		h.Summary = lead + step + fmt.Sprintf("; %d and %d step(s) timed, 3 per side are needed for an interval)", len(b.samples), len(n.samples))
	case !h.Significant:
		h.Summary = "No significant change: " + step + fmt.Sprintf(", 95%% interval %+.1f%% to %+.1f%% from %d and %d steps)",
			h.LowPct, h.HighPct, len(b.samples), len(n.samples))
	default:
		word := "Slower"
		if h.DeltaPct < 0 {
			word = "Faster"
		}
		h.Summary = word + ": " + step + fmt.Sprintf(", 95%% interval %+.1f%% to %+.1f%% from %d and %d steps); throughput %+.1f%%",
			h.LowPct, h.HighPct, len(b.samples), len(n.samples), h.ThroughputPct)
	}
	return h
}

// verdictLine says how the verdict of each side compares.
func verdictLine(r *Result) string {
	b, n := r.Base.Verdict, r.New.Verdict
	switch {
	case b == "" || n == "":
		return "verdict: not available for both runs"
	case r.Headline.VerdictChanged:
		return fmt.Sprintf("verdict changed: was %s, now %s", b, n)
	}
	return fmt.Sprintf("verdict unchanged: %s", b)
}
