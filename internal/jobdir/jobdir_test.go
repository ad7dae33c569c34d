package jobdir

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/summary/simgen"
)

const perNode = 8

var key = Key{RunID: "job1", Master: "10.0.0.1:29500", WorldSize: 32, Nodes: 4}

// writeNodes writes the simulated job's ranks as nodes of perNode ranks,
// skipping the nodes in skip.
func writeNodes(t *testing.T, dir string, sums []*summary.Summary, written time.Time, skip ...int) {
	t.Helper()
	for n := 0; n*perNode < len(sums); n++ {
		if slices.Contains(skip, n) {
			continue
		}
		part := sums[n*perNode : (n+1)*perNode]
		rec := &NodeRecord{Node: n, Host: "host" + string(rune('a'+n)), Key: key, RunDir: "/runs/node" + string(rune('0'+n)), Written: written}
		for _, s := range part {
			rec.Ranks = append(rec.Ranks, s.Rank)
		}
		if _, err := WriteNode(dir, rec, part); err != nil {
			t.Fatal(err)
		}
	}
}

func job(stragglers ...simgen.Straggler) []*summary.Summary {
	return simgen.Generate(simgen.Job{Ranks: 32, Steps: 60, RanksPerHost: perNode, Seed: 7, Stragglers: stragglers})
}

