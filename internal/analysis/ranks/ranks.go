// Package ranks compares the ranks of one distributed job side by side: step
// times, imbalance, communication share and overlap, and the straggler.
//
// Definitions (version "ranks/1"):
//
//   - Step time: host start of ProfilerStep#N to its end moved to device
//     time (trace.Step.DeviceEnd); steps are matched across ranks by N (a
//     trace without steps has one synthetic step, matched as step 0).
//   - Imbalance: (slowest rank's mean step time - median of the ranks' mean
//     step times) / median, in %; per step likewise.
//   - Communication time: the union of communication kernels (classify,
//     by the kernel table: NCCL/RCCL/MSCCL, DeepEP, NVSHMEM, symmetric
//     memory) on all devices; computation
//     time: the union of all other kernels (memcpy/memset excluded, as HTA
//     does). Only device work launched inside the steps counts.
//   - Communication share: communication time / sum of step times.
//   - Overlap: time where communication and computation both run /
//     communication time (HTA's comm_comp_overlap).
//   - Straggler: collectives are matched across ranks by step and order
//     (the k-th collective kernel of step N on every rank). A collective
//     lasts longest on the ranks that arrive first and shortest on the
//     last one to arrive, whom the others wait for, so for each matched
//     collective the rank with the shortest kernel is "last to arrive" and
//     every other rank's wait is its duration minus that shortest one.
//     Clocks of different hosts are not compared. The straggler is the
//     rank that arrives last most often (ties: least wait); none with
//     fewer than two ranks or no matched collective.
package ranks

