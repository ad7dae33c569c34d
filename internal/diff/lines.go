package diff

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// Noise thresholds of a line's change (see lineDeltas and docs/diff.md,
// "Python lines").
const (
	minLinePoints     = 2.0
	lineSigmas        = 3.0
	lineSigmasFinding = 2.0
	// maxBlocked: when collections the sampler could not sample took
	// more than this share of a run's step, the sampler's other lines in
	// that run are biased (blocked; only timed lines are compared).
	maxBlocked = 0.10
)

// LineTimes is one process's main-thread Python time per user line, for
// the comparison of lines (see PyLines).
type LineTimes struct {
	// Steps is the number of steps the agent timed outside the profiled
	// window, StepS their mean (seconds); AllStepsS the time of every
	// step; IntervalS the sampler's period outside the window.
	Steps     int
	StepS     float64
	AllStepsS float64
	IntervalS float64
	Lines     map[lineKey]*lineTime
	// root is the program's directory (sourceRoot).
	root string
	// texts: "function: source" of the lines by their numbered key (the
	// agent records the program's source lines; empty before it did).
	texts map[lineKey]string
}

// textKey is the key of a line by its function and source when the run
// recorded it, else by its number.
func (t *LineTimes) textKey(file string, line int) lineKey {
	k := t.key(file, line)
	if src := t.texts[k]; src != "" {
		return lineKey{file: k.file, text: src}
	}
	return k
}

// byText re-keys the lines by textKey; statements with the same text in
// one function become one.
func (t *LineTimes) byText() map[lineKey]*lineTime {
	out := map[lineKey]*lineTime{}
	for _, l := range t.Lines {
		k := t.textKey(l.file, l.line)
		o := out[k]
		if o == nil {
			c := *l
			out[k] = &c
			continue
		}
		o.sampledS += l.sampledS
		o.gcS += l.gcS
		o.explicit = o.explicit || l.explicit
		o.io = o.io || l.io
	}
	return out
}

// key names a line of this run across runs (see lineKey).
func (t *LineTimes) key(file string, line int) lineKey {
	if rel, err := filepath.Rel(t.root, file); t.root != "" && err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		return lineKey{file: rel, line: line}
	}
	return lineKey{file: file, line: line}
}

// lineKey names a line across runs: its file relative to the program's
// directory (see sourceRoot), so that two checkouts at different paths
// compare, and its number or, when both runs recorded the program's
// source, its function and text (line 0): a line added above others
// moves them, and their numbers would pair different statements.
type lineKey struct {
	file string
	line int
	text string
}

type lineTime struct {
	file, fn string // the file's path as recorded
	line     int
	// sampledS: wall-clock seconds of main-thread samples outside the
	// profiled window (the profiler inflates its steps) whose innermost
	// user frame is the line (the time of the library code it called
	// included); gcS: the pauses of the collections that began at the
	// line over the run (the agent's gc callbacks), which the sampler
	// under-counts (a collection holds the GIL the sampler needs).
	sampledS, gcS float64
	// explicit: the line calls gc.collect; io: the diagnosis counts it as
	// a line that led into file I/O.
	explicit, io bool
}

// share is the line's share of the mean step, and k the number of
// samples a share of 1 holds (the sampling error of a share s is about
// sqrt(s·k)/k); k is 0 when the pauses of the gc.collect calls at the
// line, which are timed, give the larger share. Automatic collections
// begin at whichever line allocates when a threshold is crossed, a
// different one from run to run: the sampler's count stands for those.
func (t *LineTimes) share(l *lineTime) (share, k float64) {
	denom := float64(t.Steps) * t.StepS
	k = denom / t.IntervalS
	if l == nil {
		return 0, k
	}
	s, g := l.sampledS/denom, l.gcS/t.AllStepsS
	if g > s && l.explicit {
		return g, 0
	}
	return s, k
}

// blocked is the share of the step the sampler lost to garbage
// collections: the gc callbacks timed more at a line than its samples
// hold (a collection holds the GIL the sampler needs). Then the sampler
// also wakes in step with the collections, and the other lines' samples
// lean towards the code just after them.
func (t *LineTimes) blocked() float64 {
	var b float64
	for _, l := range t.Lines {
		b += max(0, l.gcS/t.AllStepsS-l.sampledS/(float64(t.Steps)*t.StepS))
	}
	return b
}

