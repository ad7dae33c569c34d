package diff

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// Noise thresholds of a line's change (docs/diff.md, "Python lines"): its
// share of the step must move by at least minLinePoints percentage
// points and lineSigmas standard errors of the sampling.
const (
	minLinePoints = 2.0
	lineSigmas    = 3.0
)

// LineTimes is one process's main-thread Python time per user line over
// the whole run, for the comparison of lines (see PyLines).
type LineTimes struct {
	// Steps is the number of steps the agent timed, StepS their mean
	// (seconds), IntervalS the sampler's period outside the window.
	Steps     int
	StepS     float64
	IntervalS float64
	Lines     map[lineKey]*lineTime
}

type lineKey struct {
	file string
	line int
}

type lineTime struct {
	fn string
	// sampledS: wall-clock seconds of main-thread samples whose innermost
	// user frame is the line (the time of the library code it called
	// included); gcS: the pauses of the collections that began at the
	// line (the agent's gc callbacks), which the sampler under-counts (a
	// collection holds the GIL the sampler needs).
	sampledS, gcS float64
	// explicit: the line calls gc.collect; io: the diagnosis counts it as
	// a line that led into file I/O.
	explicit, io bool
}

// share is the line's share of the mean step and the standard error of
// that share from the sampling (a count of n samples varies by about
// sqrt(n)); 0 when the gc pauses, which are timed, give the larger share.
func (t *LineTimes) share(l *lineTime) (share, se float64) {
	if l == nil {
		return 0, 0
	}
	denom := float64(t.Steps) * t.StepS
	s, g := l.sampledS/denom, l.gcS/denom
	if g > s {
		return g, 0
	}
	// the window's faster samples are counted at the outer period: fewer
	// samples, a larger (safer) error
	n := l.sampledS / t.IntervalS
	return s, math.Sqrt(n) * t.IntervalS / denom
}

// PyLines measures the main-thread time per user line of the first
// process of a run directory (rank 0 speaks for the run) from its
// sampled Python profile: each sample goes to its innermost user line
// (pyprofile.User, as the diagnosis's `where` lines), imports left out;
// the gc callbacks' pauses per line, and the diagnosis's I/O lines, are
// added. Nil without a sampled profile or timed steps.
func PyLines(runs []*rundir.Run) *LineTimes {
	for _, run := range runs {
		for _, p := range run.Processes {
			if p.Profile == nil || p.Profile.Profiler != "sample" || p.Profile.IntervalS <= 0 || p.Evidence == nil {
				continue
			}
			steps := p.Evidence.StepSeries()
			var sum float64
			for _, st := range steps {
				sum += max(0, st.DurS)
			}
			if len(steps) == 0 || sum <= 0 {
				continue
			}
			t := &LineTimes{Steps: len(steps), StepS: sum / float64(len(steps)), IntervalS: p.Profile.IntervalS, Lines: map[lineKey]*lineTime{}}
			at := func(file string, line int, fn string) *lineTime {
				k := lineKey{file, line}
				if t.Lines[k] == nil {
					t.Lines[k] = &lineTime{fn: fn}
				}
				return t.Lines[k]
			}
			top := p.Profile.TopSites(pyprofile.Options{Role: "main", Attribution: pyprofile.User, SkipImports: true})
			for _, s := range top.BySelf {
				if s.User {
					at(s.File, s.Line, s.Func).sampledS += s.SelfS
				}
			}
			if ps := p.Evidence.PerStep; ps != nil {
				for _, g := range ps.GC.Sites {
					l := at(g.File, g.Line, g.Func)
					l.gcS += g.PauseS
					l.explicit = l.explicit || g.Explicit
				}
			}
			if ev := diagnose.FromProfile(p.Profile); ev != nil {
				for _, io := range ev.IOLines {
					at(io.File, io.Line, io.Func).io = true
				}
			}
			return t
		}
	}
	return nil
}

// LineDelta is one Python line whose time per step changed beyond the
// noise.
type LineDelta struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Func string `json:"func"`
	// BaseUs/NewUs: the line's time per step (its share of the step ×
	// the run's median step); DeltaUs their difference.
	BaseUs  float64 `json:"base_us_per_step"`
	NewUs   float64 `json:"new_us_per_step"`
	DeltaUs float64 `json:"delta_us_per_step"`
	// BasePct/NewPct: its share of its run's step.
	BasePct float64 `json:"base_pct"`
	NewPct  float64 `json:"new_pct"`
	// SharePct is DeltaUs as a share of the headline's step-time change.
	SharePct float64 `json:"share_of_change_pct"`
	// Source says how the time was measured: "sampled" (the Python
	// sampler, innermost user line) or "gc pauses" (the gc callbacks).
	Source string `json:"source"`
	// Kind: "new" or "gone" when the line had no time in the other run.
	Kind string `json:"kind,omitempty"`
	// Notes: what else points at the line (gc.collect, file I/O, a
	// diagnosis finding present in one run only).
	Notes []string `json:"notes,omitempty"`
}

// Where is the line as file:line (func).
func (l LineDelta) Where() string {
	return fmt.Sprintf("%s:%d (%s)", l.File, l.Line, l.Func)
}

