package live

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// Frame is the terminal view: a few lines, each at most width-1 columns
// (the caller draws them in a region of their own). Names from the
// program and its snapshots are escaped.
func Frame(v View, width int) []string {
	head := "bottleneck --live"
	if v.Title != "" {
		head += ": " + textsafe.Text(v.Title)
	}
	lines := []string{head}
	switch len(v.Ranks) {
	case 0:
		lines = append(lines, "waiting for the first step")
	case 1:
		r := v.Ranks[0]
		lines = append(lines, fmt.Sprintf("%s · step %d · %s · %s", textsafe.Text(r.Tag), r.Step, rate(r), state(r)))
		if r.Steps == 0 {
			lines = append(lines, "no step timed yet")
			break
		}
		lines = append(lines,
			fmt.Sprintf("step now %s · median %s · p90 %s (last %s)", units.Seconds(r.NowS), units.Seconds(r.MedianS), units.Seconds(r.P90S), units.Things(r.Steps, "step")),
			fmt.Sprintf("last %s: %s", units.Things(len(r.Recent), "step"), Sparkline(r.Recent)),
			breakdown(r))
		if s := splitText(r, " · "); s != "" {
			lines = append(lines, "  "+s)
		}
		lines = append(lines, memory(r), causeText(r.Cause))
	default:
		shown, more := rankRows(v.Ranks)
		for _, r := range shown {
			mark := "  "
			if r.Slowest {
				mark = "▶ "
			}
			onCPU, blocked := "on CPU     -", "    -"
			switch {
			case r.OnCPUSplit:
				onCPU = fmt.Sprintf("Python %4.1f%%  native %4.1f%%", 100*r.Python, 100*r.Native)
			case r.Split > 0:
				onCPU = fmt.Sprintf("on CPU %4.1f%%", 100*r.Running)
			}
			if r.Split > 0 {
				blocked = fmt.Sprintf("%4.1f%%", 100*r.Blocked)
			}
			if r.BlockedSplit {
				blocked += fmt.Sprintf(" (comm %.1f%%, ranks %.1f%%)", 100*r.Comm, 100*r.RankWait)
			}
			s := fmt.Sprintf("%s%-6s step %-6d now %-8s median %-8s p90 %-8s data %4.1f%%  GC %4.1f%%  %s  blocked %s  RSS %s %s  %s",
				mark, textsafe.Text(r.Tag), r.Step, units.Seconds(r.NowS), units.Seconds(r.MedianS), units.Seconds(r.P90S),
				100*r.DataWait, 100*r.GC, onCPU, blocked, bytesOr(r.RSS), trendText(r.RSSPerStep, r.Steps), state(r))
			lines = append(lines, s)
		}
		if more > 0 {
			lines = append(lines, fmt.Sprintf("  … and %s with a lower median", units.Things(more, "more rank")))
		}
		for _, r := range v.Ranks {
			if r.Slowest {
				lines = append(lines, fmt.Sprintf("slowest, %s, last %s: %s", textsafe.Text(r.Tag), units.Things(len(r.Recent), "step"), Sparkline(r.Recent)),
					textsafe.Text(r.Tag)+": "+breakdownParts(r, " · ", false))
				if s := splitText(r, " · "); s != "" {
					lines = append(lines, textsafe.Text(r.Tag)+": "+s)
				}
				lines = append(lines, textsafe.Text(r.Tag)+": "+causeText(r.Cause))
			}
		}
	}
	if v.Window != nil {
		lines = append(lines, v.Window.Text())
	}
	for i, l := range lines {
		lines[i] = clip(l, width-1)
	}
	return lines
}

// MaxRankRows bounds the frame's rank rows: the slowest ranks are shown.
const MaxRankRows = 8

// rankRows returns the ranks the frame shows, in tag order: all of them,
// or the MaxRankRows with the highest medians; and how many are left out.
func rankRows(ranks []Rank) ([]Rank, int) {
	if len(ranks) <= MaxRankRows {
		return ranks, 0
	}
	idx := make([]int, len(ranks))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return ranks[idx[a]].MedianS > ranks[idx[b]].MedianS })
	idx = idx[:MaxRankRows]
	sort.Ints(idx)
	shown := make([]Rank, 0, MaxRankRows)
	for _, i := range idx {
		shown = append(shown, ranks[i])
	}
	return shown, len(ranks) - MaxRankRows
}

// Line is the view as one plain line, for a stderr that is not a
// terminal (a log, CI).
func Line(v View) string {
	if len(v.Ranks) == 0 {
		return "bottleneck live: waiting for the first step"
	}
	var parts []string
	for _, r := range v.Ranks {
		s := fmt.Sprintf("%s step %d", textsafe.Text(r.Tag), r.Step)
		if r.Steps > 0 {
			s += fmt.Sprintf(" (%s), now %s, median %s, p90 %s; %s",
				rate(r), units.Seconds(r.NowS), units.Seconds(r.MedianS), units.Seconds(r.P90S),
				breakdownParts(r, ", ", true))
		}
		if r.RSS != nil {
			s += "; " + memory(r)
		}
		if r.Cause != nil {
			s += "; " + causeText(r.Cause)
		}
		s += "; " + state(r)
		if r.Slowest {
			s += " (slowest)"
		}
		parts = append(parts, s)
	}
	return "bottleneck live: " + strings.Join(parts, " | ")
}

