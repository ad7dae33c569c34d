package run

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/jobdir"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
	"github.com/bottleneck-dev/bottleneck/internal/units"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

// defaultJobWait bounds how long node 0 waits for the other nodes'
// summaries (docs/distributed.md): they end their programs together
// (the job's last collective) and each analyses only its own ranks, so
// a node later than this has died or hangs.
const defaultJobWait = 2 * time.Minute

// writeJob is the end of a run with --job-dir, after the node's own
// report: the node's ranks' summaries and its record go into the job
// directory and, on node 0, the job's report is written once the other
// nodes have reported or the wait is over. The program has ended: this
// never changes its exit status, and a failure is a warning on w.
func writeJob(o *Options, res *runner.Result) {
	warn := func(format string, args ...any) {
		fmt.Fprintf(textsafe.Writer(o.IO.ErrOut), "bottleneck: job: "+format+"\n", args...)
	}
	host, _ := os.Hostname()
	run, err := rundir.Read(res.RunDir)
	if err != nil {
		warn("%v", err)
		run = nil
	}
	var launcher []string
	if o.Launcher && len(o.Args) > 1 {
		launcher = o.Args[1:]
	}
	id := jobdir.Identify(run, launcher, host)
	runDir, _ := filepath.Abs(res.RunDir)
	rec := &jobdir.NodeRecord{Tool: version.Version, Node: id.Node, Host: host, Key: id.Key, RunDir: runDir, ExitCode: res.ExitCode}
	started := time.Now()
	if res.Manifest != nil && !res.Manifest.Started.IsZero() {
		started = res.Manifest.Started
	}
	rec.Started = started
	var sums []*summary.Summary
	if run != nil {
		rec.Ranks = jobdir.ProfiledRanks(run)
		if len(run.Traces) > 0 {
			s, err := driver.Summarize(o.IO, []string{res.RunDir}, host, 0)
			if err != nil {
				rec.Problems = append(rec.Problems, err.Error())
			} else {
				for _, f := range s.Failures {
					rec.Problems = append(rec.Problems, f.Path+": "+f.Error)
				}
				var dropped []string
				sums, dropped = jobdir.OneSummaryPerRank(s.Summaries)
				rec.Problems = append(rec.Problems, dropped...)
			}
		}
		have := map[int]bool{}
		for _, s := range sums {
			have[s.Rank] = true
		}
		for _, r := range rec.Ranks {
			if !have[r] {
				rec.Problems = append(rec.Problems, fmt.Sprintf("rank %d: no trace summarised (see its run directory's report)", r))
			}
		}
	}
	if id.Node < 0 {
		warn("this node's rank is unknown (no GROUP_RANK from torchrun, no --node-rank): its summaries go to the job directory, but no node here writes the job report")
	}
	rec.Written = time.Now()
	nodeDir, err := jobdir.WriteNode(o.JobDir, rec, sums)
	if err != nil {
		warn("could not write this node's summaries into %s: %v", o.JobDir, err)
		return
	}
	if id.Node != 0 {
		if id.Node > 0 && o.Report != "none" {
			warn("node %d: the summaries of ranks %s are in %s; node 0 writes the job report, %s", id.Node,
				jobdir.Ranges(rec.Summarised), nodeDir, filepath.Join(o.JobDir, jobdir.ReportText))
		}
		return
	}
	// a signal during the wait ends it: the report is written with the
	// nodes present (flushOnSignal gives it reportFlush)
	stop := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sig)
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sig:
			close(stop)
		case <-done:
		}
	}()
	rep, err := jobdir.Collect(jobdir.CollectOptions{Dir: o.JobDir, Self: id, Started: started, Wait: o.JobWait, Poll: o.jobPoll, Stop: stop})
	if err != nil {
		warn("%v", err)
		return
	}
	writeJobReport(o, rep, warn)
}

// bottleneckExe is the binary each rank runs to summarise its trace in
// the store exchange (tests, which run the command in-process, point it
// at a built bottleneck).
var bottleneckExe = os.Executable

// jobExchange is the agent's job exchange for this run: on for a
// launcher run of several nodes (--nnodes N > 1, or MIN:MAX with MAX >
// 1) without --job-dir, nil otherwise (docs/distributed.md, "Live runs
// across nodes without a shared directory").
func (o *Options) jobExchange() *rundir.JobExchange {
	if o.JobDir != "" || !o.Launcher || len(o.Args) < 2 || !jobdir.MultiNode(o.Args[1:]) {
		return nil
	}
	exe, err := bottleneckExe()
	if err != nil {
		fmt.Fprintf(textsafe.Writer(o.IO.ErrOut), "bottleneck: job: no job report: this binary's path is unknown (%v); use --job-dir\n", err)
		return nil
	}
	return &rundir.JobExchange{Exe: exe, WaitS: o.JobWait.Seconds()}
}

