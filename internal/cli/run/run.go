// Package run implements `bottleneck run`: run a Python program once under
// the agent, then print the report (docs/run.md).
package run

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
	"github.com/bottleneck-dev/bottleneck/internal/cli/cmdutil"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/cli/try"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/repro"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
	"github.com/bottleneck-dev/bottleneck/internal/runreport"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
	"github.com/bottleneck-dev/bottleneck/internal/units"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

// Options are the flags and arguments of `bottleneck run`.
type Options struct {
	IO *iostreams.IOStreams

	// Args: script and its arguments; with Module the module name and its
	// arguments; with Launcher the launcher command.
	Args     []string
	Module   bool
	Launcher bool

	Python    string
	Out       string
	Timeout   time.Duration
	KillAfter time.Duration
	Report    string // stderr | stdout | none
	Full      bool   // print the whole text report, not the brief

	PythonProfiler   string
	SampleInterval   time.Duration
	WindowInterval   time.Duration
	StepSource       string
	NoTrace          bool
	SkipFirst        int
	Wait             int
	Warmup           int
	Active           int
	MinWindow        time.Duration
	Repeat           int
	RecordShapes     bool
	ProfileMemory    bool
	WithStack        bool
	WithFlops        bool
	WithModules      bool
	StopAfterProfile bool
	NoSyncDebug      bool
	NVTX             string // "" | steps | ops
	// Verify: after the report, try the top findings' run-time changes
	// in one more short run each (try.Verify), VerifySteps steps timed:
	// "" (off), "on" (those that keep the program's numerics) or
	// "numerics" (TF32 and the like too).
	Verify      string
	VerifySteps int
	// Repro: then write a repro script for the top ops into RUN/repro
	// (bottleneck repro), the shapes recorded for it.
	Repro bool

	// Live: "" (off), "term" (a region of the terminal, or plain lines
	// when stderr is not one) or "web" (a page on LiveHost:LivePort).
	Live     string
	LivePort int
	LiveHost string

	// JobDir: a directory every node of a multi-node job mounts; each
	// node leaves its ranks' summaries there and node 0, after waiting at
	// most JobWait for the others, writes the job's report (job.go).
	JobDir  string
	JobWait time.Duration
	jobPoll time.Duration // tests
	// tests: the plain lines' period, the web report's grace period, and
	// the web view's address once bound
	livePlainEvery time.Duration
	liveGrace      time.Duration
	liveReady      func(url string)

	// fixedStart: --skip-first or --warmup given, so the window starts
	// where they say, however long the steps (ProfilerConfig.EarlyStartS)
	fixedStart bool
	// fixedInterval: --sample-interval given, so the sampler keeps it
	// whatever a sample costs (AgentConfig.SampleBudget 0)
	fixedInterval bool

	// Signals, Env and Dir are for tests (see runner.Config).
	Signals <-chan os.Signal
	Env     []string
	Dir     string
}

// NewCmd returns the `run` command.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios}, runRun)
}

