// Package jobdir owns the job directory of a multi-node `bottleneck run
// --job-dir DIR` (docs/distributed.md, "Live runs across nodes with a
// shared directory"): a directory on a filesystem every node mounts,
// where each node's bottleneck leaves its ranks' summaries and a node
// record once its program has ended, and where node rank 0's bottleneck,
// after a bounded wait for the others, writes the job's report. Nothing
// else travels and nothing listens: no node needs to reach another.
//
// Without a shared directory the summaries travel over torchrun's store
// instead (exchange.go), and node 0 lays them out in the same layout in
// its run directory.
//
// Layout:
//
//	DIR/node<R>/rank<N>.summary.json   node R's ranks (bottleneck.rank-summary/1)
//	DIR/node<R>/node.json              node R's record, written last (NodeFormat)
//	DIR/job-report.txt, job-report.json  the job's report, by node 0
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

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/summary"
)

// NodeFormat names a node record's format.
const NodeFormat = "bottleneck.job-node/1"

// File names in the job directory.
const (
	NodeRecordName = "node.json"
	ReportText     = "job-report.txt"
	ReportJSON     = "job-report.json"
)

// NodeDirName is node's directory; a node whose rank is unknown (-1)
// gets one named by its host and process instead.
func NodeDirName(node int, host string, pid int) string {
	if node < 0 {
		return fmt.Sprintf("node-unknown-%s-%d", safeName(host), pid)
	}
	return "node" + strconv.Itoa(node)
}

// SummaryName is the file of a rank's summary in its node's directory.
func SummaryName(rank int) string { return fmt.Sprintf("rank%d.summary.json", rank) }

// Key says which job a node belongs to. A zero field is unknown and
// matches anything: a node whose ranks all died before the agent wrote
// their environment knows less than the others.
type Key struct {
	// RunID is torchrun's TORCHELASTIC_RUN_ID (--rdzv-id; "none" with a
	// static rendezvous).
	RunID string `json:"run_id,omitempty"`
	// Master is the rendezvous endpoint, host:port (MASTER_ADDR and
	// MASTER_PORT, else the launcher's --master-addr/--rdzv-endpoint).
	Master string `json:"master,omitempty"`
	// WorldSize is the number of ranks; Nodes the number of nodes.
	WorldSize int `json:"world_size,omitempty"`
	Nodes     int `json:"nodes,omitempty"`
}

// Mismatch says how k and o differ in what both know, "" when they match.
func (k Key) Mismatch(o Key) string {
	var d []string
	if k.RunID != "" && o.RunID != "" && k.RunID != o.RunID {
		d = append(d, fmt.Sprintf("run id %q, not %q", o.RunID, k.RunID))
	}
	if k.Master != "" && o.Master != "" && k.Master != o.Master {
		d = append(d, fmt.Sprintf("master %q, not %q", o.Master, k.Master))
	}
	if k.WorldSize > 0 && o.WorldSize > 0 && k.WorldSize != o.WorldSize {
		d = append(d, fmt.Sprintf("world size %d, not %d", o.WorldSize, k.WorldSize))
	}
	if k.Nodes > 0 && o.Nodes > 0 && k.Nodes != o.Nodes {
		d = append(d, fmt.Sprintf("%d nodes, not %d", o.Nodes, k.Nodes))
	}
	return strings.Join(d, ", ")
}

// Identity is what a node knows of itself and its job.
type Identity struct {
	// Node is the node's rank (torchrun's GROUP_RANK), -1 when unknown.
	Node int
	Key  Key
	Host string
}

// NodeRecord is a node's node.json: who it is, where its run directory
// is, which ranks it ran and which it summarised, and what went wrong.
type NodeRecord struct {
	Format string `json:"format"`
	Tool   string `json:"tool,omitempty"`
	Node   int    `json:"node"`
	Host   string `json:"host,omitempty"`
	Key    Key    `json:"job"`
	// RunDir is the node's run directory (absolute): its ranks' traces and reports.
	RunDir string `json:"run_dir"`
	// ExitCode is the program's (the launcher's) exit status on this node.
	ExitCode int `json:"exit_code"`
	// Ranks are the ranks the agent profiled on this node; Summarised those with a summary here.
	Ranks      []int `json:"ranks"`
	Summarised []int `json:"summarised"`
	// Problems say why a rank has no summary, one line each.
	Problems []string `json:"problems,omitempty"`
	// Started is when this node's bottleneck started; Written when it wrote this record.
	Started time.Time `json:"started"`
	Written time.Time `json:"written"`
}

