package jobdir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/summary"
)

// The job exchange over torchrun's store (docs/distributed.md, "Live
// runs across nodes without a shared directory"): in a multi-node run
// without --job-dir, each rank's agent summarises its own trace when its
// run ends and leaves the summary in the TCPStore that torchrun's agent
// on node rank 0 serves its workers; global rank 0 reads them, as they
// arrive, into its run directory:
//
//	RUN/exchange/received/rank<N>.json  rank N's message (ExchangeFormat)
//	RUN/exchange/collected.json         rank 0's record of its wait, written last
//	RUN/exchange/rank<N>.sent           rank N sent its message (ExchangeSent), on its node
//	RUN/exchange/rank<N>.error          rank N's exchange failed here, and why
//
// The agent's _bottleneck_jobexchange.py writes them; the names are these.
const (
	ExchangeDirName  = "exchange"
	ReceivedDirName  = "received"
	CollectedName    = "collected.json"
	ExchangeFormat   = "bottleneck.job-exchange/1"
	CollectedFormat  = "bottleneck.job-exchange-collected/1"
	exchangeErrorExt = ".error"
	exchangeSentExt  = ".sent"
)

// JobDirName is where node 0 lays the received summaries out as a job
// directory (node<R>/rank<N>.summary.json, node.json) and writes the job
// report, in its run directory: `bottleneck merge RUN/job/node*/` reads
// it as it reads a shared one.
const JobDirName = "job"

// Message is one rank's message over the store.
type Message struct {
	Format    string `json:"format"`
	Rank      int    `json:"rank"`
	Node      int    `json:"node"`
	LocalRank int    `json:"local_rank"`
	Host      string `json:"host"`
	RunDir    string `json:"run_dir"`
	Tag       string `json:"tag"`
	Key       Key    `json:"job"`
	Exit      struct {
		Reason string `json:"reason"`
		Code   *int   `json:"code"`
		Signal string `json:"signal"`
	} `json:"exit"`
	// Summaries are the rank's, one per profiler window (raw: decoded by
	// summary.Decode, which checks them).
	Summaries []json.RawMessage `json:"summaries"`
	// Problem says why the rank has no summary.
	Problem    string  `json:"problem"`
	SummarizeS float64 `json:"summarize_s"`
}

// Collected is rank 0's record of its wait.
type Collected struct {
	Format    string  `json:"format"`
	WorldSize int     `json:"world_size"`
	Ranks     []int   `json:"ranks"`
	Missing   []int   `json:"missing"`
	WaitedS   float64 `json:"waited_s"`
	WaitS     float64 `json:"wait_s"`
	// ExchangeS is rank 0's whole exchange: its summary, its message and the wait.
	ExchangeS float64  `json:"exchange_s"`
	Ended     string   `json:"ended"`
	Problems  []string `json:"problems"`
}

// Sent is a rank's record of its message: what its exit cost it.
type Sent struct {
	Seq        int     `json:"seq"`
	Bytes      int     `json:"bytes"`
	SummarizeS float64 `json:"summarize_s"`
	ConnectS   float64 `json:"connect_s"`
	SendS      float64 `json:"send_s"`
}

// Exchange is what the exchange left in one node's run directory.
type Exchange struct {
	Dir string
	// Messages are every rank's that rank 0 received, by rank (node 0 only).
	Messages []*Message
	// Collected is nil when rank 0 never finished its wait (it was
	// killed) or this is not node 0.
	Collected *Collected
	// Sent are this node's ranks that sent their message, by rank.
	Sent map[int]*Sent
	// Errors are this node's ranks whose exchange failed, "rank N: why".
	Errors []string
	// ErrorRanks are the ranks of Errors.
	ErrorRanks []int
	// Problems are files that could not be read, one line each.
	Problems []string
}

