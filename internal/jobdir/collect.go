package jobdir

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
)

// ReportFormat names the job report's JSON format.
const ReportFormat = "bottleneck.job-run-report/1"

// StaleSlack is how long before node 0's start a record may have been
// written and still be this job's: clocks of the nodes differ by this
// much at most. A record written earlier is an earlier job's (the job
// directory was reused).
const StaleSlack = time.Minute

// DefaultPoll is how often node 0 looks for the other nodes' records.
const DefaultPoll = 200 * time.Millisecond

// CollectOptions say where and how long node 0 waits.
type CollectOptions struct {
	Dir  string
	Self Identity
	// Started is when node 0's bottleneck started.
	Started time.Time
	// Wait bounds the wait for the other nodes; Poll is how often it looks (0: DefaultPoll).
	Wait time.Duration
	Poll time.Duration
	// Stop, when closed, ends the wait at once (a signal).
	Stop <-chan struct{}
}

// Report is the job's report: the nodes, who never reported, and the
// merge of every rank's summary (summary.Report).
type Report struct {
	Format string `json:"format"`
	Dir    string `json:"job_dir"`
	// Route is how the summaries came: "" through a shared job directory,
	// RouteStore over torchrun's store (node 0 laid them out in Dir).
	Route string `json:"route,omitempty"`
	Key   Key    `json:"job"`
	// WaitedS is how long node 0 waited for the other nodes.
	WaitedS float64 `json:"waited_s"`
	// Complete is true when every expected node reported before the wait ran out.
	Complete bool      `json:"complete"`
	Nodes    []NodeRow `json:"nodes"`
	// MissingNodes are the node ranks below the number of nodes that never wrote a record.
	MissingNodes []int `json:"missing_nodes,omitempty"`
	// Ignored are records set aside (another job's, an earlier run's), one line each.
	Ignored []string `json:"ignored,omitempty"`
	// Warnings are what could not be read or merged, one line each.
	Warnings []string `json:"warnings,omitempty"`
	// Job is the ranks' merge (nil when no summary arrived).
	Job *summary.Report `json:"ranks"`
	// Series are every rank's step times aligned by step number (up to MaxSeriesRanks ranks).
	Series *Series `json:"series,omitempty"`
}

// NodeRow is one node that reported.
type NodeRow struct {
	Node       int      `json:"node"`
	Host       string   `json:"host,omitempty"`
	RunDir     string   `json:"run_dir"`
	ExitCode   int      `json:"exit_code"`
	Ranks      []int    `json:"ranks"`
	Summarised []int    `json:"summarised"`
	Problems   []string `json:"problems,omitempty"`
	// StepUs is the mean of its ranks' mean steps; 0 without summaries.
	StepUs float64 `json:"step_us"`
	// Stragglers are its ranks the job report flags.
	Stragglers []int `json:"stragglers,omitempty"`
}

// MaxSeriesRanks bounds the per-rank series in the JSON report: beyond,
// the summaries in the job directory hold them.
const MaxSeriesRanks = 1024

// Series are step times by rank, aligned by step number; null where a
// rank has no such step.
type Series struct {
	Steps []int        `json:"steps"`
	Ranks []RankSeries `json:"ranks"`
}

// RankSeries is one rank's step times, µs.
type RankSeries struct {
	Rank   int      `json:"rank"`
	StepUs []*int64 `json:"step_us"`
}

