package run

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/jobdir"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
)

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no local port for torchrun's rendezvous: %v", err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func readJobReport(t *testing.T, dir string) *jobdir.Report {
	t.Helper()
	var rep jobdir.Report
	readJSON(t, filepath.Join(dir, jobdir.ReportJSON), &rep)
	if _, err := os.Stat(filepath.Join(dir, jobdir.ReportText)); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// Two torchrun "nodes" of two gloo ranks each on this machine, one rank
// slowed on purpose: its Dataset sleeps 60 ms per batch (data), or it
// runs 30 more 256x256 matmuls a step (compute: on a CPU-only trace that
// is host time, and the rank's own verdict is cpu-compute-bound). Node
// 0's job report names that rank, its node and the cause, and no other
// rank or node; each node keeps its program's stdout and exit status.
func TestJobTwoNodesNamesTheSlowRank(t *testing.T) {
	py := torchPython(t)
	torchrun := filepath.Join(filepath.Dir(py), "torchrun")
	if _, err := os.Stat(torchrun); err != nil {
		t.Skipf("no torchrun next to %s", py)
	}
	for _, c := range []struct {
		name    string
		slow    []string
		rank    int
		cause   string
		verdict diagnose.Class
	}{
		{"data", []string{"--slow-rank", "3", "--slow-ms", "60"}, 3, summary.CauseData, diagnose.Input},
		{"compute", []string{"--slow-rank", "2", "--slow-compute", "30"}, 2, summary.CauseHost, diagnose.CPUCompute},
	} {
		t.Run(c.name, func(t *testing.T) {
			jobDir := filepath.Join(t.TempDir(), "job")
			port := freePort(t)
			var res [2]result
			var wg sync.WaitGroup
			for n := range 2 {
				wg.Go(func() {
					res[n] = bn(t, runOpts{}, append([]string{"--job-dir", jobDir, "--job-wait", "5m", "--skip-first", "2", "--warmup", "1", "--active", "4", "--",
						torchrun, "--nnodes", "2", "--node-rank", fmt.Sprint(n), "--nproc-per-node", "2", "--master-addr", "127.0.0.1", "--master-port", port,
						ex(t, "ddp_slow_data.py"), "--steps", "10"}, c.slow...)...)
				})
			}
			wg.Wait()
			checkTwoNodes(t, jobDir, res, c.rank, c.cause, c.verdict)
		})
	}
}

func checkTwoNodes(t *testing.T, jobDir string, res [2]result, slow int, cause string, verdict diagnose.Class) {
	t.Helper()
	own := regexp.MustCompile(`^(rank [0-3] of 4 done\n)*$`)
	for n, r := range res {
		if r.code != 0 {
			t.Fatalf("node %d: exit %d\n%s", n, r.code, r.stderr)
		}
		if !own.MatchString(r.stdout) || strings.Count(r.stdout, "\n") != 2 {
			t.Errorf("node %d: stdout %q, want its two ranks' lines only", n, r.stdout)
		}
	}
	rep := readJobReport(t, jobDir)
	if !rep.Complete || len(rep.MissingNodes) > 0 || len(rep.Nodes) != 2 || rep.Key.Nodes != 2 || rep.Key.WorldSize != 4 {
		t.Fatalf("complete %v, missing %v, nodes %+v, key %+v", rep.Complete, rep.MissingNodes, rep.Nodes, rep.Key)
	}
	if rep.Job == nil || len(rep.Job.Missing) > 0 || rep.Job.Ranks != 4 {
		t.Fatalf("ranks: %+v", rep.Job)
	}
	if s := rep.Job.Stragglers; len(s) != 1 || s[0].Rank != slow || s[0].Cause != cause {
		t.Errorf("stragglers %+v, want rank %d (%s) alone\n%s", s, slow, cause, res[0].stderr)
	}
	for _, r := range rep.Job.PerRank {
		if r.Rank == slow && r.Verdict != verdict {
			t.Errorf("rank %d's own verdict %s, want %s", slow, r.Verdict, verdict)
		}
	}
	for _, node := range rep.Nodes {
		want := []int(nil)
		if node.Node == slow/2 {
			want = []int{slow}
		}
		if !slices.Equal(node.Stragglers, want) || !slices.Equal(node.Summarised, []int{2 * node.Node, 2*node.Node + 1}) {
			t.Errorf("node %d: stragglers %v (want %v), summarised %v", node.Node, node.Stragglers, want, node.Summarised)
		}
		if node.RunDir != res[node.Node].dir {
			t.Errorf("node %d: run dir %q, want %q", node.Node, node.RunDir, res[node.Node].dir)
		}
	}
	if s := rep.Series; s == nil || len(s.Ranks) != 4 || len(s.Steps) == 0 {
		t.Errorf("series %+v", s)
	}
	if want := fmt.Sprintf("straggler: rank %d on node %d, cause %s", slow, slow/2, cause); !strings.Contains(res[0].stderr, want) {
		t.Errorf("node 0's stderr lacks %q:\n%s", want, res[0].stderr)
	}
	if strings.Contains(res[1].stderr, "\nJob: ") {
		t.Errorf("node 1 printed a job report:\n%s", res[1].stderr)
	}
}

// Node 0 of a two-node job whose node 1 never reports: after its bounded
// wait it writes the job report anyway, naming node 1 and its ranks, and
// exits with its program's status.
func TestJobNodeThatNeverReports(t *testing.T) {
	py := torchPython(t)
	for k, v := range map[string]string{"RANK": "0", "WORLD_SIZE": "2", "GROUP_RANK": "0", "GROUP_WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "t1"} {
		t.Setenv(k, v)
	}
	jobDir := filepath.Join(t.TempDir(), "job")
	r := bn(t, runOpts{}, append(small(py), "--job-dir", jobDir, "--job-wait", "300ms", ex(t, "exit3.py"))...)
	if r.code != 3 || r.stdout != "exiting with 3\n" {
		t.Fatalf("exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	rep := readJobReport(t, jobDir)
	if rep.Complete || !slices.Equal(rep.MissingNodes, []int{1}) || len(rep.Nodes) != 1 || rep.Nodes[0].ExitCode != 3 {
		t.Fatalf("complete %v, missing nodes %v, nodes %+v", rep.Complete, rep.MissingNodes, rep.Nodes)
	}
	if rep.Job == nil || len(rep.Job.Missing) != 1 || rep.Job.Missing[0] != (summary.Range{From: 1, To: 1}) {
		t.Fatalf("ranks %+v", rep.Job)
	}
	if !strings.Contains(r.stderr, "node 1 NEVER REPORTED") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
