package jobdir

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/summary/simgen"
)

// writeExchange writes what rank 0's agent leaves in node 0's run
// directory: one message per rank but those in skip (each rank's node is
// rank/perNode), and collected.json unless ended is "".
func writeExchange(t *testing.T, runDir string, sums []*summary.Summary, ended string, skip ...int) {
	t.Helper()
	dir := filepath.Join(runDir, ExchangeDirName, ReceivedDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, s := range sums {
		if slices.Contains(skip, s.Rank) {
			continue
		}
		var buf bytes.Buffer
		if err := summary.Write(&buf, s); err != nil {
			t.Fatal(err)
		}
		m := map[string]any{"format": ExchangeFormat, "rank": s.Rank, "node": s.Rank / perNode, "host": s.Host,
			"run_dir": "/runs/node" + string(rune('0'+s.Rank/perNode)), "job": key,
			"exit": map[string]any{"reason": "exit"}, "summaries": []json.RawMessage{bytes.TrimSpace(buf.Bytes())}}
		writeJSON(t, filepath.Join(dir, "rank"+strconv.Itoa(s.Rank)+".json"), m)
		got = append(got, s.Rank)
	}
	if ended != "" {
		var missing []int
		for r := range len(sums) {
			if !slices.Contains(got, r) {
				missing = append(missing, r)
			}
		}
		writeJSON(t, filepath.Join(runDir, ExchangeDirName, CollectedName), map[string]any{
			"format": CollectedFormat, "world_size": len(sums), "ranks": got, "missing": missing, "waited_s": 2.5, "wait_s": 120, "ended": ended})
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func exchangeReport(t *testing.T, runDir string) *Report {
	t.Helper()
	x, err := ReadExchange(runDir)
	if err != nil {
		t.Fatal(err)
	}
	self := &NodeRecord{Node: 0, Host: "hosta", Key: key, RunDir: runDir, ExitCode: 0, Started: time.Now().Add(-time.Second)}
	for r := range perNode {
		self.Ranks = append(self.Ranks, r)
	}
	rep, err := CollectExchange(x, self, Identity{Node: 0, Key: key}, filepath.Join(runDir, JobDirName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Write(rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// Every rank reported over the store: the report is node 0's, complete,
// with the straggler and its node, and nothing else to say.
func TestExchangeCompleteJob(t *testing.T) {
	runDir := t.TempDir()
	writeExchange(t, runDir, job(simgen.Straggler{Rank: 21, Kind: simgen.Compute, StrengthPct: 10}), "all ranks")
	rep := exchangeReport(t, runDir)
	if !rep.Complete || rep.Route != RouteStore || len(rep.Nodes) != 4 || len(rep.MissingNodes) > 0 || len(rep.Warnings) > 0 || len(rep.Ignored) > 0 {
		t.Fatalf("complete %v, route %q, %d nodes, missing %v, warnings %v, ignored %v", rep.Complete, rep.Route, len(rep.Nodes), rep.MissingNodes, rep.Warnings, rep.Ignored)
	}
	if rep.WaitedS != 2.5 || rep.Job.Ranks != 32 || len(rep.Job.Missing) > 0 {
		t.Fatalf("waited %v, ranks %d, missing %v", rep.WaitedS, rep.Job.Ranks, rep.Job.Missing)
	}
	if s := rep.Job.Stragglers; len(s) != 1 || s[0].Rank != 21 || s[0].Cause != summary.CauseCompute {
		t.Fatalf("stragglers %+v", s)
	}
	for _, n := range rep.Nodes {
		wantExit := -1 // only node 0 knows its own
		if n.Node == 0 {
			wantExit = 0
		}
		if n.ExitCode != wantExit || len(n.Summarised) != perNode || len(n.Problems) > 0 || (n.Node == 2) != (len(n.Stragglers) == 1) {
			t.Errorf("node %+v", n)
		}
	}
	// the layout is a job directory: merge reads it
	if sums, err := summary.ReadFile(filepath.Join(runDir, JobDirName, "node2", SummaryName(21))); err != nil || len(sums) != 1 {
		t.Errorf("node2's rank 21 in the job directory: %v", err)
	}
	txt, _ := os.ReadFile(filepath.Join(runDir, JobDirName, ReportText))
	for _, want := range []string{"rank 0 waited 2.50 s for the others", "over torchrun's store", "exit status not known here", "All 32 ranks of the world reported"} {
		if !strings.Contains(string(txt), want) {
			t.Errorf("report lacks %q:\n%s", want, txt)
		}
	}
}

// Ranks that never reported, a whole node among them, and a rank 0 that
// was stopped before it wrote collected.json: the report is written,
// names them, and says the wait was cut short.
func TestExchangeMissingRanksAndNode(t *testing.T) {
	runDir := t.TempDir()
	skip := []int{5, 24, 25, 26, 27, 28, 29, 30, 31}
	writeExchange(t, runDir, job(), "", skip...)
	rep := exchangeReport(t, runDir)
	if rep.Complete || !slices.Equal(rep.MissingNodes, []int{3}) || len(rep.Nodes) != 3 {
		t.Fatalf("complete %v, missing nodes %v, nodes %d", rep.Complete, rep.MissingNodes, len(rep.Nodes))
	}
	if want := []summary.Range{{From: 5, To: 5}, {From: 24, To: 31}}; !slices.Equal(rep.Job.Missing, want) {
		t.Errorf("missing ranks %v, want %v", rep.Job.Missing, want)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "rank 0 did not finish its wait") {
		t.Errorf("warnings %v", rep.Warnings)
	}
	if len(rep.Job.Stragglers) > 0 {
		t.Errorf("a clean job's stragglers: %+v", rep.Job.Stragglers)
	}
	txt, _ := os.ReadFile(filepath.Join(runDir, JobDirName, ReportText))
	if !strings.Contains(string(txt), "node 3: NEVER REPORTED (no rank of it reported over torchrun's store") {
		t.Errorf("report:\n%s", txt)
	}
}

// A node's own exchange files: which ranks sent, which failed and why.
func TestReadExchangeSentAndErrors(t *testing.T) {
	runDir := t.TempDir()
	dir := filepath.Join(runDir, ExchangeDirName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeJSON(t, filepath.Join(dir, "rank2.sent"), map[string]any{"seq": 3, "bytes": 2085, "summarize_s": 0.07, "connect_s": 0.002, "send_s": 0.001})
	if err := os.WriteFile(filepath.Join(dir, "rank3.error"), []byte("TimeoutError: the store at 10.0.0.1:29500 did not answer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := ReadExchange(runDir)
	if err != nil {
		t.Fatal(err)
	}
	if s := x.Sent[2]; s == nil || s.Bytes != 2085 || len(x.Sent) != 1 {
		t.Errorf("sent %+v", x.Sent)
	}
	if !slices.Equal(x.ErrorRanks, []int{3}) || len(x.Errors) != 1 || x.Errors[0] != "rank 3: TimeoutError: the store at 10.0.0.1:29500 did not answer" {
		t.Errorf("errors %v %q", x.ErrorRanks, x.Errors)
	}
	// a run without an exchange has an empty one
	if x, err := ReadExchange(t.TempDir()); err != nil || len(x.Messages)+len(x.Errors)+len(x.Sent) > 0 || x.Collected != nil {
		t.Errorf("%+v, %v", x, err)
	}
}

func TestMultiNode(t *testing.T) {
	for args, want := range map[string]bool{
		"--nnodes 2 --nproc-per-node 8 train.py": true,
		"--nnodes=2 train.py":                    true,
		"--nnodes 1:4 train.py":                  true,
		"--nnodes 1 train.py --nnodes 4":         false,
		"--nproc_per_node 8 train.py":            false,
		"--nnodes 1:1 --rdzv-backend c10d t.py":  false,
	} {
		if got := MultiNode(strings.Fields(args)); got != want {
			t.Errorf("%s: %v, want %v", args, got, want)
		}
	}
}
