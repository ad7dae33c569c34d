package diff

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/steptimes"
	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/runreport"
)

// lineSide is a run of 100 steps of stepMs whose lines took the given
// sampled seconds (20 ms sampler) and gc pauses over the run.
func lineSide(stepMs float64, sampled, gc map[int]float64, findings ...diagnose.Finding) *sideData {
	return lineSideN(100, stepMs, sampled, gc, findings...)
}

// lineSideN is lineSide with steps steps.
func lineSideN(steps int, stepMs float64, sampled, gc map[int]float64, findings ...diagnose.Finding) *sideData {
	t := &LineTimes{Steps: steps, StepS: stepMs / 1e3, AllStepsS: float64(steps) * stepMs / 1e3, IntervalS: 0.02, Lines: map[lineKey]*lineTime{}}
	at := func(line int) *lineTime {
		k := lineKey{file: "/src/train.py", line: line}
		if t.Lines[k] == nil {
			t.Lines[k] = &lineTime{file: k.file, fn: "main", line: line}
		}
		return t.Lines[k]
	}
	for line, s := range sampled {
		at(line).sampledS = s
	}
	for line, s := range gc {
		at(line).gcS = s
		at(line).explicit = true
	}
	rep := &report.Report{Traces: []report.TraceReport{{Diagnosis: &diagnose.Diagnosis{Findings: findings}}}}
	return &sideData{side: &Side{Report: rep}, summary: SideSummary{MedianUs: stepMs * 1e3}, lines: t}
}

func headlineOf(b, n *sideData) Headline {
	d := n.summary.MedianUs - b.summary.MedianUs
	return Headline{DeltaUs: d, DeltaPct: 100 * d / b.summary.MedianUs, NoiseKnown: true, LowPct: -2, HighPct: 2}
}