// excessVar is the sampling variance (µs²) of a line's excess un − f·ub
// were the line unchanged (un = f·ub): ub and un are its times per step
// in runs of median steps mb and mn whose share of 1 holds kb and kn
// samples (0: timed, no sampling error). A count of n samples varies by
// about sqrt(n); the line's unchanged time is estimated from both runs'
// counts (pooled), so that a line sampled n times in one run only is
// known to within sqrt(n) samples.
func excessVar(ub, un, f, mb, mn, kb, kn float64) float64 {
	wb, wn := kb/mb, kn/mn // samples per µs of time per step
	var u float64          // the base time, were the line unchanged
	switch {
	case wb == 0 && wn == 0:
		return 0
	case wb == 0:
		u = ub
	case wn == 0:
		u = un / f
	default:
		u = (ub*wb + un*wn) / (wb + f*wn)
	}
	var v float64
	if wn > 0 {
		v += f * u / wn
	}
	if wb > 0 {
		v += f * f * u / wb
	}
	return v
}

// PyLines measures the main-thread time per user line of the first
// process of a run directory (rank 0 speaks for the run) from its
// sampled Python profile: each sample goes to its innermost user line
// (pyprofile.User, as the diagnosis's `where` lines); imports and the
// profiled window are left out. The gc callbacks' pauses per line, and
// the diagnosis's I/O lines, are added. Nil without a sampled profile or
// steps timed outside the window.
func PyLines(runs []*rundir.Run) *LineTimes {
	for _, run := range runs {
		for _, p := range run.Processes {
			if p.Profile == nil || p.Profile.Profiler != "sample" || p.Profile.IntervalS <= 0 || p.Evidence == nil {
				continue
			}
			t := &LineTimes{IntervalS: p.Profile.IntervalS, Lines: map[lineKey]*lineTime{}}
			var outside float64
			for _, st := range p.Evidence.StepSeries() {
				t.AllStepsS += max(0, st.DurS)
				if !st.InWindow {
					t.Steps++
					outside += max(0, st.DurS)
				}
			}
			if t.Steps == 0 || outside <= 0 {
				continue
			}
			t.StepS = outside / float64(t.Steps)
			t.root = sourceRoot(run.Manifest)
			at := func(file string, line int, fn string) *lineTime {
				k := t.key(file, line)
				if t.Lines[k] == nil {
					t.Lines[k] = &lineTime{file: file, fn: fn, line: line}
				}
				return t.Lines[k]
			}
			t.texts = map[lineKey]string{}
			for _, f := range p.Profile.Frames {
				if f.Text != "" {
					t.texts[t.key(f.File, f.Line)] = f.Func + ": " + f.Text
				}
			}
			// the whole run's samples less the window's
			for _, window := range []bool{false, true} {
				top := p.Profile.TopSites(pyprofile.Options{Role: "main", Window: window, Attribution: pyprofile.User, SkipImports: true})
				for _, s := range top.BySelf {
					if !s.User {
						continue
					}
					if l := at(s.File, s.Line, s.Func); window {
						l.sampledS = max(0, l.sampledS-s.SelfS)
					} else {
						l.sampledS += s.SelfS
					}
				}
			}
			if ps := p.Evidence.PerStep; ps != nil {
				for _, g := range ps.GC.Sites {
					l := at(g.File, g.Line, g.Func)
					l.gcS += g.PauseS
					l.explicit = l.explicit || g.Explicit
				}
			}
			// over the whole run, as the line times: a short step's I/O can
			// miss the few samples of the profiled window
			if ev := runevidence.FromWholeRun(p.Profile); ev != nil {
				for _, io := range ev.IOLines {
					at(io.File, io.Line, io.Func).io = true
				}
			}
			return t
		}
	}
	return nil
}