// collect waits an hour at most: a test that needed the wait would hang,
// so one that passes ended its wait because every node had reported.
func collect(t *testing.T, dir string, wait time.Duration) *Report {
	t.Helper()
	rep, err := Collect(CollectOptions{Dir: dir, Self: Identity{Node: 0, Key: key}, Started: time.Now().Add(-time.Second), Wait: wait, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestJobReportNamesStragglerAndItsNode(t *testing.T) {
	dir := t.TempDir()
	writeNodes(t, dir, job(simgen.Straggler{Rank: 13, Kind: simgen.Data, StrengthPct: 10}), time.Now())
	rep := collect(t, dir, time.Hour)
	if !rep.Complete || len(rep.MissingNodes) > 0 || len(rep.Nodes) != 4 || len(rep.Ignored) > 0 || len(rep.Warnings) > 0 {
		t.Fatalf("complete %v, missing %v, %d nodes, ignored %v, warnings %v", rep.Complete, rep.MissingNodes, len(rep.Nodes), rep.Ignored, rep.Warnings)
	}
	if s := rep.Job.Stragglers; len(s) != 1 || s[0].Rank != 13 || s[0].Cause != summary.CauseData {
		t.Fatalf("stragglers %+v, want rank 13 (data)", s)
	}
	for _, n := range rep.Nodes {
		want := []int(nil)
		if n.Node == 1 {
			want = []int{13}
		}
		if !slices.Equal(n.Stragglers, want) {
			t.Errorf("node %d stragglers %v, want %v", n.Node, n.Stragglers, want)
		}
		if n.StepUs <= 0 || len(n.Summarised) != perNode {
			t.Errorf("node %d: step %v, summarised %v", n.Node, n.StepUs, n.Summarised)
		}
	}
	if s := rep.Series; s == nil || len(s.Ranks) != 32 || len(s.Steps) != 60 || s.Ranks[5].Rank != 5 || s.Ranks[5].StepUs[0] == nil {
		t.Fatalf("series %+v", s)
	}
	txt, err := Write(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt, "node 1 on hostb: ranks 8-15, mean step") || strings.Count(txt, "STRAGGLERS") != 1 || !strings.Contains(txt, "STRAGGLERS: rank 13, data\n") {
		t.Errorf("text:\n%s", txt)
	}
	for _, f := range []string{ReportText, ReportJSON} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestCleanJobFlagsNoNode(t *testing.T) {
	dir := t.TempDir()
	writeNodes(t, dir, job(), time.Now())
	rep := collect(t, dir, time.Hour)
	if len(rep.Job.Stragglers) > 0 {
		t.Fatalf("stragglers %+v in a clean job", rep.Job.Stragglers)
	}
	for _, n := range rep.Nodes {
		if len(n.Stragglers) > 0 {
			t.Errorf("node %d flags %v", n.Node, n.Stragglers)
		}
	}
	txt, _ := Write(rep)
	if strings.Contains(txt, "STRAGGLERS") || strings.Contains(txt, "NEVER REPORTED") {
		t.Errorf("text:\n%s", txt)
	}
}

func TestNodeThatNeverReportsIsNamedAndReportWritten(t *testing.T) {
	dir := t.TempDir()
	writeNodes(t, dir, job(), time.Now(), 2)
	rep := collect(t, dir, 200*time.Millisecond)
	if rep.Complete || !slices.Equal(rep.MissingNodes, []int{2}) || len(rep.Nodes) != 3 {
		t.Fatalf("complete %v, missing nodes %v, %d nodes", rep.Complete, rep.MissingNodes, len(rep.Nodes))
	}
	if m := rep.Job.Missing; len(m) != 1 || m[0] != (summary.Range{From: 16, To: 23}) {
		t.Fatalf("missing ranks %+v", m)
	}
	if _, err := Write(rep); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ReportText))
	if err != nil {
		t.Fatal(err)
	}
	txt := string(b)
	if !strings.Contains(txt, "Job report: 3 of 4 nodes reported") || !strings.Contains(txt, "node 2: NEVER REPORTED") || !strings.Contains(txt, "MISSING: 8 of 32 ranks sent no summary: 16-23") {
		t.Errorf("text:\n%s", txt)
	}
}

func TestOtherJobsAndEarlierRunsAreSetAside(t *testing.T) {
	dir := t.TempDir()
	sums := job()
	writeNodes(t, dir, sums, time.Now(), 1, 2)
	other := &NodeRecord{Node: 1, Key: Key{RunID: "job0", WorldSize: 32, Nodes: 4}, Written: time.Now(), Ranks: []int{8}}
	if _, err := WriteNode(dir, other, sums[8:9]); err != nil {
		t.Fatal(err)
	}
	old := &NodeRecord{Node: 2, Key: key, Written: time.Now().Add(-2 * time.Hour), Ranks: []int{16}}
	if _, err := WriteNode(dir, old, sums[16:17]); err != nil {
		t.Fatal(err)
	}
	rep := collect(t, dir, 100*time.Millisecond)
	if !slices.Equal(rep.MissingNodes, []int{1, 2}) || len(rep.Ignored) != 2 {
		t.Fatalf("missing %v, ignored %q", rep.MissingNodes, rep.Ignored)
	}
	if !strings.Contains(rep.Ignored[0], `another job's (run id "job0", not "job1")`) || !strings.Contains(rep.Ignored[1], "an earlier run's") {
		t.Errorf("ignored %q", rep.Ignored)
	}
	if rep.Job.Ranks != 16 {
		t.Errorf("%d ranks merged, want the 16 of nodes 0 and 3", rep.Job.Ranks)
	}
}

// With neither the number of nodes nor of ranks known, there is nothing
// to wait for: the merge is of the nodes present (the hour-long wait
// would hang the test otherwise).
func TestUnknownJobSizeDoesNotWait(t *testing.T) {
	dir := t.TempDir()
	sums := job()
	rec := &NodeRecord{Node: 0, Written: time.Now(), Ranks: []int{0, 1}}
	if _, err := WriteNode(dir, rec, sums[:2]); err != nil {
		t.Fatal(err)
	}
	rep, err := Collect(CollectOptions{Dir: dir, Self: Identity{Node: 0}, Wait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Complete || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "unknown") || rep.Job.Ranks != 2 {
		t.Errorf("complete %v, warnings %q", rep.Complete, rep.Warnings)
	}
}

func TestIdentify(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want Identity
	}{
		{[]string{"--nnodes", "2", "--node-rank", "1", "--nproc-per-node", "4", "--master-addr", "h", "train.py", "--node-rank", "7"}, nil,
			Identity{Node: 1, Key: Key{WorldSize: 8, Nodes: 2}}},
		{[]string{"--nnodes=3", "--node_rank=2", "--nproc_per_node=2", "--rdzv-id", "j9", "--standalone", "-m", "pkg"}, nil,
			Identity{Node: 2, Key: Key{RunID: "j9", WorldSize: 6, Nodes: 3}}},
		{[]string{"--nnodes", "1:4", "--nproc-per-node", "2", "train.py"}, nil, Identity{Node: -1}},
		{[]string{"--nnodes", "1", "train.py"}, nil, Identity{Node: 0, Key: Key{Nodes: 1}}},
		{[]string{"--nnodes", "2:4", "--node-rank", "0", "train.py"},
			map[string]string{"GROUP_RANK": "3", "GROUP_WORLD_SIZE": "4", "WORLD_SIZE": "16", "TORCHELASTIC_RUN_ID": "r", "MASTER_ADDR": "m", "MASTER_PORT": "1"},
			Identity{Node: 3, Key: Key{RunID: "r", Master: "m:1", WorldSize: 16, Nodes: 4}}},
	} {
		var run *rundir.Run
		if c.env != nil {
			run = &rundir.Run{Processes: []*rundir.ProcessFiles{{Tag: "rank12"}, {Tag: "rank13", Env: &rundir.Env{EnvVars: c.env}}}}
		}
		c.want.Host = "h1"
		if got := Identify(run, c.args, "h1"); got != c.want {
			t.Errorf("%q %v: %+v, want %+v", c.args, c.env, got, c.want)
		}
	}
}

func TestOneSummaryPerRankJoinsWindows(t *testing.T) {
	sums := simgen.Generate(simgen.Job{Ranks: 2, Steps: 6, Seed: 1})
	a, b := *sums[0], *sums[0]
	a.Steps, b.Steps = slice(sums[0].Steps, 0, 3), slice(sums[0].Steps, 3, 6)
	a.File, b.File = "w1", "w2"
	c := b
	c.File = "w3" // the same steps as w2
	out, problems := OneSummaryPerRank([]*summary.Summary{&b, sums[1], &a, &c})
	if len(out) != 2 || out[0].Rank != 0 || out[1] != sums[1] {
		t.Fatalf("%d summaries", len(out))
	}
	if !slices.Equal(out[0].Steps.Num, sums[0].Steps.Num) || !slices.Equal(out[0].Steps.StepUs, sums[0].Steps.StepUs) || out[0].Check() != nil {
		t.Errorf("joined steps %v %v", out[0].Steps.Num, out[0].Steps.StepUs)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "w3 has steps w2+w1 also has") {
		t.Errorf("problems %q", problems)
	}
}

func slice(s summary.Steps, i, j int) summary.Steps {
	return summary.Steps{Num: s.Num[i:j], StepUs: s.StepUs[i:j], DataUs: s.DataUs[i:j], HostUs: s.HostUs[i:j],
		KernelUs: s.KernelUs[i:j], CommUs: s.CommUs[i:j], CollUs: s.CollUs[i:j], Colls: s.Colls[i:j]}
}

func TestRanges(t *testing.T) {
	if got := Ranges([]int{0, 1, 2, 5, 7, 8}); got != "0-2, 5, 7-8" {
		t.Error(got)
	}
}

// A signal during node 0's wait ends it: the report is of the nodes
// present (the hour-long wait would hang the test otherwise).
func TestStopEndsTheWait(t *testing.T) {
	dir := t.TempDir()
	writeNodes(t, dir, job(), time.Now(), 1, 2, 3)
	stop := make(chan struct{})
	close(stop)
	rep, err := Collect(CollectOptions{Dir: dir, Self: Identity{Node: 0, Key: key}, Wait: time.Hour, Stop: stop})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Complete || !slices.Equal(rep.MissingNodes, []int{1, 2, 3}) || rep.Job.Ranks != 8 {
		t.Errorf("complete %v, missing %v", rep.Complete, rep.MissingNodes)
	}
}
