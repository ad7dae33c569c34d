// Package run implements `bottleneck run`: run a Python program once under
// the agent, then print the report (docs/run.md).
package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
	"github.com/bottleneck-dev/bottleneck/internal/runreport"
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

	PythonProfiler   string
	SampleInterval   time.Duration
	WindowInterval   time.Duration
	StepSource       string
	NoTrace          bool
	SkipFirst        int
	Wait             int
	Warmup           int
	Active           int
	Repeat           int
	RecordShapes     bool
	ProfileMemory    bool
	WithStack        bool
	WithFlops        bool
	WithModules      bool
	StopAfterProfile bool
	NoSyncDebug      bool

	// Signals, Env and Dir are for tests (see runner.Config).
	Signals <-chan os.Signal
	Env     []string
	Dir     string
}

// NewCmd returns the `run` command. It only parses flags; runRun does the work.
func NewCmd(ios *iostreams.IOStreams) *cobra.Command {
	return newCmd(&Options{IO: ios})
}

func newCmd(o *Options) *cobra.Command {
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

Files go to --out (default ./bottleneck-runs/<timestamp>/); see docs/run.md.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Args = args
			o.Launcher = cmd.ArgsLenAtDash() == 0
			if len(args) == 0 {
				return exitcode.New(exitcode.Usage, errors.New("run: missing program: script.py, -m module, or -- launcher ..."))
			}
			return runRun(o)
		},
	}
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.BoolVarP(&o.Module, "module", "m", false, "run a module as `python -m` does: bottleneck run -m pkg.mod [args]")
	f.StringVar(&o.Python, "python", "", "Python interpreter (default: the active virtualenv's, else python3 on PATH)")
	f.StringVarP(&o.Out, "out", "o", "", "run directory (default ./bottleneck-runs/<timestamp>)")
	f.DurationVar(&o.Timeout, "timeout", 0, "stop the program gracefully (like Ctrl-C) after this long, e.g. 10m")
	f.DurationVar(&o.KillAfter, "kill-after", 30*time.Second, "after --timeout or SIGTERM, kill the program if it has not ended within this long")
	f.StringVar(&o.Report, "report", "stderr", "where to print the report: stderr, stdout or none (report.txt is always written)")
	f.StringVar(&o.PythonProfiler, "python-profiler", d.PythonProfiler, "Python profile: sample (wall-clock, all threads), cprofile (exact calls, main thread, also .pstats) or off")
	f.DurationVar(&o.SampleInterval, "sample-interval", time.Duration(d.SampleInterval*float64(time.Second)), "Python sampler period outside the recording window")
	f.DurationVar(&o.WindowInterval, "window-sample-interval", time.Duration(d.WindowInterval*float64(time.Second)), "Python sampler period while the window records")
	f.StringVar(&o.StepSource, "step-source", d.StepSource, "what a step is: auto, optimizer, dataloader or forward (see docs/run.md)")
	f.BoolVar(&o.NoTrace, "no-trace", false, "do not run torch.profiler (Python profile and evidence only)")
	f.IntVar(&o.SkipFirst, "skip-first", d.Profiler.SkipFirst, "steps to ignore before the profiler schedule starts")
	f.IntVar(&o.Wait, "wait", d.Profiler.Wait, "idle steps at the start of each window cycle")
	f.IntVar(&o.Warmup, "warmup", d.Profiler.Warmup, "profiler warm-up steps (traced, then discarded)")
	f.IntVar(&o.Active, "active", d.Profiler.Active, "recorded steps per window")
	f.IntVar(&o.Repeat, "repeat", d.Profiler.Repeat, "windows to record (0: until the program ends)")
	f.BoolVar(&o.RecordShapes, "record-shapes", false, "record operator input shapes")
	f.BoolVar(&o.ProfileMemory, "profile-memory", false, "record tensor allocations")
	f.BoolVar(&o.WithStack, "with-stack", false, "record Python stacks of operators")
	f.BoolVar(&o.WithFlops, "with-flops", false, "estimate FLOPs of matmuls and convolutions")
	f.BoolVar(&o.WithModules, "with-modules", false, "record the nn.Module hierarchy of operators")
	f.BoolVar(&o.StopAfterProfile, "stop-after-profile", false, "end the program (exit 0) once the last window is written")
	f.BoolVar(&o.NoSyncDebug, "no-sync-debug", false, "do not record CUDA implicit-sync call sites in the window")
	return cmd
}

