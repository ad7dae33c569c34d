package summary_test

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
)

// rankSteps is one rank of a 4-rank job's steps: host is its own work
// before the all-reduce, coll the all-reduce (its wait for the last rank
// included), as µs per step.
func rankSteps(rank int, host, coll []int64, commPct float64) *summary.Summary {
	n := len(host)
	s := &summary.Summary{Format: summary.Format, Rank: rank, WorldSize: 4, File: "r.json", Steps: summary.Steps{
		Num: make([]int, n), StepUs: make([]int64, n), DataUs: make([]int64, n), HostUs: host, KernelUs: make([]int64, n),
		CommUs: coll, CollUs: coll, Colls: make([]int, n)}}
	for i := range n {
		s.Steps.Num[i] = 4 + i
		s.Steps.StepUs[i] = host[i] + coll[i]
		s.Steps.Colls[i] = 1
	}
	s.Diagnosis = &summary.RankDiagnosis{Primary: diagnose.Comm, CommPct: commPct, Confidence: "medium"}
	return s
}

// Rank 2 runs 15 ms more per step, so the others wait for it in the
// all-reduce; rank 0's steps, waiting included, are the longest. When no
// step's collectives can be matched on every rank (here rank 1's trace
// recorded none), nothing says who arrived last: the straggler is the
// rank that waits least (the lowest communication share), not the one
// with the longest steps (a CI run under load named rank 0, whose own
// verdict was communication-bound). With the collectives matched, the
// last arrivals name it.
func TestStragglerWithoutArrivals(t *testing.T) {
	for _, matched := range []bool{false, true} {
		job := summary.NewJob()
		for _, s := range []*summary.Summary{
			rankSteps(0, []int64{12000, 12000, 12000, 12000}, []int64{19000, 19000, 19000, 19000}, 61),
			rankSteps(1, []int64{10000, 10000, 10000, 10000}, []int64{16000, 16000, 16000, 16000}, 62),
			rankSteps(2, []int64{25000, 25000, 25000, 25000}, []int64{2000, 2000, 2000, 2000}, 7),
			rankSteps(3, []int64{10000, 10000, 10000, 10000}, []int64{16000, 16000, 16000, 16000}, 62),
		} {
			if s.Rank == 1 && !matched {
				clear(s.Steps.Colls)
			}
			if err := job.Add(s); err != nil {
				t.Fatal(err)
			}
		}
		rep := job.Report(4)
		if want := map[bool]int{false: 0, true: 4}[matched]; rep.MatchedSteps != want {
			t.Fatalf("matched %v: %d matched steps, want %d", matched, rep.MatchedSteps, want)
		}
		if rep.Slowest[0].Rank != 0 {
			t.Fatalf("matched %v: the slowest rank is %d, want 0 (the premise)", matched, rep.Slowest[0].Rank)
		}
		if len(rep.Stragglers) != 1 || rep.Stragglers[0].Rank != 2 {
			t.Errorf("matched %v: stragglers %+v, want rank 2 alone (verdict: %s)", matched, rep.Stragglers, rep.Diagnosis.Verdict.Why)
		}
	}
}
