// Package summary owns the rank summary: a small, versioned JSON record of
// one rank's steps, computed where its trace lives (`bottleneck
// summarize`), and the merge of many into one job report (`bottleneck
// merge`). Only summaries travel; no merge ever holds a trace.
//
// Format "bottleneck.rank-summary/1" (docs/distributed.md):
//
//   - steps: the rank's steps by ProfilerStep number, in order, with per
//     step its time (ranks/1: host start to its end moved to device time),
//     its step-breakdown split (default/1: data = DataLoader, host = CPU
//     Exec + Runtime + Other, kernels = Kernel + Memcpy + Memset, comm =
//     exposed Communication) and its collectives (ranks/1: the summed
//     duration and number of the step's collective kernels, or host
//     communication ops on CPU-only traces). Times are whole microseconds.
//   - excluded: the step numbers the window check left out of the average
//     (start-up, carry-over, outliers) and cut-off steps.
//   - diagnosis: the rank's own verdict and its top findings, as `analyze`
//     gives them for that trace alone.
//
// About 46 bytes per step: 1,000 steps take ~46 KB (TestSize measures it).
package summary

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/ranks"
	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Format names the file format and its version.
const Format = "bottleneck.rank-summary/1"

// MaxFindings is how many of the rank's findings a summary keeps.
const MaxFindings = 3

// Summary is one rank's record.
type Summary struct {
	// Format is always Format.
	Format string `json:"format"`
	// Tool is the version of bottleneck that wrote it.
	Tool string `json:"tool,omitempty"`
	// Rank is the trace's rank (its own, else distributedInfo's).
	Rank int `json:"rank"`
	// WorldSize is distributedInfo's world size; 0 when unknown.
	WorldSize int `json:"world_size,omitempty"`
	// Host is the machine the rank ran on: --host, else the trace's hostname; "" when unknown.
	Host string `json:"host,omitempty"`
	// Device is the name of the first device the trace lists.
	Device string `json:"device,omitempty"`
	// File is the trace's file name, without its directory.
	File string `json:"file"`
	// Counts are the trace's sizes.
	Counts Counts `json:"counts"`
	// Steps are the rank's steps, aligned by number with the other ranks'.
	Steps Steps `json:"steps"`
	// Excluded are the step numbers left out of the averages (window check, cut off).
	Excluded []int `json:"excluded,omitempty"`
	// Diagnosis is the rank's own verdict; nil when not diagnosed.
	Diagnosis *RankDiagnosis `json:"diagnosis,omitempty"`
}

// Counts are a trace's sizes.
type Counts struct {
	Events      int `json:"events"`
	Kernels     int `json:"kernels"`
	Collectives int `json:"collectives"`
}

// Steps are parallel arrays, one entry per step, in microseconds.
type Steps struct {
	Num    []int   `json:"num"`
	StepUs []int64 `json:"step_us"`
	DataUs []int64 `json:"data_us"`
	HostUs []int64 `json:"host_us"`
	// KernelUs is the time computation kernels, copies or memsets ran.
	KernelUs []int64 `json:"kernel_us"`
	// CommUs is exposed communication: no kernel or copy ran alongside.
	CommUs []int64 `json:"comm_us"`
	// CollUs is the summed duration of the step's collectives (waiting
	// for other ranks included: the merge takes that apart).
	CollUs []int64 `json:"coll_us"`
	// Colls is the number of the step's collectives.
	Colls []int `json:"colls"`
}

// Len is the number of steps.
func (s *Steps) Len() int { return len(s.Num) }

// RankDiagnosis is the part of a rank's diagnosis the job's verdict reads.
type RankDiagnosis struct {
	Primary    diagnose.Class `json:"primary"`
	SharePct   float64        `json:"share_pct"`
	Confidence string         `json:"confidence"`
	StepUs     float64        `json:"step_us"`
	// CommPct is the communication class's share of the step.
	CommPct  float64            `json:"communication_pct"`
	Findings []diagnose.Finding `json:"findings,omitempty"`
}