// WriteNode writes a node's summaries, then its record (so a record
// found means its summaries are all there), into dir/NodeDirName. It
// first removes the summaries and record an earlier run left there. It
// returns the node's directory.
func WriteNode(dir string, rec *NodeRecord, sums []*summary.Summary) (string, error) {
	nodeDir := filepath.Join(dir, NodeDirName(rec.Node, rec.Host, os.Getpid()))
	if err := os.MkdirAll(nodeDir, 0o755); err != nil {
		return "", err
	}
	old, _ := filepath.Glob(filepath.Join(nodeDir, "rank*.summary.json"))
	for _, f := range append(old, filepath.Join(nodeDir, NodeRecordName)) {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return "", err
		}
	}
	rec.Format = NodeFormat
	rec.Summarised = rec.Summarised[:0]
	for _, s := range sums {
		var buf bytes.Buffer
		if err := summary.Write(&buf, s); err != nil {
			return "", err
		}
		if err := atomicfile.Write(filepath.Join(nodeDir, SummaryName(s.Rank)), buf.Bytes()); err != nil {
			return "", err
		}
		rec.Summarised = append(rec.Summarised, s.Rank)
	}
	slices.Sort(rec.Summarised)
	if rec.Summarised == nil {
		rec.Summarised = []int{}
	}
	if rec.Ranks == nil {
		rec.Ranks = []int{}
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return "", err
	}
	return nodeDir, atomicfile.Write(filepath.Join(nodeDir, NodeRecordName), append(b, '\n'))
}

// ReadNode reads a node record.
func ReadNode(path string) (*NodeRecord, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rec NodeRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("%s: not a node record: %w", path, err)
	}
	if rec.Format != NodeFormat {
		return nil, fmt.Errorf("%s: format %q, want %q", path, rec.Format, NodeFormat)
	}
	return &rec, nil
}

// OneSummaryPerRank folds the summaries of one rank's several windows
// (run --repeat) into one: their steps have different numbers, and the
// job compares ranks step by step. The first window's diagnosis stands
// for the rank. Windows whose step numbers overlap are kept apart: the
// later one is dropped and named in the problems returned.
func OneSummaryPerRank(sums []*summary.Summary) ([]*summary.Summary, []string) {
	byRank := map[int]*summary.Summary{}
	var order []int
	var problems []string
	for _, s := range sums {
		first, ok := byRank[s.Rank]
		if !ok {
			byRank[s.Rank] = s
			order = append(order, s.Rank)
			continue
		}
		if overlap(first, s) {
			problems = append(problems, fmt.Sprintf("rank %d: %s has steps %s also has; left out", s.Rank, s.File, first.File))
			continue
		}
		appendWindow(first, s)
	}
	slices.Sort(order)
	out := make([]*summary.Summary, 0, len(order))
	for _, r := range order {
		out = append(out, byRank[r])
	}
	return out, problems
}

func overlap(a, b *summary.Summary) bool {
	seen := make(map[int]bool, len(a.Steps.Num))
	for _, n := range a.Steps.Num {
		seen[n] = true
	}
	for _, n := range b.Steps.Num {
		if seen[n] {
			return true
		}
	}
	return false
}

// appendWindow adds b's steps to a, in step order.
func appendWindow(a, b *summary.Summary) {
	type row struct {
		num                                  int
		step, data, host, kernel, comm, coll int64
		colls                                int
	}
	var rows []row
	for _, s := range []*summary.Summary{a, b} {
		st := &s.Steps
		for i := range st.Num {
			rows = append(rows, row{st.Num[i], st.StepUs[i], st.DataUs[i], st.HostUs[i], st.KernelUs[i], st.CommUs[i], st.CollUs[i], st.Colls[i]})
		}
	}
	slices.SortFunc(rows, func(x, y row) int { return x.num - y.num })
	var st summary.Steps
	for _, r := range rows {
		st.Num, st.StepUs, st.DataUs, st.HostUs = append(st.Num, r.num), append(st.StepUs, r.step), append(st.DataUs, r.data), append(st.HostUs, r.host)
		st.KernelUs, st.CommUs, st.CollUs, st.Colls = append(st.KernelUs, r.kernel), append(st.CommUs, r.comm), append(st.CollUs, r.coll), append(st.Colls, r.colls)
	}
	a.Steps = st
	a.Excluded = append(a.Excluded, b.Excluded...)
	slices.Sort(a.Excluded)
	a.Counts.Events += b.Counts.Events
	a.Counts.Kernels += b.Counts.Kernels
	a.Counts.Collectives += b.Counts.Collectives
	a.File += "+" + b.File
}

// ProfiledRanks are the ranks of run's processes (tags rank<N>).
func ProfiledRanks(run *rundir.Run) []int {
	var out []int
	for _, p := range run.Processes {
		if r, ok := rundir.Rank(p.Tag); ok {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "host"
	}
	return string(b)
}
