// Package live is `bottleneck run --live`'s view (docs/run.md, "Live
// view"): it reads the snapshots the agent rewrites while the program runs
// (.live/<tag>.json, one per process: its last steps and counters), sums
// them up per rank (Build), and draws the result as a terminal frame
// (Frame), a plain log line (Line) or a web page fed by server-sent events
// (Server). It knows nothing of how the program is run.
package live

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
)

// Snapshot is one process's .live/<tag>.json as the agent writes it
// (internal/agent/py/_bottleneck_live.py).
type Snapshot struct {
	Format  int     `json:"format"`
	Tag     string  `json:"tag"`
	PID     int     `json:"pid"`
	Time    float64 `json:"time"`     // Unix seconds when written
	UptimeS float64 `json:"uptime_s"` // since the agent started
	Step    int     `json:"step"`
	// State is the profiler window's: waiting, recording, done, off,
	// failed, yielded; "ended" once the program ended.
	State  string `json:"state"`
	Window int    `json:"window"` // windows recorded so far
	Ended  bool   `json:"ended"`
	// Steps are the last steps, oldest first: step, end (s since the
	// agent started), duration s, DataLoader wait s, GC pause s, RSS
	// bytes, CUDA allocated bytes, the step thread's time on a CPU s and
	// runnable waiting for one s, samples (DataLoader batch_size x
	// batches); null: not measured.
	Steps [][]*float64 `json:"steps"`
}

// Columns of Snapshot.Steps.
const (
	colStep = iota
	colEnd
	colDur
	colDataWait
	colGC
	colRSS
	colCUDA
	colCPU
	colCPUWait
	colSamples
	nCols
)

// Format is the snapshot format this package reads (the agent's FORMAT).
const Format = 2

// Parse reads one snapshot; name (its file) is in every error.
func Parse(name string, b []byte) (*Snapshot, error) {
	var s Snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if s.Format != Format {
		return nil, fmt.Errorf("%s: live snapshot format %d, want %d", name, s.Format, Format)
	}
	for i, r := range s.Steps {
		if len(r) != nCols {
			return nil, fmt.Errorf("%s: steps[%d]: %d columns, want %d", name, i, len(r), nCols)
		}
		for j := range nCols {
			required := j <= colGC
			if (required && r[j] == nil) || (r[j] != nil && (math.IsNaN(*r[j]) || math.IsInf(*r[j], 0) || *r[j] < 0)) {
				return nil, fmt.Errorf("%s: steps[%d][%d]: want a number >= 0", name, i, j)
			}
		}
	}
	return &s, nil
}

// Step counts of the summaries below.
const (
	// SparkSteps: the sparkline's steps.
	SparkSteps = 48
	// BreakdownSteps: the steps the breakdown sums.
	BreakdownSteps = 20
)