// Sparkline draws durations as bars from the fastest (▁) to the slowest
// (█); steps within 5% of each other are drawn alike (▄), so noise does
// not look like a change.
func Sparkline(xs []float64) string {
	const bars = "▁▂▃▄▅▆▇█"
	runes := []rune(bars)
	if len(xs) == 0 {
		return ""
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	var b strings.Builder
	for _, x := range xs {
		k := 3
		if hi-lo > 0.05*hi {
			k = int(math.Round((x - lo) / (hi - lo) * float64(len(runes)-1)))
		}
		b.WriteRune(runes[k])
	}
	return b.String()
}

func rate(r Rank) string {
	s := perSecond(r.Rate, "steps/s")
	if r.SamplesPerS > 0 {
		s += " · " + perSecond(r.SamplesPerS, "samples/s")
	}
	return s
}

func perSecond(x float64, unit string) string {
	switch {
	case x == 0:
		return "- " + unit
	case x >= 100:
		return fmt.Sprintf("%.0f %s", x, unit) // not 2.35e+03
	}
	return fmt.Sprintf("%.3g %s", x, unit)
}

func state(r Rank) string {
	switch r.State {
	case "recording":
		return fmt.Sprintf("recording window %d", r.Window+1)
	case "waiting":
		if r.Window > 0 {
			return "waiting for the next window"
		}
		return "waiting for the window"
	case "done":
		return "window recorded"
	case "off":
		return "no trace window"
	case "ended":
		return "program ended"
	case "failed":
		return "profiler failed"
	case "yielded":
		return "the program's own profiler runs"
	}
	return textsafe.Text(r.State)
}

func breakdown(r Rank) string {
	if r.BreakdownN == 0 {
		return "breakdown: no step time yet"
	}
	return breakdownParts(r, " · ", false)
}

// breakdownParts: the last steps' time, the parts joined by sep; the
// scheduler's parts only when some steps had them, and with inline the
// sampler's split of them in parentheses (else splitText has it).
func breakdownParts(r Rank, sep string, inline bool) string {
	if r.BreakdownN == 0 {
		return "no step time yet"
	}
	parts := []string{fmt.Sprintf("data wait %.1f%%", 100*r.DataWait), fmt.Sprintf("GC %.1f%%", 100*r.GC)}
	if r.Split > 0 {
		onCPU, blocked := fmt.Sprintf("on CPU %.1f%%", 100*r.Running), fmt.Sprintf("blocked %.1f%%", 100*r.Blocked)
		if inline && r.OnCPUSplit {
			onCPU += " (" + onCPUParts(r, ", ") + ")"
		}
		if inline && r.BlockedSplit {
			blocked += " (" + blockedParts(r, ", ") + ")"
		}
		parts = append(parts, onCPU, blocked, fmt.Sprintf("CPU wait %.1f%%", 100*r.CPUWait))
	}
	if r.Split < r.BreakdownN {
		parts = append(parts, fmt.Sprintf("rest %.1f%%", 100*r.Rest))
	}
	return fmt.Sprintf("last %s: %s", units.Things(r.BreakdownN, "step"), strings.Join(parts, sep))
}

// splitText is the sampler's split of the time on a CPU and blocked, ""
// when it has none.
func splitText(r Rank, sep string) string {
	var parts []string
	if r.OnCPUSplit {
		parts = append(parts, "on CPU: "+onCPUParts(r, sep))
	}
	if r.BlockedSplit {
		parts = append(parts, "blocked: "+blockedParts(r, sep))
	}
	return strings.Join(parts, "; ")
}

func onCPUParts(r Rank, sep string) string {
	return fmt.Sprintf("Python %.1f%%%snative %.1f%%", 100*r.Python, sep, 100*r.Native)
}

// blockedParts: waiting for other ranks only where Build could tell it
// (several ranks sampled).
func blockedParts(r Rank, sep string) string {
	parts := []string{fmt.Sprintf("device %.1f%%", 100*r.Device), fmt.Sprintf("collectives %.1f%%", 100*r.Comm)}
	if r.RankWait > 0 {
		parts = append(parts, fmt.Sprintf("other ranks %.1f%%", 100*r.RankWait))
	}
	return strings.Join(append(parts, fmt.Sprintf("other %.1f%%", 100*r.OtherBlocked)), sep)
}

func memory(r Rank) string {
	s := "RSS " + bytesOr(r.RSS)
	if r.RSS != nil {
		s += " (" + trendText(r.RSSPerStep, r.Steps) + ")"
	}
	if r.CUDA != nil {
		s += " · CUDA allocated " + units.Bytes(*r.CUDA) + " (" + trendText(r.CUDAPerStep, r.Steps) + ")"
	}
	return "memory: " + s
}

func bytesOr(b *float64) string {
	if b == nil {
		return "-"
	}
	return units.Bytes(*b)
}

// trendText calls a change of less than 1 MiB over the steps steady.
func trendText(perStep float64, steps int) string {
	if math.Abs(perStep*float64(max(steps-1, 1))) < 1<<20 {
		return "steady"
	}
	sign := "+"
	if perStep < 0 {
		sign = "-"
	}
	return sign + units.Bytes(math.Abs(perStep)) + "/step"
}

func clip(s string, n int) string {
	r := []rune(s)
	if n < 2 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