// FromAnalyses summarises one rank from its trace, its step breakdown
// and its diagnosis (nil: none). host, when not empty, names the machine.
func FromAnalyses(t *trace.Trace, b *breakdown.Result, d *diagnose.Diagnosis, host string) *Summary {
	s := &Summary{Format: Format, Rank: ranks.RankOf(t), File: filepath.Base(t.Path), Host: host}
	if dist := t.Meta.Distributed; dist != nil {
		s.WorldSize = dist.WorldSize
	}
	if s.Host == "" {
		s.Host = metaString(t, "hostname")
	}
	if len(t.Meta.Devices) > 0 {
		s.Device = t.Meta.Devices[0].Name
	}
	rk, steps := ranks.PerRank(t, ranks.Options{})
	s.Counts = Counts{Events: t.Events.Len(), Collectives: rk.Collectives}
	for _, k := range t.Events.Kind {
		if k == trace.KindKernel {
			s.Counts.Kernels++
		}
	}
	byName := map[string]*breakdown.Step{}
	if b != nil {
		for i := range b.Steps {
			byName[b.Steps[i].Name] = &b.Steps[i]
		}
	}
	for _, st := range steps {
		var coll int64
		for _, c := range st.CollNs {
			coll += c
		}
		s.Steps.Num = append(s.Steps.Num, st.Num)
		s.Steps.StepUs = append(s.Steps.StepUs, nsToUs(float64(st.StepNs)))
		s.Steps.CollUs = append(s.Steps.CollUs, nsToUs(float64(coll)))
		s.Steps.Colls = append(s.Steps.Colls, len(st.CollNs))
		bs := byName[strconv.Itoa(st.Num)]
		if bs == nil {
			s.Steps.DataUs = append(s.Steps.DataUs, 0)
			s.Steps.HostUs = append(s.Steps.HostUs, 0)
			s.Steps.KernelUs = append(s.Steps.KernelUs, 0)
			s.Steps.CommUs = append(s.Steps.CommUs, 0)
			s.Excluded = append(s.Excluded, st.Num)
			continue
		}
		c := bs.Costs
		s.Steps.DataUs = append(s.Steps.DataUs, round(c.DataLoaderUs))
		s.Steps.HostUs = append(s.Steps.HostUs, round(c.CPUExecUs+c.RuntimeUs+c.OtherUs))
		s.Steps.KernelUs = append(s.Steps.KernelUs, round(c.KernelUs+c.MemcpyUs+c.MemsetUs))
		s.Steps.CommUs = append(s.Steps.CommUs, round(c.CommunicationUs))
		if bs.Excluded || bs.Incomplete {
			s.Excluded = append(s.Excluded, st.Num)
		}
	}
	if d != nil {
		rd := &RankDiagnosis{Primary: d.Verdict.Primary, SharePct: d.Verdict.SharePct, Confidence: d.Verdict.Confidence, StepUs: d.StepUs}
		for _, c := range d.Classes {
			if c.Class == diagnose.Comm {
				rd.CommPct = c.SharePct
			}
		}
		rd.Findings = append(rd.Findings, d.Findings[:min(len(d.Findings), MaxFindings)]...)
		s.Diagnosis = rd
	}
	return s
}

// diagnosis rebuilds what diagnose.ComputeSpread reads of a rank.
func (rd *RankDiagnosis) diagnosis() *diagnose.Diagnosis {
	if rd == nil {
		return nil
	}
	return &diagnose.Diagnosis{
		Verdict:  diagnose.Verdict{Primary: rd.Primary, SharePct: rd.SharePct, Confidence: rd.Confidence},
		StepUs:   rd.StepUs,
		Classes:  []diagnose.ClassScore{{Class: diagnose.Comm, SharePct: rd.CommPct}},
		Findings: rd.Findings,
	}
}

func metaString(t *trace.Trace, key string) string {
	for _, kv := range t.Meta.Other {
		if kv.Key != key {
			continue
		}
		var s string
		if json.Unmarshal(kv.Value, &s) == nil {
			return s
		}
	}
	return ""
}

func nsToUs(ns float64) int64 { return round(ns / 1e3) }

func round(us float64) int64 { return int64(math.Round(us)) }

// Write writes s as JSON.
func Write(w io.Writer, s *Summary) error {
	return json.NewEncoder(w).Encode(s)
}

// Decode reads the summaries of r: one or more JSON objects, one after
// another (a file per rank, or `bottleneck summarize`'s stream); name
// names the input in errors, with the summary's place in it.
func Decode(r io.Reader, name string) ([]*Summary, error) {
	var out []*Summary
	dec := json.NewDecoder(r)
	for {
		var s Summary
		err := dec.Decode(&s)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: summary %d (byte %d): not a rank summary: %w", name, len(out)+1, dec.InputOffset(), err)
		}
		if err := s.Check(); err != nil {
			return nil, fmt.Errorf("%s: summary %d (rank %d): %w", name, len(out)+1, s.Rank, err)
		}
		out = append(out, &s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rank summary in it", name)
	}
	return out, nil
}

// ReadFile reads a file of summaries.
func ReadFile(path string) ([]*Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Decode(bufio.NewReaderSize(f, 1<<16), path)
}

// Check reports what makes s unusable: another format, a negative rank,
// step arrays of different lengths, negative times.
func (s *Summary) Check() error {
	if s.Format != Format {
		return fmt.Errorf("format %q, want %q", s.Format, Format)
	}
	if s.Rank < 0 {
		return fmt.Errorf("rank %d: a summary needs the trace's rank", s.Rank)
	}
	n := len(s.Steps.Num)
	arrays := map[string]int{"step_us": len(s.Steps.StepUs), "data_us": len(s.Steps.DataUs), "host_us": len(s.Steps.HostUs),
		"kernel_us": len(s.Steps.KernelUs), "comm_us": len(s.Steps.CommUs), "coll_us": len(s.Steps.CollUs), "colls": len(s.Steps.Colls)}
	for name, l := range arrays {
		if l != n {
			return fmt.Errorf("steps.%s has %d entries, steps.num %d", name, l, n)
		}
	}
	seen := make(map[int]bool, n)
	for _, num := range s.Steps.Num {
		if seen[num] {
			return fmt.Errorf("steps.num: step %d twice", num)
		}
		seen[num] = true
	}
	for name, a := range map[string][]int64{"step_us": s.Steps.StepUs, "data_us": s.Steps.DataUs, "host_us": s.Steps.HostUs,
		"kernel_us": s.Steps.KernelUs, "comm_us": s.Steps.CommUs, "coll_us": s.Steps.CollUs} {
		for i, v := range a {
			if v < 0 {
				return fmt.Errorf("steps.%s[%d] is negative (%d)", name, i, v)
			}
		}
	}
	for i, v := range s.Steps.Colls {
		if v < 0 {
			return fmt.Errorf("steps.colls[%d] is negative (%d)", i, v)
		}
	}
	return nil
}