// Rank is one process's summary.
type Rank struct {
	Tag    string `json:"tag"`
	Step   int    `json:"step"`
	State  string `json:"state"`
	Window int    `json:"window"`
	Ended  bool   `json:"ended"`
	// NowS is the last step's duration; MedianS and P90S are over the
	// last Steps steps (the agent keeps 256).
	NowS    float64 `json:"now_s"`
	MedianS float64 `json:"median_s"`
	P90S    float64 `json:"p90_s"`
	Steps   int     `json:"steps"`
	// Rate: steps a second over those steps (0: fewer than 2).
	Rate float64 `json:"rate"`
	// Recent: the last SparkSteps durations (s), oldest first.
	Recent []float64 `json:"recent"`
	// The last BreakdownN steps' time, as shares that add up to 1 when
	// BreakdownN > 0 (split): the DataLoader's wait, GC pauses, and, of
	// the steps whose thread's scheduling was measured, the rest of the
	// time on a CPU (Running: Python and native ops), off it (Blocked:
	// waiting for the device, other ranks' collectives, I/O, a sleep)
	// and runnable waiting for a CPU (CPUWait: the machine busy); Rest is
	// the rest of the steps whose scheduling was not measured.
	DataWait   float64 `json:"data_wait"`
	GC         float64 `json:"gc"`
	Running    float64 `json:"running"`
	Blocked    float64 `json:"blocked"`
	CPUWait    float64 `json:"cpu_wait"`
	Rest       float64 `json:"rest"`
	BreakdownN int     `json:"breakdown_steps"`
	// Split: how many of those steps had their scheduling measured.
	Split int `json:"split_steps"`
	// CPUWaitAll: the thread's whole wait for a CPU in those steps (in
	// the DataLoader's wait too), a share of their time.
	CPUWaitAll float64 `json:"cpu_wait_all"`
	// FirstBreakdownStep: the step number of the breakdown's first step.
	FirstBreakdownStep int `json:"first_breakdown_step"`
	// SamplesPerS: samples a second over the Steps steps, like Rate, when
	// each of them took DataLoader batches of a known batch_size (0: not
	// known). The loader's batch_size: a smaller last batch counts full.
	SamplesPerS float64 `json:"samples_per_s"`
	// Cause is what the diagnosis would name now from the breakdown
	// (nil: no steps yet); provisional, see Diagnose.
	Cause *Cause `json:"cause"`
	// RSS and CUDA: the latest readings in bytes (nil: not measured, CUDA
	// not used); their PerStep trend is over the steps that have both
	// ends (0: steady or unknown).
	RSS         *float64 `json:"rss_bytes"`
	CUDA        *float64 `json:"cuda_allocated_bytes"`
	RSSPerStep  float64  `json:"rss_per_step"`
	CUDAPerStep float64  `json:"cuda_per_step"`
	// Slowest: the highest median of several ranks.
	Slowest bool `json:"slowest"`
}

// View is what every renderer draws.
type View struct {
	Title string `json:"title"` // the program, as given (escape it)
	Ranks []Rank `json:"ranks"`
	// Ended: the program ended (every snapshot said so, or the runner
	// said so).
	Ended bool `json:"ended"`
	// Window is the diagnosis of the first profiler window's trace, once
	// written (nil before, and when it could not be read).
	Window *WindowVerdict `json:"window,omitempty"`
}

// WindowVerdict is what the diagnosis makes of a recorded window's trace
// alone, while the program goes on: the same engine as the report's,
// without the run's evidence and Python profile, which come at its end.
type WindowVerdict struct {
	Tag        string  `json:"tag"`   // the process whose trace it is (escape it)
	Steps      string  `json:"steps"` // the steps it recorded, e.g. "8-12"
	Class      string  `json:"class"`
	SharePct   float64 `json:"share_pct"`
	Confidence string  `json:"confidence"`
	// Change is the top finding's first change (escape it), SavingPct
	// what it could save of the step; "" and 0 without a finding.
	Change    string  `json:"change,omitempty"`
	SavingPct float64 `json:"saving_pct,omitempty"`
	// Why is, when the window supports no verdict (too little recorded),
	// why (escape it); "" otherwise.
	Why string `json:"why,omitempty"`
}

// Text is the window's verdict in one line.
func (w *WindowVerdict) Text() string {
	s := fmt.Sprintf("%s's recorded window (steps %s): ", textsafe.Text(w.Tag), textsafe.Text(w.Steps))
	if w.Why != "" {
		return s + "no verdict: " + textsafe.Text(w.Why)
	}
	s += fmt.Sprintf("%s %.0f%%, confidence %s", w.Class, w.SharePct, w.Confidence)
	if w.Change != "" {
		s += fmt.Sprintf("; could save ~%.0f%%: %s", w.SavingPct, textsafe.Text(w.Change))
	}
	return s
}

// Build sums the snapshots up, one rank per snapshot in tag order.
func Build(title string, snaps []*Snapshot) View {
	v := View{Title: title}
	for _, s := range snaps {
		v.Ranks = append(v.Ranks, summarize(s))
	}
	sort.Slice(v.Ranks, func(i, j int) bool { return v.Ranks[i].Tag < v.Ranks[j].Tag })
	if len(v.Ranks) > 1 {
		slow := -1
		for i, r := range v.Ranks {
			if r.Steps > 0 && (slow < 0 || r.MedianS > v.Ranks[slow].MedianS) {
				slow = i
			}
		}
		if slow >= 0 {
			v.Ranks[slow].Slowest = true
		}
	}
	v.Ended = len(snaps) > 0
	for _, s := range snaps {
		v.Ended = v.Ended && s.Ended
	}
	return v
}