// ReadExchange reads runDir's exchange directory; a run without one has
// an empty Exchange.
func ReadExchange(runDir string) (*Exchange, error) {
	dir := filepath.Join(runDir, ExchangeDirName)
	x := &Exchange{Dir: dir}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return x, nil
	}
	errs, err := filepath.Glob(filepath.Join(dir, "*"+exchangeErrorExt))
	if err != nil {
		return nil, err
	}
	slices.Sort(errs)
	for _, p := range errs {
		b, err := os.ReadFile(p)
		if err != nil {
			x.Problems = append(x.Problems, err.Error())
			continue
		}
		who := strings.TrimSuffix(filepath.Base(p), exchangeErrorExt)
		if r, ok := strings.CutPrefix(who, "rank"); ok {
			who = "rank " + r
			if n, err := strconv.Atoi(r); err == nil {
				x.ErrorRanks = append(x.ErrorRanks, n)
			}
		}
		x.Errors = append(x.Errors, who+": "+strings.TrimSpace(string(b)))
	}
	sent, err := filepath.Glob(filepath.Join(dir, "rank*"+exchangeSentExt))
	if err != nil {
		return nil, err
	}
	x.Sent = map[int]*Sent{}
	for _, p := range sent {
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "rank"), exchangeSentExt))
		if err != nil {
			continue
		}
		var s Sent
		if err := readJSON(p, &s); err != nil {
			x.Problems = append(x.Problems, err.Error())
			continue
		}
		x.Sent[n] = &s
	}
	msgs, err := filepath.Glob(filepath.Join(dir, ReceivedDirName, "rank*.json"))
	if err != nil {
		return nil, err
	}
	for _, p := range msgs {
		var m Message
		if err := readJSON(p, &m); err != nil {
			x.Problems = append(x.Problems, err.Error())
			continue
		}
		if m.Format != ExchangeFormat {
			x.Problems = append(x.Problems, fmt.Sprintf("%s: format %q, want %q", p, m.Format, ExchangeFormat))
			continue
		}
		x.Messages = append(x.Messages, &m)
	}
	slices.SortFunc(x.Messages, func(a, b *Message) int { return a.Rank - b.Rank })
	var c Collected
	switch err := readJSON(filepath.Join(dir, CollectedName), &c); {
	case os.IsNotExist(err):
	case err != nil:
		x.Problems = append(x.Problems, err.Error())
	case c.Format != CollectedFormat:
		x.Problems = append(x.Problems, fmt.Sprintf("%s: format %q, want %q", filepath.Join(dir, CollectedName), c.Format, CollectedFormat))
	default:
		x.Collected = &c
	}
	return x, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// NodeRecords groups the received messages by node, as each node would
// have written its record and summaries into a job directory. self is
// this node's (node 0's) own record: its exit status and profiled ranks,
// which only it knows; the other nodes' exit status is unknown (-1) and
// their ranks are those that reported.
func (x *Exchange) NodeRecords(self *NodeRecord) ([]*NodeRecord, map[*NodeRecord][]*summary.Summary) {
	byNode := map[int]*NodeRecord{}
	sums := map[*NodeRecord][]*summary.Summary{}
	var order []int
	for _, m := range x.Messages {
		rec := byNode[m.Node]
		if rec == nil {
			if m.Node == self.Node {
				rec = self
			} else {
				rec = &NodeRecord{Tool: self.Tool, Node: m.Node, Host: m.Host, Key: m.Key, RunDir: m.RunDir, ExitCode: -1, Started: self.Started}
			}
			byNode[m.Node] = rec
			order = append(order, m.Node)
		}
		if rec != self {
			rec.Ranks = append(rec.Ranks, m.Rank)
		}
		if e := m.exitProblem(); e != "" {
			rec.Problems = append(rec.Problems, e)
		}
		if m.Problem != "" {
			rec.Problems = append(rec.Problems, fmt.Sprintf("rank %d: no summary: %s", m.Rank, m.Problem))
		}
		var got []*summary.Summary
		for i, raw := range m.Summaries {
			s, err := summary.Decode(bytes.NewReader(raw), fmt.Sprintf("rank %d's message, summary %d", m.Rank, i+1))
			if err != nil {
				rec.Problems = append(rec.Problems, err.Error())
				continue
			}
			got = append(got, s...)
		}
		for _, s := range got {
			if s.Rank != m.Rank {
				rec.Problems = append(rec.Problems, fmt.Sprintf("rank %d sent a summary of rank %d: left out", m.Rank, s.Rank))
				continue
			}
			sums[rec] = append(sums[rec], s)
		}
	}
	if byNode[self.Node] == nil {
		byNode[self.Node] = self
		order = append(order, self.Node)
	}
	slices.Sort(order)
	out := make([]*NodeRecord, 0, len(order))
	for _, n := range order {
		rec := byNode[n]
		var dropped []string
		sums[rec], dropped = OneSummaryPerRank(sums[rec])
		rec.Problems = append(rec.Problems, dropped...)
		out = append(out, rec)
	}
	return out, sums
}