// Collect waits, at most o.Wait, until every node of the job has written
// its record into o.Dir (every node when their number is known, else
// every rank of the world), then merges the summaries of those that did.
// A node that never reports is named in the report, which is returned
// anyway; Collect itself fails only when the directory cannot be read.
func Collect(o CollectOptions) (*Report, error) {
	poll := cmp.Or(o.Poll, DefaultPoll)
	start := time.Now()
	deadline := start.Add(o.Wait)
	var recs []found
	var ignored []string
	var key Key
	complete := false
wait:
	for {
		var err error
		recs, ignored, err = scan(o)
		if err != nil {
			return nil, err
		}
		key = effectiveKey(o.Self.Key, recs)
		if complete = isComplete(recs, key); complete || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-time.After(min(poll, time.Until(deadline))):
		case <-o.Stop:
			break wait
		}
	}
	rep := &Report{Format: ReportFormat, Dir: o.Dir, Key: key, WaitedS: time.Since(start).Seconds(), Complete: complete, Ignored: ignored, Nodes: []NodeRow{}}
	if key.Nodes == 0 && key.WorldSize == 0 {
		rep.Warnings = append(rep.Warnings, "the number of nodes and ranks is unknown (no GROUP_WORLD_SIZE, WORLD_SIZE or --nnodes): merged the nodes present, without waiting")
	}
	have := map[int]bool{}
	for _, f := range recs {
		have[f.rec.Node] = true
	}
	for n := range key.Nodes {
		if !have[n] {
			rep.MissingNodes = append(rep.MissingNodes, n)
		}
	}
	merge(rep, recs)
	return rep, nil
}

type found struct {
	dir string
	rec *NodeRecord
}

// scan reads every node record in o.Dir, keeping the latest per node rank
// among those of this job.
func scan(o CollectOptions) ([]found, []string, error) {
	paths, err := filepath.Glob(filepath.Join(o.Dir, "*", NodeRecordName))
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(o.Dir); err != nil {
		return nil, nil, err
	}
	var ignored []string
	byNode := map[int]found{}
	var unknown []found
	for _, p := range paths {
		rec, err := ReadNode(p)
		if err != nil {
			ignored = append(ignored, err.Error())
			continue
		}
		if d := o.Self.Key.Mismatch(rec.Key); d != "" {
			ignored = append(ignored, fmt.Sprintf("%s: another job's (%s)", p, d))
			continue
		}
		if !o.Started.IsZero() && rec.Written.Before(o.Started.Add(-StaleSlack)) {
			ignored = append(ignored, fmt.Sprintf("%s: written %s, before this job's node 0 started (%s): an earlier run's",
				p, rec.Written.UTC().Format(time.RFC3339), o.Started.UTC().Format(time.RFC3339)))
			continue
		}
		f := found{filepath.Dir(p), rec}
		if rec.Node < 0 {
			unknown = append(unknown, f)
			continue
		}
		if old, dup := byNode[rec.Node]; dup {
			keep, drop := old, f
			if f.rec.Written.After(old.rec.Written) {
				keep, drop = f, old
			}
			byNode[rec.Node] = keep
			ignored = append(ignored, fmt.Sprintf("%s: node %d again, older than %s", filepath.Join(drop.dir, NodeRecordName), rec.Node, keep.dir))
			continue
		}
		byNode[rec.Node] = f
	}
	out := make([]found, 0, len(byNode)+len(unknown))
	for _, f := range byNode {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b found) int { return cmp.Compare(a.rec.Node, b.rec.Node) })
	slices.SortFunc(unknown, func(a, b found) int { return cmp.Compare(a.dir, b.dir) })
	return append(out, unknown...), ignored, nil
}

// effectiveKey fills what self does not know from the records.
func effectiveKey(self Key, recs []found) Key {
	k := self
	for _, f := range recs {
		k.RunID = cmp.Or(k.RunID, f.rec.Key.RunID)
		k.Master = cmp.Or(k.Master, f.rec.Key.Master)
		k.WorldSize = cmp.Or(k.WorldSize, f.rec.Key.WorldSize)
		k.Nodes = cmp.Or(k.Nodes, f.rec.Key.Nodes)
	}
	return k
}