// lineDeltas compares the runs' line times. A line is listed when its
// time per step moved by at least minUs (1% of the base step, and the
// headline interval's half-width: the run-to-run noise of the step) and
// its share of the step moved the same way by at least minLinePoints
// points and lineSigmas sampling errors: a machine that got slower
// stretches every line alike (the shares stay), and the share of a line
// sampled a few times varies by chance. A line that a diagnosis finding
// of one run only points at needs the time threshold alone.
func lineDeltas(b, n *sideData, h Headline) []LineDelta {
	tb, tn := b.lines, n.lines
	if tb == nil || tn == nil || b.summary.MedianUs <= 0 || n.summary.MedianUs <= 0 {
		return []LineDelta{}
	}
	minUs := 0.01 * b.summary.MedianUs
	if h.NoiseKnown {
		minUs = max(minUs, (h.HighPct-h.LowPct)/2/100*b.summary.MedianUs)
	}
	flagged := findingLines(b.side.Report, n.side.Report)
	keys := map[lineKey]bool{}
	for k := range tb.Lines {
		keys[k] = true
	}
	for k := range tn.Lines {
		keys[k] = true
	}
	out := []LineDelta{}
	for k := range keys {
		lb, ln := tb.Lines[k], tn.Lines[k]
		sb, eb := tb.share(lb)
		sn, en := tn.share(ln)
		d := LineDelta{File: k.file, Line: k.line, BaseUs: sb * b.summary.MedianUs, NewUs: sn * n.summary.MedianUs,
			BasePct: 100 * sb, NewPct: 100 * sn, Source: "sampled"}
		d.DeltaUs = d.NewUs - d.BaseUs
		dShare := sn - sb
		note, byFinding := flagged[k]
		sameWay := dShare != 0 && (dShare > 0) == (d.DeltaUs > 0)
		beyond := abs(dShare)*100 >= minLinePoints && abs(dShare) >= lineSigmas*math.Hypot(eb, en)
		if abs(d.DeltaUs) < minUs || !sameWay || (!beyond && !byFinding) {
			continue
		}
		for _, l := range []*lineTime{ln, lb} {
			if l == nil {
				continue
			}
			if d.Func == "" {
				d.Func = l.fn
			}
			if l.gcS > l.sampledS { // see share
				d.Source = "gc pauses"
			}
		}
		switch {
		case sb == 0:
			d.Kind = "new"
		case sn == 0:
			d.Kind = "gone"
		}
		if (ln != nil && ln.explicit) || (lb != nil && lb.explicit) {
			d.Notes = append(d.Notes, "calls gc.collect")
		}
		if (ln != nil && ln.io) || (lb != nil && lb.io) {
			d.Notes = append(d.Notes, "file I/O")
		}
		if byFinding {
			d.Notes = append(d.Notes, note)
		}
		if h.DeltaUs != 0 {
			d.SharePct = 100 * d.DeltaUs / h.DeltaUs
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(x, y LineDelta) int {
		return cmp.Or(cmp.Compare(abs(y.DeltaUs), abs(x.DeltaUs)), cmp.Compare(x.File, y.File), cmp.Compare(x.Line, y.Line))
	})
	if len(out) > 10 {
		out = out[:10]
	}
	return out
}

// findingLines are the Python lines that a diagnosis finding of one run
// only (by rule) points at: "new: <title>" or "gone: <title>".
func findingLines(base, next *report.Report) map[lineKey]string {
	out := map[lineKey]string{}
	fb, fn := findingsOf(base), findingsOf(next)
	mark := func(from, other []diagnose.Finding, tag string) {
		for _, f := range from {
			if slices.ContainsFunc(other, func(o diagnose.Finding) bool { return o.Rule == f.Rule }) {
				continue
			}
			for _, w := range f.Where {
				k := lineKey{w.File, w.Line}
				if w.Kind != "python" || w.File == "" || out[k] != "" {
					continue
				}
				out[k] = tag + ": " + f.Title
			}
		}
	}
	mark(fn, fb, "new")
	mark(fb, fn, "gone")
	return out
}

// findingsOf is a run's diagnosis findings: across ranks with several
// traces, else the first diagnosed trace's.
func findingsOf(r *report.Report) []diagnose.Finding {
	if r == nil {
		return nil
	}
	if r.Diagnosis != nil {
		return r.Diagnosis.Findings
	}
	for _, t := range r.Traces {
		if t.Diagnosis != nil {
			return t.Diagnosis.Findings
		}
	}
	return nil
}

// lineCause is the headline's phrase for the line that moved most in the
// change's direction ("" when none).
func lineCause(r *Result) string {
	for _, l := range r.Lines {
		if l.DeltaUs == 0 || (l.DeltaUs > 0) != (r.Headline.DeltaUs > 0) {
			continue
		}
		s := fmt.Sprintf("line %s:%d (%s): %s per step (%+.0f%% of the step change)", report.Printable(shortFile(l.File)), l.Line,
			report.Printable(l.Func), signed(l.DeltaUs), l.SharePct)
		if l.Kind != "" {
			s += ", " + l.Kind
		}
		if len(l.Notes) > 0 {
			s += "; " + report.Printable(strings.Join(l.Notes, "; "))
		}
		return s
	}
	return ""
}

// shortFile keeps the last two path elements of a source file.
func shortFile(f string) string {
	dir, base := filepath.Split(filepath.Clean(f))
	if parent := filepath.Base(dir); dir != "" && parent != "/" && parent != "." {
		return parent + "/" + base
	}
	return base
}