func TestLineDeltas(t *testing.T) {
	// 100 steps of 20 ms: forward (line 10) 40%, backward (line 11) 55%.
	base := lineSide(20, map[int]float64{10: 0.8, 11: 1.1}, nil)

	// The machine got 30% slower: every line stretched, shares unchanged.
	slow := lineSide(26, map[int]float64{10: 1.04, 11: 1.43}, nil)
	if got := lineDeltas(base, slow, headlineOf(base, slow)); len(got) != 0 {
		t.Errorf("a slower machine named lines: %+v", got)
	}

	// A line added to the loop: 8 ms of a 28 ms step (40 samples).
	added := lineSide(28, map[int]float64{10: 0.8, 11: 1.1, 12: 0.8}, nil)
	got := lineDeltas(base, added, headlineOf(base, added))
	if len(got) != 1 || got[0].File != "/src/train.py" || got[0].Line != 12 || got[0].Func != "main" || got[0].Kind != "new" || got[0].Source != "sampled" {
		t.Fatalf("added line: %+v", got)
	}
	if d := got[0].DeltaUs; d < 7000 || d > 9000 || got[0].SharePct < 90 || got[0].SharePct > 110 {
		t.Errorf("added line: %.0fus per step, %.0f%% of the change; want ~8ms, ~100%%", d, got[0].SharePct)
	}

	// Five samples of a new line: within the sampling noise (2.2 sigmas:
	// both runs' counts vary).
	few := lineSide(21, map[int]float64{10: 0.8, 11: 1.1, 12: 0.1}, nil)
	if got := lineDeltas(base, few, headlineOf(base, few)); len(got) != 0 {
		t.Errorf("five samples named a line: %+v", got)
	}

	// The same five samples, at a line a finding of the new run only
	// points at: named, with the finding.
	io := diagnose.Finding{Rule: "io.in-step", Title: "File I/O in the step", AtStakePct: 12, Where: []diagnose.Location{{Kind: "python", File: "/src/train.py", Line: 12}}}
	flagged := lineSide(21, map[int]float64{10: 0.8, 11: 1.1, 12: 0.1}, nil, io)
	got = lineDeltas(base, flagged, headlineOf(base, flagged))
	if len(got) != 1 || got[0].Line != 12 || !strings.Contains(strings.Join(got[0].Notes, ";"), "new: File I/O in the step") {
		t.Errorf("line of a new finding: %+v", got)
	}
	// A finding near its threshold (5% of the step) comes and goes
	// between identical runs: it is no evidence.
	weak := io
	weak.AtStakePct = 6
	if got := lineDeltas(base, lineSide(21, map[int]float64{10: 0.8, 11: 1.1, 12: 0.1}, nil, weak), headlineOf(base, flagged)); len(got) != 0 {
		t.Errorf("a finding near its threshold named a line: %+v", got)
	}
	// The finding in both runs is no news.
	both := lineSide(20, map[int]float64{10: 0.8, 11: 1.1}, nil, io)
	if got := lineDeltas(both, flagged, headlineOf(both, flagged)); len(got) != 0 {
		t.Errorf("a finding of both runs named a line: %+v", got)
	}

	// gc.collect: the sampler saw little of it (a collection holds the
	// GIL), the gc callbacks timed 100 ms a step; the sampler, woken in
	// step with the collections, missed the forward (line 10) after
	// them: that run's sampled lines are not compared.
	gc := lineSide(120, map[int]float64{10: 0.1, 11: 1.1, 12: 0.4}, map[int]float64{12: 10})
	got = lineDeltas(base, gc, headlineOf(base, gc))
	if len(got) != 1 || got[0].Line != 12 || got[0].Source != "gc pauses" || got[0].DeltaUs < 90e3 || got[0].Notes[0] != "calls gc.collect" {
		t.Errorf("gc.collect line: %+v", got)
	}

	// An automatic collection began at the backward line in one run
	// (it would have begun elsewhere in another): not the line's time.
	auto := lineSide(20.5, map[int]float64{10: 0.8, 11: 1.1}, map[int]float64{11: 5})
	auto.lines.Lines[lineKey{file: "/src/train.py", line: 11}].explicit = false
	if got := lineDeltas(base, auto, headlineOf(base, auto)); len(got) != 0 {
		t.Errorf("an automatic collection's site named: %+v", got)
	}

	// Backward's time rose with the load while its share fell (a line
	// was added): only the added line is named.
	mixed := lineSide(32, map[int]float64{10: 1.0, 11: 1.4, 12: 0.8}, nil)
	got = lineDeltas(base, mixed, headlineOf(base, mixed))
	for _, l := range got {
		if l.Line != 12 {
			t.Errorf("line %d named: %+v", l.Line, l)
		}
	}

	// The machine got twice as fast while a line was added: the lines
	// that kept their work are not named though their times halved.
	fast := lineSide(15.4, map[int]float64{10: 0.44, 11: 0.6, 12: 0.44}, nil)
	got = lineDeltas(base, fast, headlineOf(base, fast))
	if len(got) != 1 || got[0].Line != 12 || got[0].DeltaUs < 3000 {
		t.Errorf("added line on a faster machine: %+v", got)
	}

	// A line that was there grew from 0.5 to 50 ms a step: named, and
	// its growth is not taken for the machine's.
	base9 := lineSide(20, map[int]float64{9: 0.05, 10: 0.8, 11: 1.1}, nil)
	grown := lineSide(69.5, map[int]float64{9: 5, 10: 0.8, 11: 1.1}, nil)
	got = lineDeltas(base9, grown, headlineOf(base9, grown))
	if len(got) != 1 || got[0].Line != 9 || got[0].Kind != "" || got[0].DeltaUs < 40e3 {
		t.Errorf("grown line: %+v", got)
	}

	// A heavily loaded machine stretched the forward 1.4x and the
	// backward 1.05x: with two lines, neither is the machine's; no line
	// is named though the difference is beyond the sampling error.
	// (1,000 steps: 400 and 550 samples, the sampling error is small)
	long := lineSideN(1000, 20, map[int]float64{10: 8, 11: 11}, nil)
	uneven := lineSideN(1000, 24.7, map[int]float64{10: 11.2, 11: 11.55}, nil)
	if got := lineDeltas(long, uneven, headlineOf(long, uneven)); len(got) != 0 {
		t.Errorf("uneven load named lines: %+v", got)
	}

	// The same program twice, the machine's load changing within the
	// base run (its step drifted 76%): the optimizer's line took 2.7x its
	// time in the other run, the matmuls 1.1x (CI, 2 cores at load 5).
	// The drift says the machine can do that to a line: not named; a
	// line added, or grown 5x, still is.
	drifted := func(d *sideData, pct float64) *sideData {
		d.side.Run = &runreport.Report{Processes: []runreport.ProcessReport{{Tag: "rank0", StepSeries: &steptimes.Summary{DriftPct: pct}}}}
		return d
	}
	b := drifted(lineSideN(200, 54, map[int]float64{10: 8.6, 11: 1.5, 42: 0.33}, nil), 76)
	same := lineSideN(200, 57, map[int]float64{10: 9.1, 11: 1.55, 42: 0.9}, nil)
	if got := lineDeltas(b, same, headlineOf(b, same)); len(got) != 0 {
		t.Errorf("a drifting machine named lines: %+v", got)
	}
	b.side.Run = nil
	if got := lineDeltas(b, same, headlineOf(b, same)); len(got) != 1 || got[0].Line != 42 {
		t.Errorf("without the drift, the line's 2.7x is the code's: %+v", got)
	}
	drifted(b, 76)
	for _, c := range []struct {
		line   int
		stepMs float64
		lines  map[int]float64
	}{
		{12, 84, map[int]float64{10: 8.6, 11: 1.5, 42: 0.33, 12: 6}}, // added: 30 ms a step
		{42, 61, map[int]float64{10: 8.6, 11: 1.5, 42: 1.64}},        // grown 5x
	} {
		n := lineSideN(200, c.stepMs, c.lines, nil)
		if got := lineDeltas(b, n, headlineOf(b, n)); len(got) != 1 || got[0].Line != c.line {
			t.Errorf("line %d on a drifting machine: %+v", c.line, got)
		}
	}

	// Traces (no line times) and a run without steps name nothing.
	traces := &sideData{side: &Side{Report: &report.Report{}}, summary: SideSummary{MedianUs: 20e3}}
	if got := lineDeltas(traces, added, headlineOf(traces, added)); len(got) != 0 {
		t.Errorf("traces: %+v", got)
	}
}