// isComplete: every node has reported when their number is known; else
// the nodes' profiled ranks cover the world; else (nothing is known)
// there is nothing to wait for.
func isComplete(recs []found, k Key) bool {
	switch {
	case k.Nodes > 0:
		have := map[int]bool{}
		for _, f := range recs {
			have[f.rec.Node] = true
		}
		for n := range k.Nodes {
			if !have[n] {
				return false
			}
		}
		return true
	case k.WorldSize > 0:
		have := map[int]bool{}
		for _, f := range recs {
			for _, r := range f.rec.Ranks {
				have[r] = true
			}
		}
		for r := range k.WorldSize {
			if !have[r] {
				return false
			}
		}
		return true
	}
	return true
}

// merge reads the summaries the records list and fills rep's nodes, the
// ranks' merge and the series.
func merge(rep *Report, recs []found) {
	job := summary.NewJob()
	nodeOf := map[int]int{} // rank -> index in rep.Nodes
	series := map[int]*summary.Steps{}
	for _, f := range recs {
		r := f.rec
		row := NodeRow{Node: r.Node, Host: r.Host, RunDir: r.RunDir, ExitCode: r.ExitCode, Ranks: r.Ranks, Summarised: []int{}, Problems: r.Problems}
		for _, rank := range r.Summarised {
			path := filepath.Join(f.dir, SummaryName(rank))
			sums, err := summary.ReadFile(path)
			if err != nil {
				rep.Warnings = append(rep.Warnings, err.Error())
				continue
			}
			for _, s := range sums {
				if err := job.Add(s); err != nil {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: %v", path, err))
					continue
				}
				row.Summarised = append(row.Summarised, s.Rank)
				nodeOf[s.Rank] = len(rep.Nodes)
				if len(series) < MaxSeriesRanks {
					series[s.Rank] = &s.Steps
				}
			}
		}
		rep.Nodes = append(rep.Nodes, row)
	}
	if job.Ranks() == 0 {
		return
	}
	rep.Job = job.Report(rep.Key.WorldSize)
	sums := make([]float64, len(rep.Nodes))
	counts := make([]int, len(rep.Nodes))
	for _, r := range rep.Job.PerRank {
		i := nodeOf[r.Rank]
		sums[i] += r.StepUs
		counts[i]++
	}
	for i := range rep.Nodes {
		if counts[i] > 0 {
			rep.Nodes[i].StepUs = sums[i] / float64(counts[i])
		}
	}
	for _, s := range rep.Job.Stragglers {
		i := nodeOf[s.Rank]
		rep.Nodes[i].Stragglers = append(rep.Nodes[i].Stragglers, s.Rank)
	}
	if job.Ranks() <= MaxSeriesRanks {
		rep.Series = alignSeries(series)
	}
}

// alignSeries puts every rank's step times on the union of step numbers.
func alignSeries(by map[int]*summary.Steps) *Series {
	var nums []int
	seen := map[int]bool{}
	for _, st := range by {
		for _, n := range st.Num {
			if !seen[n] {
				seen[n] = true
				nums = append(nums, n)
			}
		}
	}
	slices.Sort(nums)
	col := make(map[int]int, len(nums))
	for i, n := range nums {
		col[n] = i
	}
	s := &Series{Steps: nums}
	if s.Steps == nil {
		s.Steps = []int{}
	}
	for rank, st := range by {
		rs := RankSeries{Rank: rank, StepUs: make([]*int64, len(nums))}
		for i, n := range st.Num {
			v := st.StepUs[i]
			rs.StepUs[col[n]] = &v
		}
		s.Ranks = append(s.Ranks, rs)
	}
	slices.SortFunc(s.Ranks, func(a, b RankSeries) int { return cmp.Compare(a.Rank, b.Rank) })
	return s
}

// Write writes the report as job-report.txt and job-report.json into
// its job directory and returns the text.
func Write(rep *Report) (string, error) {
	var txt bytes.Buffer
	if err := WriteText(&txt, rep); err != nil {
		return "", err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return txt.String(), err
	}
	if err := atomicfile.Write(filepath.Join(rep.Dir, ReportText), txt.Bytes()); err != nil {
		return txt.String(), err
	}
	return txt.String(), atomicfile.Write(filepath.Join(rep.Dir, ReportJSON), append(js, '\n'))
}
