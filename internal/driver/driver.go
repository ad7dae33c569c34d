// Package driver connects the layers: it loads traces, runs the analyses,
// fills a report.Report and renders it. Commands (analyze, run, report)
// call it; it knows nothing of flags or cobra.
package driver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/critpath"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/flops"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/input"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/launch"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/memory"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/ranks"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/regions"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/whatif"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/load"
	"github.com/bottleneck-dev/bottleneck/internal/memlimit"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
	"github.com/bottleneck-dev/bottleneck/internal/units"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

// Definition selects the metric definitions (Options.Definition).
type Definition string

// The definitions, as analyze --definition names them.
const (
	DefaultDefinition Definition = "default" // the project's ("" too)
	TBDefinition      Definition = "tb"      // the TensorBoard plugin's step breakdown and GPU panel
	HTADefinition     Definition = "hta"     // Holistic Trace Analysis's idle time and launch statistics: last step dropped, its µs rounding
)

// Definitions lists them in the flag's order.
var Definitions = []string{string(DefaultDefinition), string(TBDefinition), string(HTADefinition)}

// Options choose what to compute and how to print it.
type Options struct {
	JSON bool
	// Full: the whole text report; else the opening only (verdict, top
	// findings, what was read and what went wrong).
	Full  bool
	Table optable.Options
	// Definition selects metric definitions, for comparison with other
	// tools (analyze --definition).
	Definition Definition
	// Rank restricts the analyses to one rank (-1: all).
	Rank int
	// RunEvidence is what `bottleneck run` recorded per rank (nil for
	// analyze); the diagnosis uses it.
	RunEvidence map[int]*runevidence.RunEvidence
	// Run is a run directory its caller has read already (`run`, which
	// writes an early report from it): Open uses it for that directory
	// instead of reading the directory again.
	Run *rundir.Run

	// analysesOnly: the traces feed the report only, no export or page
	// (Analyze; load.Options.AnalysesOnly).
	analysesOnly bool
}

// Load reads paths with a progress line on a terminal, steering the soft
// memory limit as it goes (memlimit.Pacer: docs/performance.md). With
// analysesOnly it keeps only what the analyses read
// (load.Options.AnalysesOnly).
func Load(ios *iostreams.IOStreams, paths []string, analysesOnly bool) (*load.Result, time.Duration, error) {
	return loadWith(ios, paths, analysesOnly, nil)
}

// loadWith is Load; each, when set, is given every trace as it is read
// and the traces are not kept (load.Options.Each).
func loadWith(ios *iostreams.IOStreams, paths []string, analysesOnly bool, each func(*trace.Trace)) (*load.Result, time.Duration, error) {
	prog := ios.StartProgress()
	start := time.Now()
	var pacer memlimit.Pacer
	var budget atomic.Int64 // expected input bytes; estimates of gzip files can fall short
	res, err := load.Load(paths, load.Options{Budget: func(n int64) {
		budget.Store(n)
		pacer.Expect(n)
	}, Parsed: func(t *trace.Trace) {
		classify.For(t) // the name classes, which the analyses start with, built while the trace is linked
	}, AnalysesOnly: analysesOnly, Each: each, Progress: func(total int64) {
		if b := budget.Load(); total > b && budget.CompareAndSwap(b, total*5/4) {
			pacer.Expect(total * 5 / 4)
		}
		pacer.Progress(total)
		secs := prog.Elapsed().Seconds()
		prog.Update(fmt.Sprintf("reading traces: %s, %.0f MB/s", units.Bytes(total), float64(total)/1e6/max(secs, 1e-9)))
	}})
	pacer.Settle()
	prog.Done()
	return res, time.Since(start), err
}

// Build computes the report of loaded traces.
func Build(res *load.Result, took time.Duration, o Options) *report.Report {
	items := make([]traceItem, len(res.Traces))
	for i, t := range res.Traces {
		items[i] = itemOf(t, o, len(res.Traces))
	}
	return assemble(items, res, took, o)
}

