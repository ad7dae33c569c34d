// Package simgen generates the rank summaries of simulated data-parallel
// jobs, clean or with injected stragglers, to measure `bottleneck merge`
// at a scale no test machine runs (docs/distributed.md, "Simulation").
//
// The model, per step s and rank r (B = the base step, 100 ms):
//
//   - the rank's own work before the step's collective: data D = 8% of B,
//     host H = 12%, kernels K = 55% times the rank's GPU speed (a factor
//     drawn once per rank, sd 1%); each with per-step noise (sd 5%, 5%,
//     2%); a host pause (GC) of 30% of B on 0.5% of rank-steps; a slow
//     step on every rank (checkpoint) of 50% of B on 1% of steps;
//   - the collective starts when the last rank arrives: each rank's
//     collective kernel lasts its wait (last arrival minus its own) plus
//     the transfer T = 15% of B (noise sd 5%); after it the optimizer's
//     kernels, 10% of B (sd 2%);
//   - a straggler of kind compute, data or host adds its strength (a share
//     of B) to its K, D or H every step, so it arrives late and the others
//     wait; a link straggler's own transfer lasts its strength longer
//     (its side of the collective ends late; the others do not wait for
//     it in the same step).
//
// The breakdown of a step is data D, host H, kernels K + optimizer, and
// exposed communication = the collective (no overlap), so the parts add up
// to the step, as the step breakdown's do.
package simgen

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/bottleneck-dev/bottleneck/internal/summary"
)

// The straggler kinds (summary's cause classes).
const (
	Compute = summary.CauseCompute
	Data    = summary.CauseData
	Host    = summary.CauseHost
	Link    = summary.CauseLink
)

// Kinds are every straggler kind.
var Kinds = []string{Compute, Data, Host, Link}

// BaseStepUs is the base step, B.
const BaseStepUs = 100_000.0

// Straggler is one injected straggler.
type Straggler struct {
	Rank int
	Kind string
	// StrengthPct is what it adds per step, in % of the base step.
	StrengthPct float64
}

// Job describes a simulated job.
type Job struct {
	Ranks int
	Steps int
	// RanksPerHost groups ranks into hosts "node<k>" (0: 8).
	RanksPerHost int
	Seed         uint64
	Stragglers   []Straggler
}

// Generate returns one summary per rank, by rank.
func Generate(j Job) []*summary.Summary {
	rng := rand.New(rand.NewPCG(j.Seed, 0x5eed))
	perHost := j.RanksPerHost
	if perHost <= 0 {
		perHost = 8
	}
	extra := make([][4]float64, j.Ranks) // compute, data, host, link, µs
	for _, s := range j.Stragglers {
		for k, kind := range Kinds {
			if kind == s.Kind {
				extra[s.Rank][k] += s.StrengthPct / 100 * BaseStepUs
			}
		}
	}
	speed := make([]float64, j.Ranks)
	sums := make([]*summary.Summary, j.Ranks)
	for r := range j.Ranks {
		speed[r] = 1 + 0.01*rng.NormFloat64()
		sums[r] = &summary.Summary{Format: summary.Format, Rank: r, WorldSize: j.Ranks, Host: hostName(r / perHost),
			Device: "simulated GPU", File: "rank" + strconv.Itoa(r) + ".sim", Counts: summary.Counts{Events: 1000 * j.Steps, Kernels: 800 * j.Steps, Collectives: j.Steps}}
		st := &sums[r].Steps
		st.Num, st.StepUs, st.DataUs, st.HostUs = make([]int, j.Steps), make([]int64, j.Steps), make([]int64, j.Steps), make([]int64, j.Steps)
		st.KernelUs, st.CommUs, st.CollUs, st.Colls = make([]int64, j.Steps), make([]int64, j.Steps), make([]int64, j.Steps), make([]int, j.Steps)
	}
	noise := func(mean, sd float64) float64 { return math.Max(0, mean*(1+sd*rng.NormFloat64())) }
	d, h, k := make([]float64, j.Ranks), make([]float64, j.Ranks), make([]float64, j.Ranks)
	for s := range j.Steps {
		everyone := 0.0
		if rng.Float64() < 0.01 {
			everyone = 0.5 * BaseStepUs
		}
		last := 0.0
		for r := range j.Ranks {
			d[r] = noise(0.08*BaseStepUs, 0.05) + extra[r][1]
			h[r] = noise(0.12*BaseStepUs, 0.05) + extra[r][2] + everyone
			if rng.Float64() < 0.005 {
				h[r] += 0.3 * BaseStepUs
			}
			k[r] = noise(0.55*BaseStepUs*speed[r], 0.02) + extra[r][0]
			last = math.Max(last, d[r]+h[r]+k[r])
		}
		for r := range j.Ranks {
			coll := last - (d[r] + h[r] + k[r]) + noise(0.15*BaseStepUs, 0.05) + extra[r][3]
			opt := noise(0.10*BaseStepUs, 0.02)
			st := &sums[r].Steps
			st.Num[s] = s + 1
			st.DataUs[s], st.HostUs[s], st.KernelUs[s] = us(d[r]), us(h[r]), us(k[r]+opt)
			st.CommUs[s], st.CollUs[s], st.Colls[s] = us(coll), us(coll), 1
			st.StepUs[s] = st.DataUs[s] + st.HostUs[s] + st.KernelUs[s] + st.CommUs[s]
		}
	}
	return sums
}

func us(x float64) int64 { return int64(math.Round(x)) }

func hostName(k int) string { return "node" + strconv.Itoa(k) }