// sourceRoot is the directory of the program's script (else the working
// directory it ran in): lines are named relative to it across runs.
func sourceRoot(m *rundir.Manifest) string {
	if m == nil {
		return ""
	}
	c := m.Command
	if c.Mode == "script" && c.Target != "" {
		if filepath.IsAbs(c.Target) {
			return filepath.Dir(c.Target)
		}
		if c.Cwd != "" {
			return filepath.Join(c.Cwd, filepath.Dir(c.Target))
		}
	}
	return c.Cwd
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

// lineDeltas compares the runs' line times. A machine that got slower
// or faster (load, clocks) stretches every line alike; the code changed
// a line when its time moved away from that common factor. The factor
// is the median of the ratios new/base of the lines both runs spent time
// in, weighted by the smaller of their two times (machineFactor). A
// line is listed when its excess over the factor (new − factor × base) is at least lineSigmas
// standard errors of the sampling (a line sampled n times varies by
// about sqrt(n) samples; lineSigmasFinding for the line a finding of
// one run only points at), at least minLinePoints points of the step,
// the headline interval's half-width of the line's time (the run-to-run
// noise of the step, in proportion) and, for a line that ran before, the
// scatter of the other lines' ratios (ratioSpread) and the step's drift
// within either run of its larger time, and its time per step moved the
// same way. When the sampler was blocked by collections in a
// run (blocked), only the lines the gc callbacks timed are compared.
func lineDeltas(b, n *sideData, h Headline) []LineDelta {
	tb, tn := b.lines, n.lines
	mb, mn := b.summary.MedianUs, n.summary.MedianUs
	if tb == nil || tn == nil || mb <= 0 || mn <= 0 {
		return []LineDelta{}
	}
	// the headline interval's half-width relative to the new step (the
	// interval is of new/base)
	noise := 0.0
	if h.NoiseKnown && 1+h.DeltaPct/100 > 0 {
		noise = (h.HighPct - h.LowPct) / 2 / 100 / (1 + h.DeltaPct/100)
	}
	linesB, linesN, keyB, keyN := tb.Lines, tn.Lines, tb.key, tn.key
	if len(tb.texts) > 0 && len(tn.texts) > 0 {
		linesB, linesN, keyB, keyN = tb.byText(), tn.byText(), tb.textKey, tn.textKey
	}
	flagged := findingLines(b.side.Report, n.side.Report, keyB, keyN)
	keys := map[lineKey]bool{}
	for k := range linesB {
		keys[k] = true
	}
	for k := range linesN {
		keys[k] = true
	}
	type pair struct {
		k              lineKey
		lb, ln         *lineTime
		ub, un, kb, kn float64 // µs per step, samples per share (see share)
	}
	var pairs []pair
	for k := range keys {
		p := pair{k: k, lb: linesB[k], ln: linesN[k]}
		sb, kb := tb.share(p.lb)
		sn, kn := tn.share(p.ln)
		p.ub, p.kb, p.un, p.kn = sb*mb, kb, sn*mn, kn
		pairs = append(pairs, p)
	}
	ratios := make([][2]float64, 0, len(pairs))
	for _, p := range pairs {
		if p.ub > 0 && p.un > 0 {
			// weighed by the smaller time: a line the code made far
			// costlier does not outweigh the lines that kept their work
			ratios = append(ratios, [2]float64{p.un / p.ub, min(p.ub, p.un)})
		}
	}
	factor := machineFactor(ratios, mn/mb)
	spread := ratioSpread(ratios, factor)
	biased := tb.blocked() > maxBlocked || tn.blocked() > maxBlocked
	// a machine whose speed changed within a run (the step's drift, as
	// the warnings say) changes a line's time by as much between runs,
	// and not alike for every line: on a 2-core machine at load 5, with
	// a run's step drifting 76%, the same program's optimizer line took
	// 2.7x its time in the other run, its matmuls 1.1x
	drift := 0.0
	for _, d := range []*sideData{b, n} {
		for _, pct := range drifting(d.side.Run) {
			drift = max(drift, abs(pct)/100)
		}
	}
	out := []LineDelta{}
	for _, p := range pairs {
		if timed := p.kb == 0 || p.kn == 0; biased && !timed {
			continue
		}
		d := LineDelta{File: p.k.file, Line: p.k.line, BaseUs: p.ub, NewUs: p.un, DeltaUs: p.un - p.ub,
			BasePct: 100 * p.ub / mb, NewPct: 100 * p.un / mn, Source: "sampled"}
		excess := p.un - factor*p.ub
		note, byFinding := flagged[p.k]
		sigmas := lineSigmas
		if byFinding {
			sigmas = lineSigmasFinding
		}
		minUs := max(minLinePoints/100*mb, noise*max(p.ub, p.un), lineSigmas*spread*factor*p.ub)
		if p.ub > 0 {
			minUs = max(minUs, drift*max(p.ub, p.un))
		}
		se := math.Sqrt(excessVar(p.ub, p.un, factor, mb, mn, p.kb, p.kn))
		if abs(excess) < minUs || abs(excess) < sigmas*se || (excess > 0) != (d.DeltaUs > 0) || d.DeltaUs == 0 {
			continue
		}
		for _, l := range []*lineTime{p.ln, p.lb} {
			if l == nil {
				continue
			}
			if d.Func == "" && l.file != "" {
				d.File, d.Func, d.Line = l.file, l.fn, l.line
			}
			if l.explicit && l.gcS > l.sampledS { // see share
				d.Source = "gc pauses"
			}
		}
		switch {
		case p.ub == 0:
			d.Kind = "new"
		case p.un == 0:
			d.Kind = "gone"
		}
		if (p.ln != nil && p.ln.explicit) || (p.lb != nil && p.lb.explicit) {
			d.Notes = append(d.Notes, "calls gc.collect")
		}
		if (p.ln != nil && p.ln.io) || (p.lb != nil && p.lb.io) {
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

// ratioSpread is how much the lines' ratios ({ratio, weight}) scatter
// around the factor: the weighted mean of |log(ratio/factor)|. Under a
// heavily loaded machine the lines that kept their work do not all
// stretch alike (forward 1.36x and backward 1.0x in one pair measured
// here); a line that ran before is named only when its excess exceeds
// lineSigmas times that scatter of its expected time. An added line
// (no base time) is not concerned.
func ratioSpread(ratios [][2]float64, factor float64) float64 {
	var sum, w float64
	for _, r := range ratios {
		sum += r[1] * abs(math.Log(r[0]/factor))
		w += r[1]
	}
	if w == 0 {
		return 0
	}
	return sum / w
}

// machineFactor is the weighted median of ratios ({ratio, weight}), or
// def without any: how much the machine alone stretched the lines. When
// the code changed lines holding most of the time, it takes their
// change for the machine's and those lines are not named (the kernels
// and operators are).
func machineFactor(ratios [][2]float64, def float64) float64 {
	if len(ratios) == 0 {
		return def
	}
	slices.SortFunc(ratios, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
	var total, acc float64
	for _, r := range ratios {
		total += r[1]
	}
	for _, r := range ratios {
		if acc += r[1]; acc >= total/2 {
			return r[0]
		}
	}
	return ratios[len(ratios)-1][0]
}

// oneRunFindings are the findings of from whose rule other lacks, with
// at least twice the diagnosis's threshold at stake: a finding near its
// threshold comes and goes between runs of the same program (pair (a)
// of docs/diff.md: "Python between ops takes 5% of the step" in one of
// two identical runs).
func oneRunFindings(from, other []diagnose.Finding) []diagnose.Finding {
	var out []diagnose.Finding
	for _, f := range from {
		if f.AtStakePct >= 2*100*diagnose.Default.MinFinding && !slices.ContainsFunc(other, func(o diagnose.Finding) bool { return o.Rule == f.Rule }) {
			out = append(out, f)
		}
	}
	return out
}

// findingLines are the Python lines that a diagnosis finding of one run
// only (by rule, oneRunFindings) points at first (its other `where` lines are context,
// such as the hottest lines): "new: <title>" or "gone: <title>".
func findingLines(base, next *report.Report, keyB, keyN func(string, int) lineKey) map[lineKey]string {
	out := map[lineKey]string{}
	fb, fn := findingsOf(base), findingsOf(next)
	mark := func(from, other []diagnose.Finding, tag string, key func(string, int) lineKey) {
		for _, f := range oneRunFindings(from, other) {
			for _, w := range f.Where {
				if w.Kind != "python" || w.File == "" {
					continue
				}
				if k := key(w.File, w.Line); out[k] == "" {
					out[k] = tag + ": " + f.Title
				}
				break
			}
		}
	}
	mark(fn, fb, "new", keyN)
	mark(fb, fn, "gone", keyB)
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
