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
	// batches), then the Python sampler's split of the step thread's
	// sampled time: on a CPU in Python s and in native code s, blocked
	// waiting for the device s, in torch.distributed s and otherwise s;
	// null: not measured.
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
	colPython
	colNative
	colDevice
	colComm
	colOther
	nCols
)

// Format is the snapshot format this package reads (the agent's FORMAT).
const Format = 3

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
			if j > colPython && (r[j] == nil) != (r[colPython] == nil) {
				return nil, fmt.Errorf("%s: steps[%d][%d]: the sampler's columns are all null or none", name, i, j)
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
	// Running and Blocked split by the Python sampler's samples of the
	// step thread in those steps (Sampled of them had the sampler's
	// columns; the shares are of the steps' time, as above): Running into
	// Python and Native (the innermost frame inside C code: torch's ops,
	// builtins) when OnCPUSplit; Blocked into Device (a sync waiting for
	// the device), Comm (in torch.distributed, less RankWait), RankWait
	// (the part of the collectives' time the rank with the least of it did
	// not spend: waiting for other ranks; Build sets it, with several
	// ranks) and OtherBlocked (a sleep, I/O, a lock) when BlockedSplit.
	Python       float64 `json:"python"`
	Native       float64 `json:"native"`
	Device       float64 `json:"device"`
	Comm         float64 `json:"comm"`
	RankWait     float64 `json:"rank_wait"`
	OtherBlocked float64 `json:"other_blocked"`
	Sampled      int     `json:"sampled_steps"`
	OnCPUSplit   bool    `json:"on_cpu_split"`
	BlockedSplit bool    `json:"blocked_split"`
	// CUDA: some kept step ran with CUDA initialised (its allocated
	// memory was read): Python and native time then do not name classes.
	UsesCUDA bool `json:"uses_cuda"`
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

	meanS float64 // the breakdown's mean step
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
	rankWaits(v.Ranks)
	for i := range v.Ranks {
		v.Ranks[i].Cause = Diagnose(v.Ranks[i])
	}
	v.Ended = len(snaps) > 0
	for _, s := range snaps {
		v.Ended = v.Ended && s.Ended
	}
	return v
}

