package summary_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/summary/simgen"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// realSummaries summarises a directory of real rank traces.
func realSummaries(t *testing.T, dir string) []*summary.Summary {
	t.Helper()
	ios, _, _, _ := iostreams.Test()
	res, err := driver.Summarize(ios, []string{dir}, "", 1)
	if err != nil || len(res.Failures) > 0 {
		t.Fatalf("summarize %s: %v %v", dir, err, res.Failures)
	}
	return res.Summaries
}

// TestSize: a summary of 1,000 steps, with a real rank's diagnosis,
// stays under the 64 KB target.
func TestSize(t *testing.T) {
	real := realSummaries(t, filepath.Join(testutil.Traces(t), "param", "dlrm_kineto"))
	s := simgen.Generate(simgen.Job{Ranks: 2, Steps: 1000, Seed: 1})[0]
	s.Diagnosis = real[0].Diagnosis
	if s.Diagnosis == nil || len(s.Diagnosis.Findings) == 0 {
		t.Fatal("the real rank has no diagnosis to carry")
	}
	var buf bytes.Buffer
	if err := summary.Write(&buf, s); err != nil {
		t.Fatal(err)
	}
	t.Logf("1,000 steps: %d bytes (%d of them the diagnosis)", buf.Len(), len(mustJSON(t, s.Diagnosis)))
	if buf.Len() > 64<<10 {
		t.Errorf("a summary of 1,000 steps takes %d bytes, over 64 KB", buf.Len())
	}
	back, err := summary.Decode(&buf, "size test")
	if err != nil || len(back) != 1 || back[0].Steps.Len() != 1000 {
		t.Fatalf("round trip: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMergeOrderIndependent: shuffled summaries merged in random groups,
// the groups merged in random order, give the same report as all added
// at once.
func TestMergeOrderIndependent(t *testing.T) {
	sums := simgen.Generate(simgen.Job{Ranks: 48, Steps: 50, Seed: 7, Stragglers: []simgen.Straggler{
		{Rank: 5, Kind: simgen.Compute, StrengthPct: 10}, {Rank: 30, Kind: simgen.Link, StrengthPct: 20}}})
	ref := summary.NewJob()
	for _, s := range sums {
		if err := ref.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	want := mustJSON(t, ref.Report(0))
	if !bytes.Contains(want, []byte(`"rank":5,`)) {
		t.Fatal("the reference report names no straggler: the test would compare nothing")
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for trial := range 20 {
		order := rng.Perm(len(sums))
		var parts []*summary.Job
		for i := 0; i < len(order); {
			n := 1 + rng.IntN(10)
			part := summary.NewJob()
			for _, k := range order[i:min(i+n, len(order))] {
				if err := part.Add(sums[k]); err != nil {
					t.Fatal(err)
				}
			}
			parts = append(parts, part)
			i += n
		}
		// merge random pairs until one job is left: every grouping
		for len(parts) > 1 {
			a, b := rng.IntN(len(parts)), rng.IntN(len(parts)-1)
			if b >= a {
				b++
			}
			if err := parts[a].Merge(parts[b]); err != nil {
				t.Fatal(err)
			}
			parts = append(parts[:b], parts[b+1:]...)
		}
		if got := mustJSON(t, parts[0].Report(0)); !bytes.Equal(got, want) {
			t.Fatalf("trial %d: the report depends on the merge order", trial)
		}
	}
	// a rank twice is an error, whichever side has it
	dup := summary.NewJob()
	dup.Add(sums[3])
	if err := ref.Merge(dup); err == nil || !strings.Contains(err.Error(), "rank 3 twice") {
		t.Errorf("duplicate rank: %v", err)
	}
}

// TestDecodeErrors: a file that is not a summary, or a broken one, is an
// error naming the file and the summary in it.
func TestDecodeErrors(t *testing.T) {
	good := mustJSON(t, simgen.Generate(simgen.Job{Ranks: 1, Steps: 3, Seed: 1})[0])
	for name, in := range map[string]string{
		"not json":     "{\"traceEvents\": [",
		"other format": `{"format":"bottleneck.rank-summary/9","rank":1}`,
		"short array":  strings.Replace(string(good), `"colls":[1,1,1]`, `"colls":[1,1]`, 1),
		"empty":        "",
		"second bad":   string(good) + "\n{\"format\": 3}",
	} {
		_, err := summary.Decode(strings.NewReader(in), "f.json")
		if err == nil || !strings.HasPrefix(err.Error(), "f.json: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRealTracesAgreeWithAnalyze: summarize + merge of real multi-rank
// traces give analyze's cross-rank verdict: the class, the rank named
// and the confidence.
func TestRealTracesAgreeWithAnalyze(t *testing.T) {
	root := testutil.Traces(t)
	for _, dir := range []string{"param/dlrm_kineto", "hta/trace_diff", "hta/trace_filter"} {
		t.Run(dir, func(t *testing.T) {
			path := filepath.Join(root, dir)
			ios, _, _, _ := iostreams.Test()
			d, err := driver.Open(ios, []string{path}, driver.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			want := d.Report.Diagnosis.Verdict
			job := summary.NewJob()
			for _, s := range realSummaries(t, path) {
				if err := job.Add(s); err != nil {
					t.Fatal(err)
				}
			}
			rep := job.Report(0)
			got := rep.Diagnosis.Verdict
			if got.Primary != want.Primary || got.Detail != want.Detail || got.Confidence != want.Confidence || got.Why != want.Why {
				t.Errorf("merge says %s (%s, %s: %s), analyze %s (%s, %s: %s)", got.Primary, got.Detail, got.Confidence, got.Why,
					want.Primary, want.Detail, want.Confidence, want.Why)
			}
			if rep.Detector.Ran {
				t.Errorf("the detector ran on %d ranks", rep.Ranks)
			}
		})
	}
}

// TestRunDirectory: a run directory is summarised as analyze reads it:
// the agent's step numbers and the run's evidence in the rank's verdict.
func TestRunDirectory(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	res, err := driver.Summarize(ios, []string{testutil.RunDir(t, "slow_dataset")}, "", 1)
	if err != nil || len(res.Failures) > 0 || len(res.Summaries) != 1 {
		t.Fatalf("summarize: %v %v", err, res)
	}
	s := res.Summaries[0]
	if s.Steps.Num[0] != 8 || s.Diagnosis == nil || s.Diagnosis.Primary != "input-bound" {
		t.Errorf("steps %v, diagnosis %+v; want steps from 8, input-bound", s.Steps.Num, s.Diagnosis)
	}
}