import (
	"cmp"
	"path/filepath"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Definition names the version of the definitions above.
const Definition = "ranks/1"

// Options tune the analysis.
type Options struct {
	// DropLastStep leaves out each rank's last step (often truncated), as
	// HTA does by default.
	DropLastStep bool
}

// Rank is one rank's figures.
type Rank struct {
	// Rank is the rank: the trace's rank, else distributedInfo's, else its position among the traces.
	Rank int `json:"rank"`
	// File is the trace's file name, without its directory.
	File string `json:"file"`
	// Steps is the number of steps measured.
	Steps int `json:"steps"`
	// MeanStepUs is the mean step time: host start of ProfilerStep#N to its end moved to device time.
	MeanStepUs float64 `json:"mean_step_us"`
	// ComputeUs is the union of the non-communication kernels launched inside the steps (copies and memsets excluded).
	ComputeUs float64 `json:"compute_us"`
	// CommUs is the union of the communication kernels launched inside the steps (without kernels: of the outermost host communication ops).
	CommUs float64 `json:"comm_us"`
	// CommPct is CommUs as a percentage of the summed step time.
	CommPct float64 `json:"comm_pct"`
	// OverlapUs is the time communication and computation kernels both ran.
	OverlapUs float64 `json:"overlap_us"`
	// OverlapPct is OverlapUs as a percentage of CommUs.
	OverlapPct float64 `json:"overlap_pct"`
	// Collectives is the number of collective kernels in the steps.
	Collectives int `json:"collectives"`
	// LastArrivals counts the matched collectives where this rank's kernel was the shortest: it arrived last and the others waited for it.
	LastArrivals int `json:"last_arrivals"`
	// CommWaitUs is this rank's summed wait in matched collectives: its kernel's duration minus the shortest rank's, per collective.
	CommWaitUs float64 `json:"comm_wait_us"`
}

// StepRow is one step number across ranks.
type StepRow struct {
	// Step is the ProfilerStep number (0 for traces without steps).
	Step int `json:"step"`
	// Us holds each rank's step time in the order of the ranks list
	// (ranks.ranks); -1 where that rank lacks the step.
	Us []float64 `json:"us"`
	// SlowestRank is the rank with the longest step time for this step.
	SlowestRank int `json:"slowest_rank"`
	// MedianUs is the median of the ranks' step times for this step (ranks lacking it left out).
	MedianUs float64 `json:"median_us"`
	// ImbalancePct is the slowest rank's step time minus MedianUs, as a percentage of MedianUs.
	ImbalancePct float64 `json:"imbalance_pct"`
}

// Result compares the ranks.
type Result struct {
	// Definition names the version of the definition (docs/metrics.md, "Ranks").
	Definition string `json:"definition"`
	// Ranks are the ranks' figures, by rank.
	Ranks []Rank `json:"ranks"`
	// Steps are the step numbers of any rank, ascending.
	Steps []StepRow `json:"steps"`
	// SlowestRank is the rank with the longest mean step time; -1 with no rank.
	SlowestRank int `json:"slowest_rank"`
	// MedianStepUs is the median of the ranks' mean step times.
	MedianStepUs float64 `json:"median_step_us"`
	// ImbalancePct is the slowest rank's mean step time minus MedianStepUs, as a percentage of MedianStepUs.
	ImbalancePct float64 `json:"imbalance_pct"`
	// MatchedCollectives is the number of collectives matched on every rank.
	MatchedCollectives int `json:"matched_collectives"`
	// Straggler is the rank the others wait for, -1 when none is found.
	Straggler int `json:"straggler"`
}

type rankData struct {
	steps map[int]int64   // step num -> ns
	comm  map[int][]int64 // step num -> collective kernel durations in start order
	order []int           // step nums in order
}

// Measured is one rank's half of the comparison: what Compare needs of
// its trace, so that the trace can be dropped before the others are read.
type Measured struct {
	Rank  Rank
	Steps []StepCollectives
}

// Measure measures one rank for Compare.
func Measure(t *trace.Trace, opt Options) Measured {
	r, steps := PerRank(t, opt)
	return Measured{Rank: r, Steps: steps}
}

// Compare compares measured ranks (Measure of one trace per rank): in
// the order of their ranks (stable; a rank of -1 takes its position).
func Compare(measured []Measured) *Result {
	res := &Result{Definition: Definition, Ranks: []Rank{}, Steps: []StepRow{}, SlowestRank: -1, Straggler: -1}
	ms := slices.Clone(measured)
	slices.SortStableFunc(ms, func(a, b Measured) int { return cmp.Compare(a.Rank.Rank, b.Rank.Rank) })
	data := make([]rankData, len(ms))
	for ri, m := range ms {
		rk := m.Rank
		if rk.Rank < 0 {
			rk.Rank = ri
		}
		res.Ranks = append(res.Ranks, rk)
		d := rankData{steps: make(map[int]int64, len(m.Steps)), comm: map[int][]int64{}, order: make([]int, len(m.Steps))}
		for i, st := range m.Steps {
			d.steps[st.Num] = st.StepNs
			d.order[i] = st.Num
			if st.CollNs != nil {
				d.comm[st.Num] = st.CollNs
			}
		}
		data[ri] = d
	}
	ts := ms
	if len(ts) == 0 {
		return res
	}

	// Step table over the union of step numbers.
	seen := map[int]bool{}
	var nums []int
	for _, d := range data {
		for _, n := range d.order {
			if !seen[n] {
				seen[n] = true
				nums = append(nums, n)
			}
		}
	}
	slices.Sort(nums)
	for _, n := range nums {
		row := StepRow{Step: n, SlowestRank: -1}
		var have []float64
		for ri, d := range data {
			v, ok := d.steps[n]
			if !ok {
				row.Us = append(row.Us, -1)
				continue
			}
			u := float64(v) / 1e3
			row.Us = append(row.Us, u)
			have = append(have, u)
			if row.SlowestRank < 0 || u > row.Us[indexOfRank(res.Ranks, row.SlowestRank)] {
				row.SlowestRank = res.Ranks[ri].Rank
			}
		}
		row.MedianUs = stats.Median(have)
		if row.MedianUs > 0 && row.SlowestRank >= 0 {
			row.ImbalancePct = (row.Us[indexOfRank(res.Ranks, row.SlowestRank)] - row.MedianUs) * 100 / row.MedianUs
		}
		res.Steps = append(res.Steps, row)
	}
	var means []float64
	slowest := -1
	for i, r := range res.Ranks {
		means = append(means, r.MeanStepUs)
		if slowest < 0 || r.MeanStepUs > res.Ranks[slowest].MeanStepUs {
			slowest = i
		}
	}
	res.SlowestRank = res.Ranks[slowest].Rank
	res.MedianStepUs = stats.Median(means)
	if res.MedianStepUs > 0 {
		res.ImbalancePct = (res.Ranks[slowest].MeanStepUs - res.MedianStepUs) * 100 / res.MedianStepUs
	}

	// Straggler: match the k-th collective of each common step.
	if len(ts) < 2 {
		return res
	}
	wait := make([]int64, len(ts))
	for _, n := range nums {
		k := -1
		for _, d := range data {
			c, ok := d.comm[n]
			if !ok {
				k = 0
				break
			}
			if k < 0 || len(c) < k {
				k = len(c)
			}
		}
		for j := 0; j < k; j++ {
			short := 0
			for ri := range data {
				if data[ri].comm[n][j] < data[short].comm[n][j] {
					short = ri
				}
			}
			res.Ranks[short].LastArrivals++
			for ri := range data {
				wait[ri] += data[ri].comm[n][j] - data[short].comm[n][j]
			}
			res.MatchedCollectives++
		}
	}
	best := -1
	for ri := range res.Ranks {
		res.Ranks[ri].CommWaitUs = float64(wait[ri]) / 1e3
		r := res.Ranks[ri]
		if r.LastArrivals == 0 {
			continue
		}
		if best < 0 || r.LastArrivals > res.Ranks[best].LastArrivals ||
			r.LastArrivals == res.Ranks[best].LastArrivals && r.CommWaitUs < res.Ranks[best].CommWaitUs {
			best = ri
		}
	}
	if best >= 0 {
		res.Straggler = res.Ranks[best].Rank
	}
	return res
}

// RankOf is the trace's rank: Trace.Rank, else distributedInfo's rank, else
// -1 (Compute then numbers ranks by position).
func RankOf(t *trace.Trace) int {
	if t.Rank >= 0 {
		return t.Rank
	}
	if d := t.Meta.Distributed; d != nil && d.HasRank {
		return d.Rank
	}
	return -1
}

func indexOfRank(rs []Rank, rank int) int {
	for i, r := range rs {
		if r.Rank == rank {
			return i
		}
	}
	return 0
}

// one measures one rank.
func one(t *trace.Trace, opt Options) (Rank, rankData) {
	ev := &t.Events
	r := Rank{Rank: RankOf(t), File: filepath.Base(t.Path)}
	d := rankData{steps: map[int]int64{}, comm: map[int][]int64{}}
	use := make([]bool, len(t.Steps))
	var total int64
	for i, s := range t.Steps {
		if opt.DropLastStep && i == len(t.Steps)-1 && len(t.Steps) > 1 {
			continue
		}
		use[i] = true
		dur := s.DeviceEnd - s.Start
		d.steps[s.Num] = dur
		d.order = append(d.order, s.Num)
		total += dur
		r.Steps++
	}
	if r.Steps > 0 {
		r.MeanStepUs = float64(total) / 1e3 / float64(r.Steps)
	}
	cls := classify.For(t)
	var comm, comp []interval.Span
	var commEv []int32
	kernels := false
	for i, k := range ev.Kind {
		if k != trace.KindKernel {
			continue
		}
		kernels = true
		s := ev.Step[i]
		if s == trace.None || !use[s] {
			continue
		}
		sp := interval.Span{Start: ev.Start[i], End: ev.End(i)}
		if cls.Has(ev.Name[i], classify.CommKernel) {
			comm = append(comm, sp)
			commEv = append(commEv, int32(i))
		} else {
			comp = append(comp, sp)
		}
	}
	if !kernels {
		// CPU-only (gloo): the collectives are host ops, as in the step
		// breakdown; the outermost of nested ones counts
		for i, k := range ev.Kind {
			if (k != trace.KindCPUOp && k != trace.KindUserAnnotation) || !cls.Has(ev.Name[i], classify.CommOp) {
				continue
			}
			if s := ev.Step[i]; s == trace.None || !use[s] {
				continue
			}
			if p := ev.Parent[i]; p != trace.None && cls.Has(ev.Name[p], classify.CommOp) {
				continue
			}
			comm = append(comm, interval.Span{Start: ev.Start[i], End: ev.End(i)})
			commEv = append(commEv, int32(i))
		}
	}
	slices.SortStableFunc(commEv, func(a, b int32) int { return cmp.Compare(ev.Start[a], ev.Start[b]) })
	for _, e := range commEv {
		n := t.Steps[ev.Step[e]].Num
		d.comm[n] = append(d.comm[n], ev.Dur[e])
	}
	r.Collectives = len(commEv)
	cs, ps := interval.Of(comm), interval.Of(comp)
	c, o := cs.Total(), cs.Intersect(ps).Total()
	r.CommUs = float64(c) / 1e3
	r.ComputeUs = float64(ps.Total()) / 1e3
	r.OverlapUs = float64(o) / 1e3
	if total > 0 {
		r.CommPct = float64(c) * 100 / float64(total)
	}
	if c > 0 {
		r.OverlapPct = float64(o) * 100 / float64(c)
	}
	return r, d
}

// StepCollectives is one step of one rank as Compute matches it across
// ranks: its time and its collective kernels' durations in start order.
type StepCollectives struct {
	// Num is the ProfilerStep number (0 for a trace without steps).
	Num int
	// StepNs is the step time: host start to its end moved to device time.
	StepNs int64
	// CollNs are the durations of the step's collectives (kernels, or the
	// outermost host communication ops on CPU-only traces), in start order.
	CollNs []int64
}

// PerRank measures one rank as Compute does: its figures (the fields
// that need other ranks left zero) and its steps in order.
func PerRank(t *trace.Trace, opt Options) (Rank, []StepCollectives) {
	r, d := one(t, opt)
	out := make([]StepCollectives, len(d.order))
	for i, n := range d.order {
		out[i] = StepCollectives{Num: n, StepNs: d.steps[n], CollNs: d.comm[n]}
	}
	return r, out
}
