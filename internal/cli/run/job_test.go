package run

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/jobdir"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
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

// The same job without a shared directory, on a c10d rendezvous: each
// rank's summary travels over torchrun's store to rank 0, and node 0's
// run directory holds the job report (RUN/job), which names the slow
// rank and its cause, and no other.
func TestJobOverStoreNamesTheSlowRank(t *testing.T) {
	torchrun := torchrunFor(t)
	useBottleneckBinary(t)
	port := freePort(t)
	var res [2]result
	var wg sync.WaitGroup
	for n := range 2 {
		wg.Go(func() {
			res[n] = bn(t, runOpts{}, "--job-wait", "5m", "--skip-first", "2", "--warmup", "1", "--active", "4", "--",
				torchrun, "--nnodes", "2", "--node-rank", fmt.Sprint(n), "--nproc-per-node", "2",
				"--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:"+port, "--rdzv-id", "job37",
				ex(t, "ddp_slow_data.py"), "--steps", "10", "--slow-rank", "3", "--slow-ms", "60")
		})
	}
	wg.Wait()
	res = byGroupRank(t, res)
	checkTwoNodes(t, filepath.Join(res[0].dir, jobdir.JobDirName), res, 3, summary.CauseData, diagnose.Input)
	rep := readJobReport(t, filepath.Join(res[0].dir, jobdir.JobDirName))
	if rep.Route != jobdir.RouteStore || rep.Key.RunID != "job37" {
		t.Errorf("route %q, key %+v", rep.Route, rep.Key)
	}
	if _, err := os.Stat(filepath.Join(res[1].dir, jobdir.JobDirName)); !os.IsNotExist(err) {
		t.Errorf("node 1 laid out a job directory: %v", err)
	}
}

