package summary_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/summary/simgen"
)

// strengths are the injected stragglers' strengths, % of the base step.
var strengths = []float64{2, 3, 5, 10, 20, 50}

// targetStrength is X: the detection target holds for stragglers that
// add at least 5% of a step. Below it a rank's excess is within reach of
// the ordinary spread between ranks (GPU speed sd 1% of the kernels,
// 0.55% of the step: FloorPct 2% and Z = 5 put the bar near 2.8%), and a
// straggler of 5% already costs every other rank 5% of each step.
const targetStrength = 5.0

type tally struct{ found, injected, causeRight int }

// TestDetection: over seeded simulated jobs of 1,000 ranks, the detector
// finds >= 97% of the stragglers of strength >= 5% with the right cause
// for >= 90% of them, and flags <= 1% of the clean ranks. Clean jobs get
// no straggler verdict.
func TestDetection(t *testing.T) {
	const jobs, ranks, steps, perJob = 40, 1000, 100, 12
	rng := rand.New(rand.NewPCG(11, 17))
	byStrength := map[float64]*tally{}
	byKind := map[string]*tally{}
	falsePos, clean := 0, 0
	for j := range jobs {
		job := simgen.Job{Ranks: ranks, Steps: steps, Seed: uint64(100 + j)}
		if j%4 != 3 { // every fourth job clean
			for _, r := range rng.Perm(ranks)[:perJob] {
				job.Stragglers = append(job.Stragglers, simgen.Straggler{Rank: r,
					Kind: simgen.Kinds[rng.IntN(len(simgen.Kinds))], StrengthPct: strengths[rng.IntN(len(strengths))]})
			}
		}
		merged := summary.NewJob()
		for _, s := range simgen.Generate(job) {
			if err := merged.Add(s); err != nil {
				t.Fatal(err)
			}
		}
		rep := merged.Report(0)
		if !rep.Detector.Ran {
			t.Fatalf("job %d: the detector did not run: %s", j, rep.Detector.Why)
		}
		flagged := map[int]summary.Straggler{}
		for _, s := range rep.Stragglers {
			if s.By == "detector" {
				flagged[s.Rank] = s
			}
		}
		injected := map[int]bool{}
		for _, s := range job.Stragglers {
			injected[s.Rank] = true
			for _, tl := range []*tally{get(byStrength, s.StrengthPct), get(byKind, fmt.Sprintf("%s >= %.0f%%", s.Kind, targetStrength))} {
				if tl == byKind[fmt.Sprintf("%s >= %.0f%%", s.Kind, targetStrength)] && s.StrengthPct < targetStrength {
					continue
				}
				tl.injected++
				if f, ok := flagged[s.Rank]; ok {
					tl.found++
					if f.Cause == s.Kind {
						tl.causeRight++
					}
				}
			}
		}
		for r := range ranks {
			if !injected[r] {
				clean++
				if _, ok := flagged[r]; ok {
					falsePos++
				}
			}
		}
		if len(job.Stragglers) == 0 && rep.Diagnosis.Verdict.Primary == diagnose.Straggler {
			t.Errorf("clean job %d: verdict %s (%s)", j, rep.Diagnosis.Verdict.Detail, rep.Diagnosis.Verdict.Why)
		}
	}
	var at tally
	keys := make([]float64, 0, len(byStrength))
	for s := range byStrength {
		keys = append(keys, s)
	}
	slices.Sort(keys)
	for _, s := range keys {
		tl := byStrength[s]
		t.Logf("strength %4.0f%%: found %d of %d (%.1f%%), cause right %d", s, tl.found, tl.injected, pct(tl.found, tl.injected), tl.causeRight)
		if s >= targetStrength {
			at.found, at.injected, at.causeRight = at.found+tl.found, at.injected+tl.injected, at.causeRight+tl.causeRight
		}
	}
	for _, k := range simgen.Kinds {
		key := fmt.Sprintf("%s >= %.0f%%", k, targetStrength)
		if tl := byKind[key]; tl != nil {
			t.Logf("%-14s found %d of %d, cause right %d", key, tl.found, tl.injected, tl.causeRight)
		}
	}
	t.Logf("false positives: %d of %d clean ranks (%.3f%%)", falsePos, clean, pct(falsePos, clean))
	if at.injected < 50 {
		t.Fatalf("only %d stragglers of strength >= %.0f%% injected", at.injected, targetStrength)
	}
	if p := pct(at.found, at.injected); p < 97 {
		t.Errorf("found %.1f%% of the stragglers of strength >= %.0f%%, want >= 97%%", p, targetStrength)
	}
	if p := pct(at.causeRight, at.found); p < 90 {
		t.Errorf("cause right for %.1f%% of those found, want >= 90%%", p)
	}
	if p := pct(falsePos, clean); p > 1 {
		t.Errorf("%.2f%% of clean ranks flagged, want <= 1%%", p)
	}
}

func get[K comparable](m map[K]*tally, k K) *tally {
	if m[k] == nil {
		m[k] = &tally{}
	}
	return m[k]
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// TestDetection10k: one job of 10,000 ranks, 20 stragglers of 5-50% of
// every kind: all found with their cause, at most 0.1% of the clean ranks
// flagged, and the verdict names them as its findings.
func TestDetection10k(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	job := simgen.Job{Ranks: 10000, Steps: 100, Seed: 99}
	for i, r := range rng.Perm(job.Ranks)[:20] {
		job.Stragglers = append(job.Stragglers, simgen.Straggler{Rank: r, Kind: simgen.Kinds[i%4], StrengthPct: []float64{5, 10, 20, 50}[i/5]})
	}
	merged := summary.NewJob()
	for _, s := range simgen.Generate(job) {
		if err := merged.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	rep := merged.Report(0)
	want := map[int]string{}
	for _, s := range job.Stragglers {
		want[s.Rank] = s.Kind
	}
	clean := 0
	for _, s := range rep.Stragglers {
		kind, ok := want[s.Rank]
		switch {
		case !ok:
			clean++
			t.Logf("clean rank %d flagged (%s, %.1f%%, z %.1f)", s.Rank, s.Cause, s.ExcessPct, s.Z)
		case kind != s.Cause:
			t.Errorf("rank %d: cause %s, injected %s", s.Rank, s.Cause, kind)
		}
		delete(want, s.Rank)
	}
	if len(want) > 0 {
		t.Errorf("not found: %v", want)
	}
	if clean > 10 { // 0.1%, a tenth of the target
		t.Errorf("%d clean ranks flagged", clean)
	}
	if v := rep.Diagnosis.Verdict; v.Primary != diagnose.Straggler || len(rep.Diagnosis.Findings) != 20 {
		t.Errorf("verdict %s (%s), %d findings", v.Primary, v.Detail, len(rep.Diagnosis.Findings))
	}
}