func summarize(s *Snapshot) Rank {
	r := Rank{Tag: s.Tag, Step: s.Step, State: s.State, Window: s.Window, Ended: s.Ended}
	rows := s.Steps
	// a step source that switched (docs/run.md) numbers steps from 1
	// again: only the rows since then are this run's steps
	for i := len(rows) - 1; i > 0; i-- {
		if *rows[i][colStep] <= *rows[i-1][colStep] {
			rows = rows[i:]
			break
		}
	}
	if len(rows) == 0 {
		return r
	}
	durs := make([]float64, len(rows))
	for i, row := range rows {
		durs[i] = *row[colDur]
	}
	r.Steps = len(rows)
	r.NowS = durs[len(durs)-1]
	r.MedianS = stats.Median(durs)
	r.P90S = percentile(durs, 0.9)
	if n := len(rows); n >= 2 {
		if span := *rows[n-1][colEnd] - *rows[0][colEnd]; span > 0 {
			r.Rate = float64(n-1) / span
			r.SamplesPerS = samplesPerS(rows[1:], span)
		}
	}
	r.Recent = slices.Clone(durs[max(0, len(durs)-SparkSteps):])
	splitSteps(&r, rows[max(0, len(rows)-BreakdownSteps):])
	r.Cause = Diagnose(r)
	r.RSS, r.RSSPerStep = trend(rows, colRSS)
	r.CUDA, r.CUDAPerStep = trend(rows, colCUDA)
	return r
}

// samplesPerS is the samples of rows over span seconds, when every row
// has them (0: not known).
func samplesPerS(rows [][]*float64, span float64) float64 {
	n := 0.0
	for _, row := range rows {
		if row[colSamples] == nil {
			return 0
		}
		n += *row[colSamples]
	}
	return n / span
}

// splitSteps fills r's breakdown from the steps last.
func splitSteps(r *Rank, last [][]*float64) {
	var total, wait, gc, running, blocked, cpuWait, cpuWaitAll, rest float64
	for _, row := range last {
		d := *row[colDur]
		total += d
		// each part is within its step: a clock's rounding cannot make the
		// parts more than the whole
		w := min(*row[colDataWait], d)
		g := min(*row[colGC], d-w)
		wait += w
		gc += g
		left := d - w - g
		if row[colCPU] == nil || row[colCPUWait] == nil {
			rest += left
		} else {
			r.Split++
			// The DataLoader's wait and GC are counted whole above; where
			// in the step the thread waited for a CPU or was blocked is
			// not known. The wait for a CPU is taken to be spread evenly
			// over the step; the blocked time (off the CPU, not runnable)
			// to be the DataLoader's wait first: its workers' batches are
			// waited for off the CPU (a loader without workers loads on
			// it, and its step's blocked time then shows as on the CPU).
			q := 0.0
			if d > 0 {
				q = min(*row[colCPUWait]*left/d, left)
			}
			cpuWaitAll += min(*row[colCPUWait], d)
			off := max(0, d-*row[colCPU]-*row[colCPUWait])
			b := min(max(0, off-w), left-q)
			cpuWait += q
			blocked += b
			running += left - q - b
		}
	}
	if total <= 0 {
		return
	}
	r.BreakdownN = len(last)
	r.FirstBreakdownStep = int(*last[0][colStep])
	r.DataWait, r.GC = wait/total, gc/total
	r.Running, r.Blocked, r.CPUWait, r.CPUWaitAll = running/total, blocked/total, cpuWait/total, cpuWaitAll/total
	r.Rest = rest / total
}

// trend returns the latest reading of column c and its change per step
// from the first row that has one.
func trend(rows [][]*float64, c int) (*float64, float64) {
	var first, last []*float64
	for _, row := range rows {
		if row[c] == nil {
			continue
		}
		if first == nil {
			first = row
		}
		last = row
	}
	if last == nil {
		return nil, 0
	}
	v := *last[c]
	steps := *last[colStep] - *first[colStep]
	if steps <= 0 {
		return &v, 0
	}
	return &v, (v - *first[c]) / steps
}

// percentile is the nearest-rank percentile p (0..1] of xs.
func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}