// A rank that dies after its steps (SIGKILL: no atexit, no summary)
// never reports: rank 0 waits --job-wait for it, then node 0's job report
// is written with the three ranks that did, naming rank 3 as missing.
// (torchrun on node 0 then waits in its own exit barrier for node 1's
// agent, which failed, for 300 s: the test stops it, as --timeout or a
// Ctrl-C would, once rank 0 has collected.)
func TestJobOverStoreRankThatNeverReports(t *testing.T) {
	torchrun := torchrunFor(t)
	useBottleneckBinary(t)
	port := freePort(t)
	var res [2]result
	var sigs [2]chan os.Signal
	var dirs [2]string
	var wg sync.WaitGroup
	for n := range 2 {
		sigs[n] = make(chan os.Signal, 1)
		dirs[n] = filepath.Join(t.TempDir(), "run")
		wg.Go(func() {
			res[n] = bn(t, runOpts{signals: sigs[n]}, "-o", dirs[n], "--job-wait", "15s", "--timeout", "10m", "--skip-first", "2", "--warmup", "1", "--active", "4", "--",
				torchrun, "--nnodes", "2", "--node-rank", fmt.Sprint(n), "--nproc-per-node", "2",
				"--rdzv-backend", "c10d", "--rdzv-endpoint", "127.0.0.1:"+port,
				ex(t, "ddp_slow_data.py"), "--steps", "10", "--kill-rank", "3", "--kill-after", "8")
		})
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			for n, d := range dirs {
				if _, err := os.Stat(filepath.Join(d, jobdir.ExchangeDirName, jobdir.CollectedName)); err == nil {
					sigs[n] <- syscall.SIGTERM
					return
				}
			}
			select {
			case <-time.After(200 * time.Millisecond):
			case <-t.Context().Done():
				return
			}
		}
	}()
	wg.Wait()
	<-stopped
	for n := range res {
		res[n].dir = dirs[n]
	}
	res = byGroupRank(t, res)
	rep := readJobReport(t, filepath.Join(res[0].dir, jobdir.JobDirName))
	if rep.Complete || rep.Route != jobdir.RouteStore || len(rep.Nodes) != 2 || len(rep.MissingNodes) > 0 {
		t.Fatalf("complete %v, route %q, nodes %+v, missing nodes %v", rep.Complete, rep.Route, rep.Nodes, rep.MissingNodes)
	}
	if rep.Job == nil || rep.Job.Ranks != 3 || !slices.Equal(rep.Job.Missing, []summary.Range{{From: 3, To: 3}}) {
		t.Fatalf("ranks %+v\n%s", rep.Job, res[0].stderr)
	}
	if !slices.Equal(rep.Nodes[1].Summarised, []int{2}) || rep.Nodes[1].ExitCode != -1 {
		t.Errorf("node 1: %+v", rep.Nodes[1])
	}
	// rank 0 waits the whole --job-wait, unless torchrun stops it first:
	// when the node whose torchrun hosted the c10d rendezvous fails, the
	// other agents fail too and stop their workers (SIGTERM), and rank 0
	// then writes what it has
	x, err := jobdir.ReadExchange(res[0].dir)
	if err != nil || x.Collected == nil {
		t.Fatalf("node 0's exchange: %v, %+v", err, x)
	}
	if c := x.Collected; !(c.Ended == "wait over" && c.WaitedS >= 15 || c.Ended == "signal 15") {
		t.Errorf("rank 0's wait: ended %q after %.1f s, want the whole --job-wait or torchrun's SIGTERM", c.Ended, c.WaitedS)
	}
	if !strings.Contains(res[0].stderr, "rank 3 NEVER REPORTED") {
		t.Errorf("node 0's stderr:\n%s", res[0].stderr)
	}
	txt, err := os.ReadFile(filepath.Join(res[0].dir, jobdir.JobDirName, jobdir.ReportText))
	if err != nil || !strings.Contains(string(txt), "MISSING: 1 of 4 ranks sent no summary: 3") {
		t.Errorf("job report (%v):\n%s", err, txt)
	}
	if res[1].code == 0 || !strings.Contains(res[1].stderr, "node 1: rank 2 sent its summaries") || !strings.Contains(res[1].stderr, "node 1: rank 3 sent nothing") {
		t.Errorf("node 1: exit %d (its rank 3 was killed)\n%s", res[1].code, res[1].stderr)
	}
}

// A one-node launcher run, or a run with --job-dir, has no store exchange;
// several nodes without --job-dir have one.
func TestJobExchangeOnlyForSeveralNodes(t *testing.T) {
	for _, c := range []struct {
		args   []string
		jobDir string
		want   bool
	}{
		{[]string{"torchrun", "--nnodes", "2", "--nproc-per-node", "2", "train.py", "--nnodes", "1"}, "", true},
		{[]string{"torchrun", "--nnodes=1:4", "train.py"}, "", true},
		{[]string{"torchrun", "--nnodes", "1", "--nproc-per-node", "4", "train.py", "--nnodes", "8"}, "", false},
		{[]string{"torchrun", "--nproc-per-node", "4", "train.py"}, "", false},
		{[]string{"torchrun", "--nnodes", "2", "train.py"}, "/shared/job", false},
	} {
		o := &Options{Launcher: true, Args: c.args, JobDir: c.jobDir, JobWait: time.Minute}
		if got := o.jobExchange() != nil; got != c.want {
			t.Errorf("%v (job dir %q): exchange %v, want %v", c.args, c.jobDir, got, c.want)
		}
	}
}