// rankWaits splits each rank's time in collectives into communication
// and waiting for other ranks: a collective ends for every rank when the
// last one joins it, so the rank with the least of it per step (the last
// to join) spent about the transfer alone, and what the others spent
// beyond that per step they waited. Over the ranks the sampler saw (one
// never blocked spent none); nothing with fewer than two.
func rankWaits(ranks []Rank) {
	least, n := math.Inf(1), 0
	for _, r := range ranks {
		if r.Sampled > 0 && r.meanS > 0 {
			least = min(least, r.Comm*r.meanS)
			n++
		}
	}
	if n < 2 {
		return
	}
	for i := range ranks {
		r := &ranks[i]
		if r.BlockedSplit && r.meanS > 0 {
			if w := r.Comm - least/r.meanS; w > 1e-9 { // (not a rounding's)
				r.RankWait, r.Comm = w, r.Comm-w
			}
		}
	}
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
	splitSteps(&r, rows)
	for _, row := range rows {
		r.UsesCUDA = r.UsesCUDA || row[colCUDA] != nil
	}
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

// splitSteps fills r's breakdown from the last BreakdownSteps of rows
// and splits its time on a CPU and blocked by the sampler's samples of
// those steps, and of earlier ones until they hold MinSampledS (a 2 ms
// step has a 20 ms sample every tenth step: 20 steps alone would hold 2).
func splitSteps(r *Rank, rows [][]*float64) {
	last := rows[max(0, len(rows)-BreakdownSteps):]
	var total, wait, gc, running, blocked, cpuWait, cpuWaitAll, rest float64
	// Running and Blocked of the steps with the sampler's columns
	var sRunning, sBlocked float64
	for _, row := range last {
		p := partsOf(row)
		total += p.d
		wait += p.w
		gc += p.g
		if !p.split {
			rest += p.left
			continue
		}
		r.Split++
		cpuWaitAll += min(*row[colCPUWait], p.d)
		cpuWait += p.q
		blocked += p.b
		running += p.left - p.q - p.b
		if row[colPython] != nil {
			r.Sampled++
			sRunning += p.left - p.q - p.b
			sBlocked += p.b
		}
	}
	if total <= 0 {
		return
	}
	r.meanS = total / float64(len(last))
	r.BreakdownN = len(last)
	r.FirstBreakdownStep = int(*last[0][colStep])
	r.DataWait, r.GC = wait/total, gc/total
	r.Running, r.Blocked, r.CPUWait, r.CPUWaitAll = running/total, blocked/total, cpuWait/total, cpuWaitAll/total
	r.Rest = rest / total
	if r.Sampled == 0 {
		return
	}
	var s [5]float64 // python, native, device, comm, other
	for i := len(rows) - 1; i >= 0; i-- {
		if i < len(rows)-len(last) && s[0]+s[1]+s[2]+s[3]+s[4] >= MinSampledS {
			break
		}
		row := rows[i]
		p := partsOf(row)
		if !p.split || row[colPython] == nil {
			continue
		}
		// The samples saw the step's GC pauses (Python) and its
		// DataLoader wait (blocked off the CPU, else loading on it) too,
		// which the breakdown counts apart: they leave the samples'
		// parts first.
		py, nat := *row[colPython], *row[colNative]
		py -= min(py, p.g)
		wOff := min(p.off, p.w)
		if on := py + nat; on > 0 {
			k := max(0, on-(p.w-wOff)) / on
			py, nat = py*k, nat*k
		}
		s[0] += py
		s[1] += nat
		s[2] += *row[colDevice]
		s[3] += *row[colComm]
		s[4] += max(0, *row[colOther]-wOff)
	}
	// The samples' proportions split the sampled steps' Running and
	// Blocked; the parts are then of all the breakdown's steps, as the
	// others are.
	if on := s[0] + s[1]; on > 0 {
		r.OnCPUSplit = true
		r.Python, r.Native = sRunning*s[0]/on/total, sRunning*s[1]/on/total
	}
	if off := s[2] + s[3] + s[4]; off > 0 {
		r.BlockedSplit = true
		r.Device, r.Comm, r.OtherBlocked = sBlocked*s[2]/off/total, sBlocked*s[3]/off/total, sBlocked*s[4]/off/total
	}
}

// MinSampledS: the sampler's seconds the split's proportions rest on, at
// least (25 samples at its 50 Hz), when the kept steps hold them.
const MinSampledS = 0.5

// stepParts is one step's time as the breakdown splits it.
type stepParts struct {
	d, w, g, left float64 // duration, DataLoader wait, GC, the rest
	// with the scheduler's counters (split): the rest's wait for a CPU
	// q, blocked b; off: the whole step's time off the CPU
	split     bool
	q, b, off float64
}

func partsOf(row []*float64) stepParts {
	d := *row[colDur]
	// each part is within its step: a clock's rounding cannot make the
	// parts more than the whole
	p := stepParts{d: d, w: min(*row[colDataWait], d)}
	p.g = min(*row[colGC], d-p.w)
	p.left = d - p.w - p.g
	if row[colCPU] == nil || row[colCPUWait] == nil {
		return p
	}
	// The DataLoader's wait and GC are counted whole; where in the step
	// the thread waited for a CPU or was blocked is not known. The wait
	// for a CPU is taken to be spread evenly over the step; the blocked
	// time (off the CPU, not runnable) to be the DataLoader's wait first:
	// its workers' batches are waited for off the CPU (a loader without
	// workers loads on it, and its step's blocked time then shows as on
	// the CPU).
	p.split = true
	if d > 0 {
		p.q = min(*row[colCPUWait]*p.left/d, p.left)
	}
	p.off = max(0, d-*row[colCPU]-*row[colCPUWait])
	p.b = min(max(0, p.off-p.w), p.left-p.q)
	return p
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
