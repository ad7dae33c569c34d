package runevidence

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// PeriodicSteps are the steps after start-up, outside the recorded
// window, that take over twice their median at a regular interval.
type PeriodicSteps struct {
	// Every: the interval, in steps; Steps: the first few such steps.
	Every int   `json:"every"`
	Steps []int `json:"steps"`
	Count int   `json:"count"`
	// MeanS: their mean duration; MedianS: the median step of the steps
	// considered.
	MeanS   float64 `json:"mean_s"`
	MedianS float64 `json:"median_s"`
	// ExcessS: the time they spend above the median; Share: its share of
	// the steps' time.
	ExcessS float64 `json:"excess_s"`
	Share   float64 `json:"share"`
	// InWindow: the steps are the recorded window's outliers (what they
	// do: Work), not the run's steps outside it; Every is 0 when they
	// are not evenly spaced.
	InWindow bool                `json:"in_window,omitempty"`
	Work     *window.OutlierWork `json:"-"`
}

// PeriodicSteps finds the steps that repeat as outliers (nil: none),
// each step less its garbage collections' pauses (rows), its wait for a
// CPU and its wait for a DataLoader: the collections of the oldest
// generation come every so many allocations, and are gc.pauses'; other
// processes' load comes when it comes; N workers that cannot keep up
// make every Nth step wait for the next round of batches, which is
// input.loader's (2 workers restarted every epoch made every 4th step
// wait 39 ms, and the verdict was periodic-work). An epoch's first step
// (DataLoader workers started again) is one such.
func Periodic(steps []steptimes.Step, rows []rundir.StepRow) *PeriodicSteps {
	gc := map[int]float64{}
	for _, r := range rows {
		gc[r.Step] = r.GCPauseS
	}
	var use []steptimes.Step
	var durs, raw []float64
	for _, st := range steps {
		if st.N > startupSteps && !st.InWindow && st.DurS > 0 {
			raw = append(raw, st.DurS)
			st.DurS = max(st.DurS-gc[st.N]-st.CPUWaitS-st.LoaderWaitS, 1e-9)
			use = append(use, st)
			durs = append(durs, st.DurS)
		}
	}
	m := median(durs)
	if m <= 0 {
		return nil
	}
	// A slow step must also be slower by periodicMinExcess of a whole
	// step: steps that are nearly all waiting for a DataLoader leave a
	// median of microseconds, over twice which every other step comes
	// (a loader that read a file per sample: every 3rd step "took 191
	// µs, 190,750x the median", and periodic-work led an input-bound run).
	minExcess := periodicMinExcess * median(raw)
	var out []steptimes.Step
	var total float64
	for _, st := range use {
		total += st.DurS
		if st.DurS > 2*m && st.DurS-m >= minExcess {
			out = append(out, st)
		}
	}
	if len(out) < minPeriodic {
		return nil
	}
	slow := map[int]float64{}
	var outExcess float64
	for _, st := range out {
		slow[st.N] = st.DurS
		outExcess += st.DurS - m
	}
	considered := map[int]bool{}
	for _, st := range use {
		considered[st.N] = true
	}
	last := use[len(use)-1].N
	// A period and a first step: the slow steps that fall on it (hits),
	// over the steps it expects (those considered, from the first on).
	// Slow steps off it (a collection, the machine's load) are noise,
	// tolerated up to half of them. The periods tried are the gaps
	// between consecutive slow steps, and between consecutive heavy ones
	// (their time above the median at least the slow steps' mean): short
	// outliers between the heavy ones break their gaps (a PPO run's
	// rollout every 320 updates, 19 steps of ~1 s, had 39 steps of 6-17
	// ms among them, and no two rollouts were consecutive outliers more
	// than twice).
	heavy := slices.DeleteFunc(slices.Clone(out), func(st steptimes.Step) bool { return st.DurS-m < outExcess/float64(len(out)) })
	type fit struct{ every, first, hits, expected int }
	var best fit
	tried := 0
	for _, set := range [][]steptimes.Step{out, heavy} {
		for _, g := range candidateGaps(set) {
			for _, a := range set[:min(5, len(set))] {
				tried++
				f := fit{every: g, first: a.N}
				var excess float64
				for n := a.N; n <= last; n += g {
					if considered[n] {
						f.expected++
						if d, ok := slow[n]; ok {
							f.hits++
							excess += d - m
						}
					}
				}
				if f.hits >= minPeriodic && float64(f.hits) >= periodicHits*float64(f.expected) && 2*excess >= outExcess &&
					(f.hits > best.hits || f.hits == best.hits && g > best.every) {
					best = f
				}
			}
		}
	}
	if best.hits == 0 || float64(tried)*binomialTail(best.expected, best.hits, float64(len(out))/float64(len(use))) > periodicChance {
		return nil
	}
	p := &PeriodicSteps{Every: best.every, Count: best.hits, MedianS: m}
	var sum, above float64
	for n := best.first; n <= last; n += best.every {
		d, ok := slow[n]
		if !ok {
			continue
		}
		if len(p.Steps) < 4 {
			p.Steps = append(p.Steps, n)
		}
		sum += d
		above += d - m
	}
	p.MeanS = sum / float64(best.hits)
	p.ExcessS, p.Share = above, above/total
	return p
}