// Where torchrun serves its workers no store (TORCHELASTIC_USE_AGENT_STORE
// not True), every rank leaves its error and none reaches rank 0: node 0
// shows the errors and writes no job report of no rank.
func TestJobOverStoreWithoutAgentStore(t *testing.T) {
	runDir := t.TempDir()
	exch := filepath.Join(runDir, jobdir.ExchangeDirName)
	if err := os.MkdirAll(exch, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, r := range []int{0, 1} {
		msg := "RuntimeError: torchrun serves its workers no store of its own (TORCHELASTIC_USE_AGENT_STORE=False): nothing outlives the ranks to carry their summaries; use --job-dir\n"
		if err := os.WriteFile(filepath.Join(exch, fmt.Sprintf("rank%d.error", r)), []byte(msg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ios, _, _, _ := iostreams.Test()
	var errOut syncBuf
	ios.ErrOut = &errOut
	o := &Options{IO: ios, Launcher: true, Report: "stderr", Args: []string{"torchrun", "--nnodes", "2", "--node-rank", "0", "--nproc-per-node", "2", "train.py"}}
	writeJobOverStore(o, &runner.Result{RunDir: runDir})
	got := errOut.String()
	for _, want := range []string{"bottleneck: job: rank 0: RuntimeError: torchrun serves", "bottleneck: job: rank 1: RuntimeError", "no job report: no rank's summary reached rank 0"} {
		if !strings.Contains(got, want) {
			t.Errorf("stderr lacks %q:\n%s", want, got)
		}
	}
	if _, err := os.Stat(filepath.Join(runDir, jobdir.JobDirName)); !os.IsNotExist(err) {
		t.Errorf("a job directory of no rank: %v", err)
	}
}

func torchrunFor(t *testing.T) string {
	t.Helper()
	py := torchPython(t)
	torchrun := filepath.Join(filepath.Dir(py), "torchrun")
	if _, err := os.Stat(torchrun); err != nil {
		t.Skipf("no torchrun next to %s", py)
	}
	return torchrun
}

var (
	bottleneckBinOnce sync.Once
	bottleneckBin     string
	bottleneckBinErr  error
)

// useBottleneckBinary points the store exchange at a built bottleneck for
// the test: the command runs in-process here, and the ranks run the
// binary to summarise their traces.
func useBottleneckBinary(t *testing.T) {
	t.Helper()
	bottleneckBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bottleneck-bin-")
		if err != nil {
			bottleneckBinErr = err
			return
		}
		bottleneckBin = filepath.Join(dir, "bottleneck")
		if out, err := exec.Command("go", "build", "-o", bottleneckBin, "github.com/bottleneck-dev/bottleneck/cmd/bottleneck").CombinedOutput(); err != nil {
			bottleneckBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if bottleneckBinErr != nil {
		t.Fatal(bottleneckBinErr)
	}
	old := bottleneckExe
	bottleneckExe = func() (string, error) { return bottleneckBin, nil }
	t.Cleanup(func() { bottleneckExe = old })
}

// byGroupRank orders two nodes' results by the node rank the c10d
// rendezvous gave them (GROUP_RANK in their ranks' environment), not the
// order they were started in.
func byGroupRank(t *testing.T, res [2]result) [2]result {
	t.Helper()
	run, err := rundir.Read(res[0].dir)
	if err != nil {
		t.Fatal(err)
	}
	if id := jobdir.Identify(run, nil, ""); id.Node == 1 {
		res[0], res[1] = res[1], res[0]
	} else if id.Node != 0 {
		t.Fatalf("%s: node rank %d", res[0].dir, id.Node)
	}
	return res
}

func checkTwoNodes(t *testing.T, jobDir string, res [2]result, slow int, cause string, verdict diagnose.Class) {
	t.Helper()
	// Two ranks print to one pipe: a line can reach it in two writes, its
	// text and its newline, between the other rank's (a CI run: "rank 1 of
	// 4 donerank 0 of 4 done\n\n"), so the lines are counted, not matched
	// whole.
	own := regexp.MustCompile(`rank [0-3] of 4 done`)
	for n, r := range res {
		if r.code != 0 {
			t.Fatalf("node %d: exit %d\n%s", n, r.code, r.stderr)
		}
		rest := strings.ReplaceAll(own.ReplaceAllString(r.stdout, ""), "\n", "")
		if len(own.FindAllString(r.stdout, -1)) != 2 || strings.Count(r.stdout, "\n") != 2 || rest != "" {
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