// writeJobOverStore is the end of a multi-node run without --job-dir,
// after the node's own report. The ranks' summaries travelled over
// torchrun's store while the program ended (the agent's
// _bottleneck_jobexchange.py); rank 0 left them in this run directory on
// node 0, which lays them out as a job directory (RUN/job) and writes the
// job's report there. Other nodes only say what went wrong. As with
// writeJob, the program's exit status never changes.
func writeJobOverStore(o *Options, res *runner.Result) {
	warn := func(format string, args ...any) {
		fmt.Fprintf(textsafe.Writer(o.IO.ErrOut), "bottleneck: job: "+format+"\n", args...)
	}
	x, err := jobdir.ReadExchange(res.RunDir)
	if err != nil {
		warn("%v", err)
		return
	}
	for _, e := range x.Errors {
		warn("%s", e)
	}
	for _, p := range x.Problems {
		warn("%s", p)
	}
	host, _ := os.Hostname()
	run, err := rundir.Read(res.RunDir)
	if err != nil {
		warn("%v", err)
		run = nil
	}
	id := jobdir.Identify(run, o.Args[1:], host)
	if id.Node != 0 {
		if id.Node > 0 && o.Report != "none" && run != nil {
			var sent, silent []int
			for _, r := range jobdir.ProfiledRanks(run) {
				if x.Sent[r] != nil {
					sent = append(sent, r)
				} else if !slices.Contains(x.ErrorRanks, r) {
					silent = append(silent, r)
				}
			}
			if len(sent) > 0 {
				warn("node %d: %s sent %s summaries to node 0 over torchrun's store; node 0 writes the job report", id.Node, rankList(sent), its(sent))
			}
			if len(silent) > 0 {
				warn("node %d: %s sent nothing: the process ended before the exchange (killed?); node 0's job report lists the missing ranks", id.Node, rankList(silent))
			}
		}
		return
	}
	if len(x.Messages) == 0 && x.Collected == nil {
		// rank 0 never got to collect (the store was not torchrun's, the
		// program died before its ranks' exit handlers): a report of no
		// rank would say nothing the warnings above do not
		warn("no job report: no rank's summary reached rank 0 over torchrun's store (give --job-dir on a shared filesystem to collect them without it)")
		return
	}
	runDir, _ := filepath.Abs(res.RunDir)
	started := time.Now()
	if res.Manifest != nil && !res.Manifest.Started.IsZero() {
		started = res.Manifest.Started
	}
	self := &jobdir.NodeRecord{Tool: version.Version, Node: 0, Host: host, Key: id.Key, RunDir: runDir, ExitCode: res.ExitCode, Started: started}
	if run != nil {
		self.Ranks = jobdir.ProfiledRanks(run)
	}
	rep, err := jobdir.CollectExchange(x, self, id, filepath.Join(res.RunDir, jobdir.JobDirName))
	if err != nil {
		warn("%v", err)
		return
	}
	writeJobReport(o, rep, warn)
}

// writeJobBrief is the job report's verdict for the terminal.
func writeJobBrief(w io.Writer, rep *jobdir.Report) {
	ranks := 0
	for _, n := range rep.Nodes {
		ranks += len(n.Summarised)
	}
	nodes := fmt.Sprint(len(rep.Nodes))
	if rep.Key.Nodes > 0 {
		nodes += fmt.Sprintf(" of %d", rep.Key.Nodes)
	}
	world := ""
	if rep.Key.WorldSize > 0 {
		world = fmt.Sprintf(" of %d", rep.Key.WorldSize)
	}
	fmt.Fprintf(w, "\nJob: %s nodes, %d%s ranks reported", nodes, ranks, world)
	if j := rep.Job; j != nil {
		v := j.Diagnosis.Verdict
		fmt.Fprintf(w, ": %s (%s; confidence %s)\n", strings.ToUpper(string(v.Primary)), v.Detail, v.Confidence)
		nodeOf := map[int]int{}
		for _, n := range rep.Nodes {
			for _, r := range n.Summarised {
				nodeOf[r] = n.Node
			}
		}
		for _, s := range j.Stragglers {
			fmt.Fprintf(w, "  straggler: rank %d on node %d, cause %s, %s (%.0f%%) per step over the median rank\n",
				s.Rank, nodeOf[s.Rank], jobdir.StragglerCause(j, s), units.Duration(s.ExcessUs), s.ExcessPct)
		}
	} else {
		fmt.Fprintf(w, ": no rank summary arrived\n")
	}
	for _, n := range rep.MissingNodes {
		fmt.Fprintf(w, "  node %d NEVER REPORTED (waited %s)\n", n, units.Seconds(rep.WaitedS))
	}
	if j := rep.Job; j != nil && len(j.Missing) > 0 && rep.Route == jobdir.RouteStore {
		word := "ranks"
		if len(j.Missing) == 1 && j.Missing[0].From == j.Missing[0].To {
			word = "rank"
		}
		fmt.Fprintf(w, "  %s %s NEVER REPORTED (rank 0 waited %s)\n", word, jobdir.RangeList(j.Missing), units.Seconds(rep.WaitedS))
	}
	fmt.Fprintf(w, "job report: %s\n", filepath.Join(rep.Dir, jobdir.ReportText))
}

// rankList is "rank 3" or "ranks 2-3, 5".
func rankList(rs []int) string {
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d", rs[0])
	}
	return "ranks " + jobdir.Ranges(rs)
}

func its(rs []int) string {
	if len(rs) == 1 {
		return "its"
	}
	return "their"
}

// writeJobReport writes the job's report and its brief where --report
// says.
func writeJobReport(o *Options, rep *jobdir.Report, warn func(string, ...any)) {
	if _, err := jobdir.Write(rep); err != nil {
		warn("could not write the job report: %v", err)
		return
	}
	switch o.Report {
	case "stderr":
		writeJobBrief(textsafe.Writer(o.IO.ErrOut), rep)
	case "stdout":
		writeJobBrief(textsafe.Writer(o.IO.Out), rep)
	}
}