// Outliers repeat when at least minPeriodic of them, holding half of
// the time all of them spend above the median, fall every N steps (N >=
// 3: every other step slow is not a step's work "every N steps" but two
// kinds of step) from one of them on, and they are at least periodicHits
// of the steps at those places. Half the time, not half the count: a
// busy spell on a loaded machine makes dozens of short outliers of 1 ms
// steps (an RL loop's rollout every 64 updates, 8 steps of ~110 ms, went
// unseen beside 29 steps of 2-40 ms).
const (
	minPeriodic  = 3
	periodicHits = 2.0 / 3
)

// periodicChance: the period must be one that slow steps as frequent,
// placed at random, would fit at least as well with at most this chance
// over all the periods and first steps tried. Steps timed on a machine
// without a CPU for the program are slow at random: their wait for a CPU
// is taken out for the main thread only, and shared by the steps of one
// reading (docs/run.md, "CPU wait"), while its intra-op threads wait too.
// A CPU program on two busy CPUs, 19 steps outside its window, 6 of them
// over twice the median (less the waits): steps 5, 13 and 29 fit "every
// 8 steps", 3 of its 4 places, which random slow steps as frequent do
// 9.6% of the time, and 12 fits were tried. A checkpoint every 10 of 300
// steps fits by chance about 1e-29 of the time.
const periodicChance = 0.05

// binomialTail is the chance of at least k successes in n trials of
// probability q.
func binomialTail(n, k int, q float64) float64 {
	if k <= 0 {
		return 1
	}
	if q <= 0 {
		return 0
	}
	if q >= 1 {
		return 1
	}
	lq, lr := math.Log(q), math.Log1p(-q)
	lgn, _ := math.Lgamma(float64(n + 1))
	var p float64
	for i := k; i <= n; i++ {
		a, _ := math.Lgamma(float64(i + 1))
		b, _ := math.Lgamma(float64(n - i + 1))
		p += math.Exp(lgn - a - b + float64(i)*lq + float64(n-i)*lr)
	}
	return p
}

// candidateGaps are the gaps of at least 3 steps between consecutive
// outliers, the 20 most common (a long run's noise makes many).
func candidateGaps(out []steptimes.Step) []int {
	count := map[int]int{}
	for i := 1; i < len(out); i++ {
		if g := out[i].N - out[i-1].N; g >= 3 {
			count[g]++
		}
	}
	gaps := slices.Collect(maps.Keys(count))
	slices.SortFunc(gaps, func(a, b int) int { return cmp.Or(cmp.Compare(count[b], count[a]), cmp.Compare(a, b)) })
	return gaps[:min(20, len(gaps))]
}

// periodicMinExcess: a slow step is slower than the median (less its
// waits) by at least this share of the median step as recorded.
const periodicMinExcess = 0.25

// when says when the slow steps come: "every 5 steps a step takes" or
// "steps 4, 9 take".
func (p *PeriodicSteps) When() string {
	if p.Every > 0 {
		return fmt.Sprintf("every %d steps a step takes", p.Every)
	}
	steps := make([]string, len(p.Steps))
	for i, n := range p.Steps {
		steps[i] = fmt.Sprint(n)
	}
	return "steps " + strings.Join(steps, ", ") + " take"
}

// of names what Share is a share of.
func (p *PeriodicSteps) ShareOf() string {
	if p.InWindow {
		return "the recorded steps' time"
	}
	return "the run's step time"
}