// traceItem is what a report keeps of one trace: the trace itself can be
// dropped once it is made.
type traceItem struct {
	input report.Input
	// tr is its analyses, nil when --rank leaves it out.
	tr       *report.TraceReport
	measured ranks.Measured
}

// itemOf analyses one trace; ranksRead is the number of traces the input holds.
func itemOf(t *trace.Trace, o Options, ranksRead int) traceItem {
	it := traceItem{input: describe(t)}
	if o.Rank >= 0 && t.Rank != o.Rank {
		return it
	}
	tr := analyzeTrace(t, o, ranksRead)
	it.tr = &tr
	if ranksRead > 1 { // the ranks are compared (assemble) only when there are several
		it.measured = ranks.Measure(t, ranks.Options{})
	}
	return it
}

// assemble builds the report of the traces' items, in the order of the
// traces (load's: by rank, then path).
func assemble(items []traceItem, res *load.Result, took time.Duration, o Options) *report.Report {
	r := &report.Report{Schema: report.Schema, Tool: version.Version, ReadSeconds: took.Seconds()}
	for _, f := range res.Failures {
		r.Failures = append(r.Failures, report.FileProblem{Path: f.Path, Error: f.Err.Error()})
	}
	for _, f := range res.Skipped {
		r.Skipped = append(r.Skipped, report.FileProblem{Path: f.Path, Error: f.Err.Error()})
	}
	var measured []ranks.Measured
	for _, it := range items {
		r.BytesRead += it.input.Bytes
		r.Inputs = append(r.Inputs, it.input)
		if it.tr == nil {
			continue
		}
		r.Traces = append(r.Traces, *it.tr)
		measured = append(measured, it.measured)
	}
	if len(measured) > 1 {
		r.Ranks = ranks.Compare(measured)
		per := make([]diagnose.RankInput, len(r.Traces))
		for i := range r.Traces {
			per[i] = diagnose.RankInput{Rank: r.Traces[i].Rank, Diagnosis: r.Traces[i].Diagnosis}
		}
		r.Diagnosis = diagnose.ComputeRanks(r.Ranks, per, nil)
	}
	return r
}

// StreamRanks is the number of traces from which analyze reads, analyses
// and drops each trace in turn instead of reading them all first: memory
// then holds the traces being read (two) and the reports of the others.
// Below it the report is built as it always was.
const StreamRanks = 16