func TestLineCause(t *testing.T) {
	r := &Result{Headline: Headline{DeltaUs: 8000, DeltaPct: 40, Significant: true, NoiseKnown: true},
		Lines: []LineDelta{
			{File: "/a/b/shrunk.py", Line: 3, Func: "f", DeltaUs: -9000},
			{File: "/a/b/train.py", Line: 12, Func: "main", DeltaUs: 8000, SharePct: 100, Kind: "new", Notes: []string{"file I/O"}},
		}}
	got := causes(r)
	if len(got) != 1 || got[0] != "mainly line b/train.py:12 (main): +8.00 ms per step (+100% of the step change), new; file I/O" {
		t.Errorf("causes %q", got)
	}
	r.Headline.Significant = false
	if got := causes(r); len(got) != 0 {
		t.Errorf("causes %q for a change within the noise", got)
	}
}

// A file name from the profile cannot inject terminal escapes or break a
// Markdown table.
func TestLineNamesEscaped(t *testing.T) {
	r := &Result{Headline: Headline{Summary: "Slower", DeltaUs: 8000, DeltaPct: 40, Significant: true, NoiseKnown: true},
		Lines: []LineDelta{{File: "/src/ev|il\x1b[31m.py", Line: 12, Func: "ma*in*", DeltaUs: 8000, NewUs: 8000, SharePct: 100, Kind: "new", Source: "sampled"}}}
	r.Headline.Causes = causes(r)
	for name, write := range map[string]func(*strings.Builder) error{
		"text":     func(b *strings.Builder) error { return WriteText(b, r) },
		"markdown": func(b *strings.Builder) error { return WriteMarkdown(b, r) },
		"html":     func(b *strings.Builder) error { return WriteHTML(b, r) },
	} {
		var b strings.Builder
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Contains(out, "\x1b") || !strings.Contains(out, "il") {
			t.Errorf("%s: raw escape or no line:\n%q", name, out)
		}
		if name == "markdown" && strings.Contains(out, "ev|il") {
			t.Errorf("markdown: unescaped | in a table cell:\n%s", out)
		}
	}
}

func TestSourceRoot(t *testing.T) {
	for _, c := range []struct {
		cmd  rundir.Command
		want string
	}{
		{rundir.Command{Mode: "script", Target: "/a/repo/train.py", Cwd: "/tmp"}, "/a/repo"},
		{rundir.Command{Mode: "script", Target: "scripts/train.py", Cwd: "/b/repo"}, "/b/repo/scripts"},
		{rundir.Command{Mode: "module", Target: "pkg.train", Cwd: "/b/repo"}, "/b/repo"},
	} {
		if got := sourceRoot(&rundir.Manifest{Command: c.cmd}); got != c.want {
			t.Errorf("%+v: %q, want %q", c.cmd, got, c.want)
		}
	}
	if sourceRoot(nil) != "" {
		t.Error("no manifest")
	}
}

// A line added above others moves them: with the programs' source
// recorded in both runs, lines pair by function and text and only the
// added one is named; without it (an older agent on one side) they pair by
// number.
func TestMovedLines(t *testing.T) {
	withText := func(s *sideData, texts map[int]string) *sideData {
		s.lines.texts = map[lineKey]string{}
		for line, src := range texts {
			s.lines.texts[s.lines.key("/src/train.py", line)] = "main: " + src
		}
		return s
	}
	// forward at 10, backward at 11; the new run adds gc.collect() at 11
	// and the backward moves to 12
	base := withText(lineSide(20, map[int]float64{10: 0.8, 11: 1.1}, nil), map[int]string{10: "out = model(x)", 11: "loss.backward()"})
	added := withText(lineSide(28, map[int]float64{10: 0.8, 11: 0.8, 12: 1.1}, nil), map[int]string{10: "out = model(x)", 11: "gc.collect()", 12: "loss.backward()"})
	got := lineDeltas(base, added, headlineOf(base, added))
	if len(got) != 1 || got[0].Line != 11 || got[0].Kind != "new" {
		t.Errorf("moved lines: %+v, want only the added line 11", got)
	}
	// the base run without source: numbers pair line 11 (backward) with
	// line 11 (gc.collect), and line 12 looks new
	base.lines.texts = nil
	got = lineDeltas(base, added, headlineOf(base, added))
	if len(got) == 0 || got[0].Line != 12 {
		t.Errorf("by number: %+v, want line 12 first", got)
	}
}
