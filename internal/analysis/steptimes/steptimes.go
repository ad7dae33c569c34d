// Package steptimes summarises the duration of every step of a run (not
// only the profiled window's): the warm-up at its start, outlier steps,
// drift over the run, and a sparkline of the series.
package steptimes

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Step is one step of the run as the agent timed it.
type Step struct {
	N        int
	StartS   float64 // since the agent started
	DurS     float64
	InWindow bool // inside the profiler's recorded window
	// CPUWaitS: the step thread's time runnable but waiting for a CPU
	// during the step (Linux schedstat; 0 where not measured).
	CPUWaitS float64
	// LoaderWaitS: the step's time waiting in a DataLoader's next().
	LoaderWaitS float64
	// Items: the calls in the step of the models called on one sample
	// (a policy per environment step); 0 where not counted.
	Items int
	// Calls: the step's outermost nn.Module calls, on the steps the agent
	// counted them (one in every few); 0 where not counted.
	Calls int
}

// Thresholds of the summary.
const (
	// WarmupFactor: the leading steps longer than this multiple of the
	// median step are warm-up (compilation, allocator growth, caches).
	WarmupFactor = 1.5
	// OutlierFactor: a later step longer than this multiple of the median
	// is an outlier (the window check uses the same factor).
	OutlierFactor = 2.0
	// MinDriftSteps: drift needs this many steps after warm-up;
	// DriftPct: and is reported from this change between the first and
	// the last quarter's median.
	MinDriftSteps = 8
	DriftPct      = 10.0
	// Columns is the sparkline's width at most.
	Columns = 60
)

// Summary describes the series.
type Summary struct {
	Steps   int     `json:"steps"`
	MedianS float64 `json:"median_s"`
	// Warmup are the leading steps above WarmupFactor × the median;
	// WarmupS their total time.
	Warmup  []int   `json:"warmup,omitempty"`
	WarmupS float64 `json:"warmup_s,omitempty"`
	// Outliers are the later steps above OutlierFactor × the median.
	Outliers []int `json:"outliers,omitempty"`
	// DriftPct is the last quarter's median step against the first
	// quarter's, warm-up and outliers left out, in percent (0 when too
	// few steps).
	DriftPct float64 `json:"drift_pct"`
	// Spark draws the series, one column per StepsPerColumn steps (each
	// column the slowest of its steps); Window marks the profiled
	// window's columns with '^'.
	Spark          string `json:"spark"`
	Window         string `json:"window,omitempty"`
	StepsPerColumn int    `json:"steps_per_column"`
}

// Summarize returns the summary of the steps (in order), nil for none.
func Summarize(steps []Step) *Summary {
	var durs []float64
	for _, s := range steps {
		if s.DurS > 0 {
			durs = append(durs, s.DurS)
		}
	}
	if len(durs) == 0 {
		return nil
	}
	med := median(durs)
	sum := &Summary{Steps: len(steps), MedianS: med}
	rest := steps
	for len(rest) > 0 && rest[0].DurS > WarmupFactor*med {
		sum.Warmup = append(sum.Warmup, rest[0].N)
		sum.WarmupS += rest[0].DurS
		rest = rest[1:]
	}
	var usual []float64 // neither warm-up nor outliers: what drift compares
	for _, s := range rest {
		if s.DurS > OutlierFactor*med {
			sum.Outliers = append(sum.Outliers, s.N)
		} else if s.DurS > 0 {
			usual = append(usual, s.DurS)
		}
	}
	if q := len(usual) / 4; len(usual) >= MinDriftSteps {
		if m := median(usual[:q]); m > 0 {
			sum.DriftPct = 100 * (median(usual[len(usual)-q:])/m - 1)
		}
	}
	sum.Spark, sum.Window, sum.StepsPerColumn = spark(steps)
	return sum
}

// Notes are the summary's findings in words (none for a steady series).
func (s *Summary) Notes() []string {
	var out []string
	if n := len(s.Warmup); n > 0 {
		out = append(out, fmt.Sprintf("warm-up: %s (%s, %.0fx the median step)", stepRange(s.Warmup), units.Seconds(s.WarmupS), s.WarmupS/float64(n)/s.MedianS))
	}
	if n := len(s.Outliers); n > 0 {
		list := s.Outliers
		more := ""
		if n > 8 {
			list, more = list[:8], fmt.Sprintf(" and %d more", n-8)
		}
		out = append(out, fmt.Sprintf("%s (over %.0fx the median): %s%s", units.Things(n, "outlier step"), OutlierFactor, joinInts(list), more))
	}
	if d := s.DriftPct; d >= DriftPct || d <= -DriftPct {
		dir := "longer"
		if d < 0 {
			dir = "shorter"
		}
		out = append(out, fmt.Sprintf("drift: the last quarter's median step is %.0f%% %s than the first quarter's", math.Abs(d), dir))
	}
	return out
}

// spark draws one column per group of steps, the slowest of the group,
// on a scale from the fastest step to the slowest.
func spark(steps []Step) (line, window string, per int) {
	const levels = "▁▂▃▄▅▆▇█"
	bars := []rune(levels)
	per = (len(steps) + Columns - 1) / Columns
	lo, hi := steps[0].DurS, steps[0].DurS
	for _, s := range steps {
		lo, hi = min(lo, s.DurS), max(hi, s.DurS)
	}
	var b, w strings.Builder
	anyWindow := false
	for i := 0; i < len(steps); i += per {
		group := steps[i:min(i+per, len(steps))]
		top, in := 0.0, false
		for _, s := range group {
			top = max(top, s.DurS)
			in = in || s.InWindow
		}
		level := 0
		if hi > lo {
			level = int(float64(len(bars)-1) * (top - lo) / (hi - lo))
		}
		b.WriteRune(bars[level])
		if in {
			w.WriteByte('^')
			anyWindow = true
		} else {
			w.WriteByte(' ')
		}
	}
	if !anyWindow {
		return b.String(), "", per
	}
	return b.String(), strings.TrimRight(w.String(), " "), per
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// stepRange writes consecutive step numbers as "steps 1-3" or "step 1".
func stepRange(ns []int) string {
	if len(ns) == 1 {
		return fmt.Sprintf("step %d", ns[0])
	}
	return fmt.Sprintf("steps %d-%d", ns[0], ns[len(ns)-1])
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}