// buildStreaming reads and analyses the traces of paths two at a time,
// keeping only what the report needs of each. The report is Build's,
// except that a trace's diagnosis counts the input's traces before
// reading them (a file that then fails to read is counted).
func buildStreaming(ios *iostreams.IOStreams, paths []string, files int, o Options) (*report.Report, error) {
	var mu sync.Mutex
	var items []traceItem
	res, took, err := loadWith(ios, paths, true, func(t *trace.Trace) {
		it := itemOf(t, o, files)
		mu.Lock()
		items = append(items, it)
		mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(items, func(a, b traceItem) int { // load's order
		if a.input.Rank != b.input.Rank {
			return a.input.Rank - b.input.Rank
		}
		return strings.Compare(a.input.Path, b.input.Path)
	})
	return assemble(items, res, took, o), nil
}

// analyzeTrace runs every single-trace analysis. The analyses only read
// the trace, so they run concurrently: on a large trace they cost about as
// much as reading it, and the machine has cores to spare once reading ends.
func analyzeTrace(t *trace.Trace, o Options, ranksRead int) report.TraceReport {
	tr := report.TraceReport{Path: t.Path, Rank: t.Rank}
	var replay *whatif.Model
	var mu sync.Mutex
	fail := func(name string, err error) {
		if err == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if tr.Errors == nil {
			tr.Errors = map[string]string{}
		}
		tr.Errors[name] = err.Error()
	}
	def, idleOpts, launchOpts := breakdown.Default, idle.Options{}, launch.Options{}
	switch o.Definition {
	case TBDefinition:
		def = breakdown.TB
	case HTADefinition: // HTA's definitions differ from ours in idle time and launch statistics
		idleOpts = idle.Options{DropLastStep: true, HTARounding: true}
		launchOpts = launch.Options{DropLastStep: true, HTARounding: true}
	}
	// The window check decides which steps the step breakdown (and so the
	// verdict), the GPU summary, the tables and the critical path use.
	var bopts breakdown.Options
	var gopts gpu.Options
	table := o.Table
	checkWindow := func() {
		var wo window.Options
		if run := o.RunEvidence[t.Rank]; run != nil {
			if c, ok := run.CutTraces[filepath.Base(t.Path)]; ok && len(t.Steps) > c.Steps {
				wo.LastStepCut, wo.KeepCutStep, wo.CutBy = c.Why, c.InStep, c.By
			}
		}
		tr.Window = window.Check(t, wo)
		bopts = breakdown.Options{Definition: def}
		gopts = gpu.Options{Definition: def}
		if def != breakdown.TB {
			bopts.Exclude = tr.Window.Excluded()
			gopts.Exclude = bopts.Exclude
			if !table.StepFilter && leavesOut(t, tr.Window) {
				table.StepFilter, table.Exclude = true, bopts.Exclude
			}
		}
	}
	// Costliest first (by CPU on the benchmark corpus): the critical path
	// is ~40% of the analyses, and started last it ran alone at the end.
	// The operator table follows it in the same lane: the two hold the
	// most scratch (31 and 24 MB on 200 MB of distinct op names), and side
	// by side they raised peak RSS 5-10%. Those that need no window run
	// beside the window check, those that need no name classes first (the
	// check builds them).
	// The what-if model is the costliest analysis of small real traces
	// (a 15 MB GPU trace: 16 of 37 ms); started ninth it ran alone for
	// the last 14 ms, so there it starts second, beside the critical
	// path (the analyses' wall, median of 10 interleaved: 28.5 -> 21.1
	// ms; 10 MB NCCL trace 20.4 -> 17.7). On large inputs its work is
	// bounded (whatif.MaxSteps, eventBudget) and its scratch beside the
	// critical path's may raise the peak (100 MB of distinct op names, 5
	// interleaved runs: median RSS 0.49x -> 0.54x, highest 0.51x ->
	// 0.63x), so there it stays ninth.
	var none analysis
	whatIf := analysis{afterWindow, func() { replay = whatif.Build(t, tr.Window.Kept()) }}
	early, late := whatIf, none
	if !memlimit.Small(t.BytesRead) {
		early, late = none, whatIf
	}
	runAnalyses(slices.DeleteFunc([]analysis{
		{afterWindow, func() {
			tr.CritPath = critpath.Compute(t, critpath.Options{Instance: firstUsedStep(t, tr.Window)})
			// The table allocates its rows at once: before the graph
			// just dropped was collected, the two made the peak (100 MB
			// of distinct op names: highest of 40 runs 0.515x -> 0.485x).
			// A small input's heap is bounded by its soft limit instead:
			// there the forced cycle, and runtime.GC's wait for the sweep
			// to end, were a tenth of a 1 MB trace's CPU.
			if !memlimit.Small(t.BytesRead) {
				runtime.GC()
			}
			tr.Ops = optable.Ops(t, table)
		}},
		early,
		{afterWindow, func() {
			var err error
			tr.Breakdown, err = breakdown.Compute(t, bopts)
			fail("step_breakdown", err)
			gopts.Breakdown = tr.Breakdown // the GPU window is the breakdown's steps
			tr.GPU, err = gpu.Compute(t, gopts)
			fail("gpu", err)
		}},
		{anytime, func() { tr.Launch = launch.Compute(t, launchOpts) }},
		{anytime, func() { tr.Flops = flops.Compute(t) }},
		{anytime, func() { tr.Regions = regions.Compute(t) }},
		{anytime, func() { tr.Memory = memory.Compute(t) }},
		{anytime, func() { tr.Input = input.Compute(t) }},
		{afterWindow, func() { tr.Kernels = optable.Kernels(t, table) }},
		late,
		{afterWindow, func() {
			// a capture started mid-flight opens with waits on work it did not record
			var so syncs.Options
			if c := tr.Window.Carry; c != nil {
				so.InheritedUntilNs = c.UntilNs
			}
			tr.Syncs = syncs.Compute(t, so)
		}},
		{anytime, func() { tr.Idle = idle.Compute(t, idleOpts) }},
	}, func(a analysis) bool { return a.run == nil }), checkWindow)
	if tr.Flops != nil {
		tr.Flops.SetStep(tr.Breakdown) // MFU needs the averaged steps
	}
	in := diagnose.Analyses{
		Events: t.Events.Len(), Window: tr.Window, Breakdown: tr.Breakdown, GPU: tr.GPU, Idle: tr.Idle, Launch: tr.Launch,
		Syncs: tr.Syncs, Input: tr.Input, Memory: tr.Memory, Regions: tr.Regions, Ops: tr.Ops, Kernels: tr.Kernels, CritPath: tr.CritPath, Replay: replay,
		Flops: tr.Flops, Run: o.RunEvidence[t.Rank], RanksRead: ranksRead,
	}
	if d := t.Meta.Distributed; d != nil {
		in.WorldSize = d.WorldSize
	}
	tr.Diagnosis = diagnose.Compute(in)
	return tr
}

type analysis struct {
	when int // anytime or afterWindow
	run  func()
}

const (
	anytime = iota
	afterWindow
)

// runAnalyses runs checkWindow and then the analyses, in their order as
// far as their needs allow, two at a time: each allocates per-event
// scratch, and running all at once would multiply peak memory for no gain
// on two cores. The analyses only read the trace.
func runAnalyses(todo []analysis, checkWindow func()) {
	var mu sync.Mutex
	windowDone := make(chan struct{})
	// next removes and returns the first analysis that can run now; with
	// none, wait reports whether one will once the window is checked.
	next := func() (run func(), wait bool) {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-windowDone:
		default:
			wait = true
		}
		for i, a := range todo {
			if a.when == anytime || !wait {
				todo = slices.Delete(todo, i, i+1)
				return a.run, false
			}
		}
		return nil, wait && len(todo) > 0
	}
	lane := func() {
		for {
			run, wait := next()
			switch {
			case run != nil:
				run()
			case wait:
				<-windowDone
			default:
				return
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		checkWindow()
		close(windowDone)
		lane()
	})
	wg.Go(lane)
	wg.Wait()
}

// leavesOut reports whether the window check left steps out, so that the
// operator and kernel tables leave them out too.
func leavesOut(t *trace.Trace, w *window.Result) bool {
	return !t.SyntheticStep && len(w.Used) > 0 && len(w.Used) < len(w.Steps)
}

// firstUsedStep is the ProfilerStep instance the critical path is
// computed for: the first step the window check kept (0 when none is).
func firstUsedStep(t *trace.Trace, w *window.Result) int {
	for i, st := range w.Steps {
		if st.Excluded == "" && !t.SyntheticStep {
			return i
		}
	}
	return 0
}

// Status says how much of its input a command could read.
type Status int

const (
	// Complete: every input was read fully.
	Complete Status = iota
	// Partial: something was damaged or unreadable; what could be read was
	// used and the report says what was wrong and where.
	Partial
	// Unreadable: nothing could be read.
	Unreadable
)

// ErrNoSuchRank: --rank names a rank no trace has.
var ErrNoSuchRank = errors.New("no trace has this rank")

// StatusOf is the status of a built report.
func StatusOf(r *report.Report) Status {
	if len(r.Inputs) == 0 {
		return Unreadable
	}
	if len(r.Failures) > 0 {
		return Partial
	}
	for _, in := range r.Inputs {
		if len(in.Problems) > 0 {
			return Partial
		}
	}
	return Complete
}

// Analyze opens paths (see Open), analyses them and writes the report to
// w as text or JSON.
func Analyze(w io.Writer, ios *iostreams.IOStreams, paths []string, o Options) (Status, error) {
	o.analysesOnly = true // the report is all it writes
	d, err := Open(ios, paths, o)
	if err != nil {
		return Unreadable, err
	}
	for _, note := range d.InterruptedNotes() {
		fmt.Fprintf(ios.ErrOut, "bottleneck: %s\n", report.Printable(note))
	}
	if len(d.Report.Inputs) == 0 && len(d.Report.Failures) > 0 { // no report: stdout carries only reports
		return Unreadable, NothingRead(d.Report.Failures)
	}
	if len(d.Report.Inputs) == 0 && len(d.Runs) == 0 && len(d.Profiles) > 0 {
		return Unreadable, fmt.Errorf("%s: no trace, only Python profiles (bottleneck export --stacks python draws them)", strings.Join(paths, ", "))
	}
	if o.Rank >= 0 && len(d.Report.Traces) == 0 && len(d.Report.Inputs) > 0 {
		return Unreadable, fmt.Errorf("--rank %d: %w", o.Rank, ErrNoSuchRank)
	}
	// The report is all that is written: the traces' models (about a
	// third of their JSON) go before it is, so that the report's JSON is
	// built in their memory, not above it.
	d.Traces = nil
	if o.JSON || o.Full {
		if err := Write(w, d.Report, o.JSON); err != nil {
			return Unreadable, err
		}
	} else {
		report.WriteSummary(w, d.Report)
	}
	if d.Status == Partial { // stderr too: a script keeping only stdout still sees it
		report.WriteProblems(ios.ErrOut, d.Report)
	}
	return d.Status, nil
}

// NothingRead says why no input could be read (the error of a command
// that has nothing to show: analyze, serve).
func NothingRead(failures []report.FileProblem) error {
	msgs := make([]string, len(failures))
	for i, f := range failures {
		msgs[i] = f.Error
		if !strings.Contains(f.Error, f.Path) { // os and reader errors start with the path
			msgs[i] = f.Path + ": " + f.Error
		}
	}
	if len(msgs) == 1 {
		return errors.New(msgs[0])
	}
	return errors.New("no input could be read:\n  " + strings.Join(msgs, "\n  "))
}

// Write renders r.
func Write(w io.Writer, r *report.Report, asJSON bool) error {
	// Buffered: the text tables write a cell at a time, each a system
	// call on a file or terminal (--full of 100,000 steps: 1.5 s of them).
	bw := bufio.NewWriterSize(w, 64<<10)
	var err error
	if asJSON {
		err = report.WriteJSON(bw, r)
	} else {
		err = report.WriteText(bw, r)
	}
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

func describe(t *trace.Trace) report.Input {
	in := report.Input{
		Path: t.Path, Rank: t.Rank, RankSource: t.RankSource, Compressed: t.Compressed,
		Bytes: t.BytesRead, Events: t.Events.Len(), Flows: t.NumFlows(), MemoryEvents: len(t.Memory),
		BaseTimeNs: t.Meta.BaseTimeNs, SyntheticStep: t.SyntheticStep, StepMarks: t.StepMarks, Devices: t.Meta.Devices,
		Distributed: t.Meta.Distributed, Legacy: t.Meta.Legacy, EventsByKind: map[string]int{},
		Steps: []int{},
	}
	if in.Devices == nil {
		in.Devices = []trace.Device{}
	}
	var byKind [256]int // counted by number: by name, a map update an event cost 3.5 ms on 200 MB
	for _, k := range t.Events.Kind {
		byKind[k]++
	}
	for k, n := range byKind {
		if n > 0 {
			in.EventsByKind[trace.Kind(k).String()] += n
		}
	}
	start, end := t.Span()
	in.StartUs, in.SpanUs = float64(start)/1e3, float64(end-start)/1e3
	if !t.SyntheticStep {
		for _, s := range t.Steps {
			in.Steps = append(in.Steps, s.Num)
		}
	}
	for _, p := range t.Problems.List {
		in.Problems = append(in.Problems, report.Problem{Offset: p.Offset, What: p.What, Detail: p.Detail, Count: p.Count, Fatal: p.Fatal})
	}
	return in
}