func (o *Options) validate() error {
	if !slices.Contains([]string{"sample", "cprofile", "off"}, o.PythonProfiler) {
		return fmt.Errorf("--python-profiler %q: want sample, cprofile or off", o.PythonProfiler)
	}
	if !slices.Contains([]string{"auto", "optimizer", "dataloader", "forward"}, o.StepSource) {
		return fmt.Errorf("--step-source %q: want auto, optimizer, dataloader or forward", o.StepSource)
	}
	if !slices.Contains([]string{"stderr", "stdout", "none"}, o.Report) {
		return fmt.Errorf("--report %q: want stderr, stdout or none", o.Report)
	}
	if o.SkipFirst < 0 || o.Wait < 0 || o.Warmup < 0 || o.Repeat < 0 {
		return errors.New("--skip-first, --wait, --warmup and --repeat must be >= 0")
	}
	if o.Active < 1 {
		return errors.New("--active must be >= 1")
	}
	if o.SampleInterval < 100*time.Microsecond || o.WindowInterval < 100*time.Microsecond {
		return errors.New("--sample-interval and --window-sample-interval must be at least 100µs")
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
	ac.StepSource = o.StepSource
	ac.StopAfterProfile = o.StopAfterProfile
	ac.SyncDebug = !o.NoSyncDebug
	ac.Profiler = runner.ProfilerConfig{
		Enabled: !o.NoTrace, SkipFirst: o.SkipFirst, Wait: o.Wait, Warmup: o.Warmup, Active: o.Active,
		Repeat: o.Repeat, RecordShapes: o.RecordShapes, ProfileMemory: o.ProfileMemory,
		WithStack: o.WithStack, WithFlops: o.WithFlops, WithModules: o.WithModules,
	}
	cfg := runner.Config{
		RunDir: o.Out, Timeout: o.Timeout, KillAfter: o.KillAfter, Agent: ac, Version: version.Version,
		Stdin: o.IO.In, Stdout: o.IO.Out, Stderr: o.IO.ErrOut, Signals: o.Signals, Env: o.Env, Dir: o.Dir,
	}
	switch {
	case o.Launcher:
		cfg.Mode = runner.Launcher
		cfg.Args = o.Args
	case o.Module:
		cfg.Mode = runner.Module
		cfg.Target, cfg.Args = o.Args[0], o.Args[1:]
	default:
		cfg.Mode = runner.Script
		cfg.Target, cfg.Args = o.Args[0], o.Args[1:]
	}
	if cfg.Mode != runner.Launcher {
		py, err := runner.FindPython(o.Python)
		if err != nil {
			return cfg, err
		}
		cfg.Python = py
	}
	return cfg, nil
}

func runRun(o *Options) error {
	if err := o.validate(); err != nil {
		return exitcode.New(exitcode.Usage, fmt.Errorf("run: %w", err))
	}
	cfg, err := o.config()
	if err != nil {
		return exitcode.New(exitcode.Failed, fmt.Errorf("run: %w", err))
	}
	var prog *iostreams.Progress
	if o.IO.IsStderrTTY() {
		prog = o.IO.StartProgress()
		cfg.Progress = func(s string) { prog.Update("bottleneck: " + s) }
	}
	res, err := runner.Run(context.Background(), cfg)
	if res == nil {
		prog.Done()
		return exitcode.New(exitcode.Failed, fmt.Errorf("run: %w", err))
	}
	if err != nil {
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: %v\n", err)
	}
	if prog != nil {
		prog.Update("bottleneck: analyzing")
	}
	text, rerr := writeReports(o.IO, res.RunDir)
	prog.Done()
	if rerr != nil {
		fmt.Fprintf(o.IO.ErrOut, "bottleneck: report: %v\n", rerr)
	}
	switch o.Report {
	case "stderr":
		fmt.Fprintf(o.IO.ErrOut, "\n%s\nreport: %s\n", text, filepath.Join(res.RunDir, "report.txt"))
	case "stdout":
		fmt.Fprintf(o.IO.Out, "%s\nreport: %s\n", text, filepath.Join(res.RunDir, "report.txt"))
	}
	if res.ExitCode != 0 {
		return exitcode.New(res.ExitCode, nil)
	}
	return nil
}

// writeReports renders report.txt and report.json into the run directory,
// updates the manifest's file list, and returns the text.
func writeReports(ios *iostreams.IOStreams, dir string) (string, error) {
	rr, err := runreport.Build(dir)
	if err != nil {
		return "", err
	}
	var text bytes.Buffer
	runreport.WriteText(&text, rr)
	out := struct {
		Schema      string            `json:"schema"`
		Run         *runreport.Report `json:"run"`
		TraceReport json.RawMessage   `json:"trace_report,omitempty"`
		TraceError  string            `json:"trace_error,omitempty"`
	}{Schema: runreport.Schema, Run: rr}
	traces := runner.Traces(dir)
	if len(traces) > 0 {
		var body bytes.Buffer
		body.Write(text.Bytes())
		text.Reset()
		tr, terr := analyzeTraces(ios, dir, traces, &text, &body)
		if terr != nil {
			out.TraceError = terr.Error()
			fmt.Fprintf(&text, "\ntrace analysis failed: %v\n", terr)
		}
		out.TraceReport = tr
	} else {
		fmt.Fprintf(&text, "\nNo trace was written, so there is no trace analysis (see \"Not recorded\").\n")
	}
	var js bytes.Buffer
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return text.String(), err
	}
	var firstErr error
	for name, b := range map[string][]byte{"report.txt": text.Bytes(), "report.json": js.Bytes()} {
		if err := runner.WriteFileAtomic(filepath.Join(dir, name), b); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if m, err := runner.ReadManifest(dir); err == nil {
		if m.ScanFiles(dir) == nil {
			_ = runner.WriteManifest(dir, m)
		}
	}
	return text.String(), firstErr
}

// analyzeTraces runs the trace analyses once and renders them as text
// (appended to text) and JSON (returned).
// The text opens with the verdict (written to text), then the run section
// (already in body), then the trace analyses; all of it ends up in text.
func analyzeTraces(ios *iostreams.IOStreams, dir string, traces []string, text, body *bytes.Buffer) (json.RawMessage, error) {
	defer func() { text.Write(body.Bytes()) }()
	res, took, err := driver.Load(ios, traces)
	if err != nil {
		return nil, err
	}
	ev, _ := diagnose.LoadRun(dir) // the diagnosis works without it
	r := driver.Build(res, took, driver.Options{Rank: -1, Table: optable.Options{Top: 15}, RunEvidence: ev})
	report.WriteVerdict(text, r)
	fmt.Fprintf(body, "\nTrace analysis (%d trace%s):\n", len(traces), plural(len(traces)))
	if err := htmlreport.WriteRunDir(dir, r, res.Traces); err != nil {
		fmt.Fprintf(body, "HTML report not written: %v\n", err)
	}
	if err := report.WriteDetails(body, r); err != nil {
		return nil, err
	}
	var js bytes.Buffer
	if err := driver.Write(&js, r, true); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(js.Bytes()), nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