// newCmd parses the command line into o and hands it to runF: runRun,
// or a test's recorder, so that parsing is tested without running the
// program. Usage errors are found here, before runF (exit 2).
func newCmd(o *Options, runF func(*Options) error) *cobra.Command {
	d := runner.DefaultAgentConfig()
	cmd := &cobra.Command{
		Use:   "run [flags] script.py [args...] | -m module [args...] | -- launcher [args...]",
		Short: "Run a PyTorch program once and report why it is slow",
		Long: `Run a Python program once, as its real __main__, with bottleneck's agent:
an environment summary, a Python profile of the whole run, and a
torch.profiler trace of a few steady-state steps; then print the report.

The program's stdin, stdout and stderr pass through untouched; the report
goes to stderr (--report). bottleneck exits with the program's exit status.

  bottleneck run train.py --epochs 1
  bottleneck run -m mypkg.train --lr 0.1
  bottleneck run -- torchrun --nproc_per_node 2 train.py

Files go to --output (default ./bottleneck-runs/<timestamp>/); see docs/run.md.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			o.Launcher = cmd.ArgsLenAtDash() == 0
			if !o.Launcher && !o.Module {
				o.Python, o.Module, o.Launcher, o.Args = runner.SplitInterpreter(o.Python, args)
			}
			f := cmd.Flags()
			if f.Changed("active") && !f.Changed("min-window") {
				o.MinWindow = 0 // the steps asked for, however short
			}
			o.fixedStart = f.Changed("skip-first") || f.Changed("warmup")
			o.fixedInterval = f.Changed("sample-interval")
			if len(args) == 0 {
				return exitcode.New(exitcode.Usage, errors.New("run: missing program: script.py, -m module, or -- launcher ..."))
			}
			if err := o.validate(); err != nil {
				return exitcode.New(exitcode.Usage, fmt.Errorf("run: %w", err))
			}
			return runF(o)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.BoolVarP(&o.Module, "module", "m", false, "run a module as `python -m` does: bottleneck run -m pkg.mod [args]")
	f.StringVar(&o.Python, "python", "", "Python interpreter (default: the active virtualenv's, else python3 on PATH)")
	f.StringVarP(&o.Out, "output", "o", "", "run directory (default ./bottleneck-runs/<timestamp>)")
	f.DurationVar(&o.Timeout, "timeout", 0, "stop the program gracefully (like Ctrl-C) after this long, e.g. 10m")
	f.DurationVar(&o.KillAfter, "kill-after", 30*time.Second, "after --timeout or SIGTERM, kill the program if it has not ended within this long")
	cmdutil.StringEnumFlag(cmd, &o.Report, "report", "", "stderr", []string{"stderr", "stdout", "none"}, "where to print the report (report.txt is always written)")
	cmdutil.StringEnumFlag(cmd, &o.PythonProfiler, "python-profiler", "", d.PythonProfiler, []string{"sample", "cprofile", "off"},
		"Python profile: sample (wall-clock, all threads), cprofile (exact calls, main thread, also .pstats) or off")
	f.BoolVar(&o.Full, "full", false, "print the whole text report instead of the verdict, top findings and paths (report.txt always has everything)")
	f.DurationVar(&o.SampleInterval, "sample-interval", time.Duration(d.SampleInterval*float64(time.Second)), "Python sampler period outside the recording window")
	f.DurationVar(&o.WindowInterval, "window-sample-interval", time.Duration(d.WindowInterval*float64(time.Second)), "Python sampler period while the window records")
	cmdutil.StringEnumFlag(cmd, &o.StepSource, "step-source", "", d.StepSource, []string{"auto", "optimizer", "dataloader", "forward", "closure"}, "what a step is (see docs/run.md)")
	f.BoolVar(&o.NoTrace, "no-trace", false, "do not run torch.profiler (Python profile and evidence only)")
	f.IntVar(&o.SkipFirst, "skip-first", d.Profiler.SkipFirst, "steps to ignore before the profiler schedule starts")
	f.IntVar(&o.Wait, "wait", d.Profiler.Wait, "idle steps at the start of each window cycle")
	f.IntVar(&o.Warmup, "warmup", d.Profiler.Warmup, "profiler warm-up steps (traced, then discarded)")
	f.IntVar(&o.Active, "active", d.Profiler.Active, "recorded steps per window")
	f.DurationVar(&o.MinWindow, "min-window", time.Duration(d.Profiler.MinWindowS*float64(time.Second)), "record more steps than --active when they would take less than this (0, or --active given alone: exactly --active)")
	f.IntVar(&o.Repeat, "repeat", d.Profiler.Repeat, "windows to record (0: until the program ends)")
	f.BoolVar(&o.RecordShapes, "record-shapes", false, "record operator input shapes")
	f.BoolVar(&o.ProfileMemory, "profile-memory", false, "record tensor allocations")
	f.BoolVar(&o.WithStack, "with-stack", false, "record Python stacks of operators")
	f.BoolVar(&o.WithFlops, "with-flops", false, "estimate FLOPs of matmuls and convolutions")
	f.BoolVar(&o.WithModules, "with-modules", false, "record the nn.Module hierarchy of operators")
	f.BoolVar(&o.StopAfterProfile, "stop-after-profile", false, "end the program (exit 0) once the last window is written")
	f.BoolVar(&o.NoSyncDebug, "no-sync-debug", false, "do not record CUDA implicit-sync call sites in the window")
	cmdutil.StringEnumFlag(cmd, &o.NVTX, "nvtx", "", "", []string{"steps", "ops"},
		"emit NVTX ranges for Nsight Systems (nsys profile bottleneck run --nvtx ...): steps and their phases; ops adds every op (costly, no trace)")
	f.Lookup("nvtx").NoOptDefVal = "steps"
	f.BoolVar(&o.Repro, "repro", false, "then write a standalone script for each of the top ops into the run directory's repro/ (bottleneck repro; records operator shapes)")
	cmdutil.StringEnumFlag(cmd, &o.Verify, "verify", "", "", []string{"on", "numerics"},
		"then try each top finding's change the agent can make at run time, in one more short run, and report measured against predicted: --verify (changes that keep the numerics) or --verify=numerics (TF32 too)")
	f.Lookup("verify").NoOptDefVal = "on"
	f.IntVar(&o.VerifySteps, "verify-steps", 20, "steps each --verify run times before its short window ends it, at least (compared over the steps the first run timed outside its window; more where their spread needs them to tell the predicted saving)")
	cmdutil.StringEnumFlag(cmd, &o.Live, "live", "", "", []string{"term", "web"},
		"show the steps live while the program runs: --live (the terminal) or --live=web (a page, see --live-port)")
	f.Lookup("live").NoOptDefVal = "term"
	cmdutil.IntRangeFlag(cmd, &o.LivePort, "live-port", 0, 0, 65535, "port of --live=web (0: a free one)")
	f.StringVar(&o.LiveHost, "host", "127.0.0.1", "address --live=web binds (0.0.0.0: every interface)")
	f.StringVar(&o.JobDir, "job-dir", "", "multi-node job: a `DIR` on a filesystem every node mounts; each node writes its ranks' summaries there and node 0 the job's report (docs/distributed.md)")
	f.DurationVar(&o.JobWait, "job-wait", defaultJobWait, "multi-node: how long node 0 (rank 0, without --job-dir) waits for the other nodes' summaries before writing the job report without them")
	cmdutil.RenamedFlags(cmd, map[string]string{"out": "output"})
	return cmd
}

func (o *Options) validate() error {
	if o.SkipFirst < 0 || o.Wait < 0 || o.Warmup < 0 || o.Repeat < 0 {
		return errors.New("--skip-first, --wait, --warmup and --repeat must be >= 0")
	}
	if o.Verify != "" && o.VerifySteps < 3 {
		return errors.New("--verify needs --verify-steps >= 3")
	}
	if o.Active < 1 || o.MinWindow < 0 {
		return errors.New("--active must be >= 1 and --min-window >= 0")
	}
	if o.Timeout < 0 || o.KillAfter < 0 {
		return errors.New("--timeout and --kill-after must be >= 0 (--timeout 0: no limit)")
	}
	if o.SampleInterval < 100*time.Microsecond || o.WindowInterval < 100*time.Microsecond {
		return errors.New("--sample-interval and --window-sample-interval must be at least 100µs")
	}
	if o.JobWait < 0 {
		return errors.New("--job-wait must be >= 0")
	}
	if o.Module && o.Launcher {
		return errors.New("-m and -- cannot be combined: use -- python -m module")
	}
	if len(o.Args) == 0 {
		return errors.New("missing program")
	}
	return nil
}

func (o *Options) config() (runner.Config, error) {
	ac := runner.DefaultAgentConfig()
	ac.PythonProfiler = o.PythonProfiler
	ac.SampleInterval = o.SampleInterval.Seconds()
	ac.WindowInterval = o.WindowInterval.Seconds()
	if o.fixedInterval {
		ac.SampleBudget = 0
	}
	ac.StepSource = o.StepSource
	ac.StopAfterProfile = o.StopAfterProfile
	ac.SyncDebug = !o.NoSyncDebug
	ac.Live = o.Live != ""
	ac.NVTX = o.NVTX
	ac.JobExchange = o.jobExchange()
	early := ac.Profiler.EarlyStartS
	if o.fixedStart || o.Launcher {
		early = 0 // ranks deciding apart could record different steps
	}
	ac.Profiler = rundir.ProfilerConfig{
		Enabled: !o.NoTrace, SkipFirst: o.SkipFirst, Wait: o.Wait, Warmup: o.Warmup, Active: o.Active,
		MinWindowS: o.MinWindow.Seconds(), EarlyStartS: early,
		Repeat: o.Repeat, RecordShapes: o.RecordShapes || o.Repro, ProfileMemory: o.ProfileMemory,
		WithStack: o.WithStack, WithFlops: o.WithFlops, WithModules: o.WithModules,
	}
	cfg := runner.Config{
		RunDir: o.Out, Timeout: o.Timeout, KillAfter: o.KillAfter, Agent: ac, Version: version.Version,
		Stdin: o.IO.In, Stdout: o.IO.Out, Stderr: o.IO.ErrOut, Signals: o.Signals, Env: o.Env, Dir: o.Dir,
	}
	err := cfg.Program(o.Launcher, o.Module, o.Args, o.Python)
	return cfg, err
}

// reportFlush bounds how long a signal that arrives while the reports are
// written waits for them: the text report is usually done by then.
const reportFlush = 3 * time.Second

func runRun(o *Options) error {
	cfg, err := o.config()
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("run: %w", err))
	}
	if msg := runner.MissingScript(cfg); msg != "" {
		// as plain Python says it and exits, with no run directory
		fmt.Fprintln(o.IO.ErrOut, msg)
		return exitcode.New(2, nil)
	}
	noTorch := false
	if cfg.Mode != runner.Launcher {
		has, err := runner.HasTorch(cfg.Python)
		noTorch = err == nil && !has
	}
	// cutShort: a signal left the reports unfinished and the process exits
	// as soon as the command returns, with nothing to tidy up first (a
	// live page's open streams would hold it a second, and a further
	// Ctrl-C must not kill it by SIGINT).
	cutShort := false
	// One channel for the whole command: while the program runs, runner.Run
	// forwards signals to it; afterwards they cut the report writing short.
	if cfg.Signals == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer func() {
			if !cutShort {
				signal.Stop(ch)
			}
		}()
		cfg.Signals = ch
	}
	// the program shares the terminal: progress goes on a status row its
	// output cannot tear
	var prog *iostreams.StatusLine
	if o.IO.IsStderrTTY() {
		prog = o.IO.StartStatusLine()
		cfg.Progress = func(s string) { prog.Update("bottleneck: " + s) }
	} else {
		cfg.Progress = phaseLines(o.IO.ErrOut)
	}
	var lv *liveView
	var liveURL string
	if o.Live != "" {
		lv = &liveView{title: strings.Join(o.Args, " "), errOut: o.IO.ErrOut, dir: cfg.RunDir}
		switch {
		case o.Live == "web":
			stop, url, err := startLiveWeb(o, lv)
			if err != nil {
				return exitcode.New(exitcode.Failed, fmt.Errorf("run: %w", err))
			}
			defer func() {
				if !cutShort {
					stop()
				}
			}()
			liveURL = url
		case prog != nil:
			// the frame and the phase share the bottom region
			lv.status = prog
			cfg.Progress = lv.setPhase
		default:
			lv.plain, lv.every = o.IO.ErrOut, cmp.Or(o.livePlainEvery, livePlainEvery)
		}
		cfg.Live = lv.update
	}
	res, err := runner.Run(context.Background(), cfg)
	if res == nil {
		prog.Done()
		return exitcode.New(exitcode.Failed, fmt.Errorf("run: %w", err))
	}
	if err != nil {
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: %v\n", err)
	}
	if noTorch && res.ExitCode != 0 {
		// the program failed without torch (its traceback says how):
		// one line, not a report of a run that profiled nothing
		prog.Done()
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: %s has no torch, so nothing was profiled (the program exited with status %d): %s\n", cfg.Python, res.ExitCode, torchHint(cfg.Dir))
		_ = os.RemoveAll(res.RunDir)
		return exitcode.New(res.ExitCode, nil)
	}
	// A reader that went away (`| head -c1`) must not turn the program's
	// status into SIGPIPE's: writes to a closed stdout/stderr then fail
	// with EPIPE, which is ignored. Handlers are reset in exec'd children.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	written := make(chan struct{})
	go func() {
		defer close(written)
		finishRun(o, cfg, res, prog)
	}()
	if !awaitReports(o, cfg.Signals, written) {
		cutShort = true
		return programStatus(res.ExitCode)
	}
	if liveURL != "" {
		finishLiveWeb(o, lv, liveURL, res.RunDir, cfg.Signals) // a signal ends the grace period
	}
	return programStatus(res.ExitCode)
}

// programStatus is the error that gives bottleneck the program's exit
// status (nil for 0).
func programStatus(code int) error {
	if code != 0 {
		return exitcode.New(code, nil)
	}
	return nil
}

// finishRun is what run does once the program has ended: the reports,
// printed as asked, then --repro's list, the --job-dir summaries and the
// --verify runs.
func finishRun(o *Options, cfg runner.Config, res *runner.Result, prog *iostreams.StatusLine) {
	if prog != nil {
		prog.Update("bottleneck: analyzing")
	} else {
		cfg.Progress("analyzing")
	}
	d, rerr := openRun(o.IO, res.RunDir)
	var scripts *repro.Written
	var reproErr error
	if o.Repro { // before the reports, which link the scripts
		scripts, reproErr = writeRepro(res.RunDir, d)
	}
	var text, brief string
	if rerr == nil {
		text, brief, rerr = renderReports(res.RunDir, d)
	}
	prog.Done()
	if rerr != nil {
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: report: %v\n", rerr)
	}
	if !o.Full && brief != "" {
		text = brief
	}
	paths := "report: " + filepath.Join(res.RunDir, rundir.ReportText)
	if html := filepath.Join(res.RunDir, rundir.ReportHTML); fileExists(html) {
		paths += "\n        " + html
	}
	switch o.Report {
	case "stderr":
		fmt.Fprintf(o.IO.ErrOut, "\n%s\n%s\n", text, paths)
	case "stdout":
		fmt.Fprintf(o.IO.Out, "%s\n%s\n", text, paths)
	}
	if o.Repro {
		w := o.IO.ErrOut
		if o.Report == "stdout" {
			w = o.IO.Out
		}
		listRepro(textsafe.Writer(w), scripts, reproErr) // op names come from the trace
	}
	if o.JobDir != "" { // after this node's report, which stands without the job's
		writeJob(o, res)
	} else if cfg.Agent.JobExchange != nil {
		writeJobOverStore(o, res)
	}
	if o.Verify != "" && res.ExitCode == 0 && d != nil {
		// second runs of the program: after its report, never in place of it
		t := &try.Options{IO: o.IO, Args: o.Args, Module: o.Module, Launcher: o.Launcher, Python: o.Python, Steps: o.VerifySteps, Timeout: o.Timeout, Env: o.Env, Dir: o.Dir}
		w := o.IO.ErrOut
		if o.Report == "stdout" {
			w = o.IO.Out
		}
		try.Verify(t, w, res.RunDir, d.Report.Findings(), maxVerified, o.Verify == "numerics")
		if err := reportTried(res.RunDir, d); err != nil {
			fmt.Fprintf(o.IO.ErrOut, "bottleneck: report: %v\n", err)
		}
	}
}

// reproTop is how many of the hottest ops --repro writes a script for.
const reproTop = 3

// listRepro lists the repro scripts --repro wrote (docs/repro.md).
func listRepro(w io.Writer, res *repro.Written, err error) {
	if err != nil {
		fmt.Fprintf(w, "bottleneck: repro: %v\n", err)
		return
	}
	for _, s := range res.Scripts {
		if s.Err != nil {
			fmt.Fprintf(w, "bottleneck: repro: %v\n", s.Err)
			continue
		}
		fmt.Fprintf(w, "repro: %s (%s, %d calls in the trace; python3 it to time it and its variants)\n", filepath.Join(res.Dir, s.FileName), s.Op, s.AllCalls)
	}
}

// maxVerified is how many findings --verify tries, one run each.
const maxVerified = 2

// awaitReports waits while the reports are written and says whether they
// were: a signal then (the program has ended) gives them reportFlush
// more, and what is not written by then is left (report.txt is written
// first, so it is there).
func awaitReports(o *Options, sigs <-chan os.Signal, written <-chan struct{}) bool {
	select {
	case <-written:
		return true
	case <-sigs:
	}
	fmt.Fprintf(o.IO.ErrOut, "bottleneck: stopping: finishing the reports for at most %s\n", reportFlush)
	select {
	case <-written:
		return true
	case <-time.After(reportFlush):
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: reports cut short; report.txt holds what was written\n")
		return false
	}
}

// writeReports renders report.txt, report.json and report.html into the
// run directory, updates the manifest's file list, and returns the text and
// its brief form for the terminal ("" when there is no trace analysis to
// shorten), and the directory as read (nil when it could not be). It
// opens the directory as every other command does (driver.Open), so
// `bottleneck report DIR` gives the same verdict.
func writeReports(ios *iostreams.IOStreams, dir string) (text string, brief string, d *driver.Data, err error) {
	if d, err = openRun(ios, dir); err != nil {
		return "", "", nil, err
	}
	text, brief, err = renderReports(dir, d)
	return text, brief, d, err
}

// openRun reads and analyses the run directory, once. The run section
// alone is written first: an interrupted analysis still leaves a
// report.txt.
func openRun(ios *iostreams.IOStreams, dir string) (*driver.Data, error) {
	opts := driver.DefaultOptions()
	if run, err := rundir.Read(dir); err == nil {
		opts.Run = run // read once: the analysis goes on from it
		if len(run.Traces) > 0 {
			var early bytes.Buffer
			runreport.WriteText(&early, runreport.FromRun(run))
			early.WriteString("\nTrace analysis not finished (interrupted).\n")
			if err := atomicfile.Write(filepath.Join(dir, rundir.ReportText), early.Bytes()); err != nil {
				return nil, err
			}
		}
	}
	return driver.Open(ios, []string{dir}, opts)
}

// writeRepro writes the hot ops' scripts of the run directory d read
// (--repro), from its first trace.
func writeRepro(dir string, d *driver.Data) (*repro.Written, error) {
	switch {
	case d == nil:
		return nil, errors.New(dir + ": the run directory could not be read")
	case len(d.Runs[0].Traces) == 0:
		return nil, fmt.Errorf("%s: the run directory has no trace (run without --no-trace)", dir)
	case len(d.Traces) == 0:
		return nil, errors.New(dir + ": no trace read")
	}
	w, err := repro.Write(d.Traces[0], d.Runs[0], dir, "", d.Status != driver.Complete, repro.Options{Top: reproTop})
	d.Runs[0].Repro = rundir.ReproScripts(dir) // for the reports, rendered next
	return w, err
}

// renderReports is writeReports for the run directory d already read.
func renderReports(dir string, d *driver.Data) (text string, brief string, err error) {
	run := d.Runs[0]
	rr := runreport.FromRun(run)
	var full bytes.Buffer
	out := struct {
		Schema      string            `json:"schema"`
		Run         *runreport.Report `json:"run"`
		TraceReport json.RawMessage   `json:"trace_report,omitempty"`
	}{Schema: runreport.Schema, Run: rr}
	if len(run.Traces) > 0 {
		// The verdict first, then the run section, then the trace analyses.
		report.WriteVerdict(&full, d.Report)
		runreport.WriteText(&full, rr)
		fmt.Fprintf(&full, "\nTrace analysis (%s):\n", units.Things(len(run.Traces), "trace"))
		if err := report.WriteDetails(&full, d.Report); err != nil {
			return full.String(), "", err
		}
		var js bytes.Buffer
		if err := driver.Write(&js, d.Report, true); err != nil {
			return full.String(), "", err
		}
		out.TraceReport = bytes.TrimSpace(js.Bytes())
		var b bytes.Buffer
		writeRunSummary(&b, rr)
		report.WriteBrief(&b, d.Report, report.TerminalWidth)
		brief = b.String()
	} else {
		runreport.WriteText(&full, rr)
		fmt.Fprintf(&full, "\nNo trace was written, so there is no trace analysis (see \"Not recorded\").\n")
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return full.String(), brief, err
	}
	var firstErr error
	for _, f := range []struct {
		name string
		b    []byte
	}{{rundir.ReportText, full.Bytes()}, {rundir.ReportJSON, js.Bytes()}} {
		if err := atomicfile.Write(filepath.Join(dir, f.name), f.b); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	// report.html last: the slowest to write, and the text comes first
	if len(run.Traces) > 0 {
		page := htmlreport.Build(htmlreport.Input{Report: d.Report, Traces: d.Traces, Profiles: d.Profiles, Env: d.Env, Runs: d.Runs},
			htmlreport.Options{Title: d.Title})
		if err := htmlreport.WriteFile(filepath.Join(dir, rundir.ReportHTML), page); err != nil {
			fmt.Fprintf(&full, "HTML report not written: %v\n", err)
		}
	}
	if m := run.Manifest; m.ScanFiles(dir) == nil {
		_ = rundir.WriteManifest(dir, m)
	}
	return full.String(), brief, firstErr
}

// reportTried writes the reports again with what --verify tried: the run
// directory d as writeReports read it, and tried.json, the one file
// Verify wrote into it (its runs are beside it), not the whole directory
// read and its traces analysed a second time.
func reportTried(dir string, d *driver.Data) error {
	run := d.Runs[0]
	if run.Tried, run.TriedErr = rundir.ReadTried(dir); rundir.NotWritten(run.TriedErr) {
		run.TriedErr = nil // as rundir.Read has it
	}
	_, _, err := renderReports(dir, d)
	return err
}

// writeRunSummary is the brief's first lines: what ran, how it ended, and
// the steps the agent saw (the full report has the environment and more).
func writeRunSummary(w io.Writer, rr *runreport.Report) {
	fmt.Fprintln(w, report.Clip("bottleneck run: "+strings.Join(rr.Command, " "), report.TerminalWidth))
	var parts []string
	if e := rr.Exit; e != nil {
		how := fmt.Sprintf("exit status %d", e.Code)
		if e.Signal != "" {
			how += " (" + e.Signal + ")"
		}
		parts = append(parts, fmt.Sprintf("%s after %s", how, units.Seconds(rr.DurationS)))
	}
	for _, p := range rr.Processes {
		if s := p.StepSeries; s != nil && p.Evidence != nil {
			src, n := runreport.StepSource(p.Evidence)
			if sw := p.Evidence.StepSourceSwitch; sw != nil && sw.AfterSteps > 0 {
				src += fmt.Sprintf("; the first %d %s before them were not training iterations and are not steps", sw.AfterSteps, runreport.StepSourceName(sw.From))
			}
			for _, st := range p.Evidence.StepStages {
				src += fmt.Sprintf("; from step %d another optimizer's (%s), the first having stopped (%d of its steps before not timed)", st.AfterStep+1, textsafe.String(st.Optimizer), st.Untimed)
			}
			parts = append(parts, fmt.Sprintf("%s: %d %s, median step %s", p.Tag, n, src, units.Duration(s.MedianS*1e6)))
		}
		if ev := p.Evidence; ev != nil {
			for _, win := range ev.Profiler.Windows {
				if win.ClosedBy != "" {
					why := map[string]string{"idle": "steps stopped coming", "wall": "open for too long",
						"memory": "its memory grew too much while recording"}[win.ClosedBy]
					parts = append(parts, fmt.Sprintf("%s: profiler window %d closed after %d steps (%s)", p.Tag, win.Index, len(win.Steps), cmp.Or(why, win.ClosedBy)))
				}
			}
		}
	}
	fmt.Fprintf(w, "  %s\n\n", strings.Join(parts, "; "))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// torchHint points at an interpreter that has torch: one found near the
// user, else how to choose or get one.
func torchHint(dir string) string {
	if dir == "" {
		dir = "."
	}
	if ps := runner.TorchPythons(dir); len(ps) > 0 {
		return "run it with --python " + ps[0]
	}
	return "pass --python with the interpreter of the environment that has torch, or install torch into this one (python -m pip install torch)"
}

// phaseLines is the progress for a stderr that is not a terminal (a log,
// CI): one plain line when the phase changes, not one per step.
func phaseLines(w io.Writer) func(string) {
	last := ""
	digits := regexp.MustCompile(`[0-9]+`)
	return func(s string) {
		if phase := digits.ReplaceAllString(s, "#"); phase != last {
			last = phase
			fmt.Fprintf(w, "bottleneck: %s\n", s)
		}
	}
}