// exitProblem says how a rank's program ended when it did not end well.
func (m *Message) exitProblem() string {
	switch {
	case m.Exit.Reason == "" || m.Exit.Reason == "exit" && (m.Exit.Code == nil || *m.Exit.Code == 0):
		return ""
	case m.Exit.Code != nil:
		return fmt.Sprintf("rank %d ended: %s, exit status %d", m.Rank, m.Exit.Reason, *m.Exit.Code)
	}
	return fmt.Sprintf("rank %d ended: %s", m.Rank, m.Exit.Reason)
}

// CollectExchange is node 0's job report of a run whose summaries came
// over the store: it lays x's messages out in dir as the nodes would
// have written them into a job directory (so that `bottleneck merge
// dir/node*/` reads them too), merges them, and says how rank 0's wait
// went. self is node 0's own record.
func CollectExchange(x *Exchange, self *NodeRecord, id Identity, dir string) (*Report, error) {
	recs, sums := x.NodeRecords(self)
	for _, rec := range recs {
		rec.Written = time.Now()
		if _, err := WriteNode(dir, rec, sums[rec]); err != nil {
			return nil, fmt.Errorf("could not lay the received summaries out in %s: %w", dir, err)
		}
	}
	rep, err := Collect(CollectOptions{Dir: dir, Self: id, Started: self.Started})
	if err != nil {
		return nil, err
	}
	FromExchange(rep, x)
	return rep, nil
}

// RouteStore is Report.Route for a report whose summaries came over
// torchrun's store.
const RouteStore = "store"

// FromExchange completes rep, collected from the job directory node 0
// laid out from x: how long rank 0 waited, whether every rank came, and
// what went wrong on the way.
func FromExchange(rep *Report, x *Exchange) {
	rep.Route = RouteStore
	c := x.Collected
	if c == nil {
		rep.Complete = false
		rep.Warnings = append(rep.Warnings, "rank 0 did not finish its wait for the other ranks (it was stopped or killed): the report holds the ranks it had received")
	} else {
		rep.WaitedS = c.WaitedS
		rep.Complete = rep.Complete && c.Ended == "all ranks"
		if c.Ended != "all ranks" && c.Ended != "wait over" {
			rep.Warnings = append(rep.Warnings, "rank 0's wait ended early ("+c.Ended+")")
		}
		rep.Warnings = append(rep.Warnings, c.Problems...)
	}
	rep.Warnings = append(rep.Warnings, x.Problems...)
	if rep.Job != nil && len(rep.Job.Missing) > 0 {
		rep.Complete = false
	}
}

// RangeList writes ranges of ranks: 0-3, 8.
func RangeList(rs []summary.Range) string {
	var parts []string
	for _, r := range rs {
		if r.From == r.To {
			parts = append(parts, fmt.Sprint(r.From))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", r.From, r.To))
		}
	}
	return strings.Join(parts, ", ")
}
