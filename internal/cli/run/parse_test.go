package run

import (
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
)

// TestParse: flags and the program become Options without running
// anything; bad values, enum flags included, are usage errors (exit 2)
// before the command runs.
func TestParse(t *testing.T) {
	// parsed is the Options of the default flags and args, changed by set.
	parsed := func(args []string, set func(*Options)) *Options {
		o := &Options{Args: args, KillAfter: 30 * time.Second, Report: "stderr", PythonProfiler: "sample",
			SampleInterval: 20 * time.Millisecond, WindowInterval: 5 * time.Millisecond, StepSource: "auto",
			SkipFirst: 5, Warmup: 2, Active: 5, MinWindow: 200 * time.Millisecond, Repeat: 1,
			VerifySteps: 20, LiveHost: "127.0.0.1", JobWait: defaultJobWait}
		if set != nil {
			set(o)
		}
		return o
	}
	for _, tc := range []struct {
		args []string
		want *Options
	}{
		// the program's own flags stay its own
		{[]string{"train.py", "--epochs", "1", "--report", "x"}, parsed([]string{"train.py", "--epochs", "1", "--report", "x"}, nil)},
		{[]string{"-m", "pkg.train", "--lr", "0.1"}, parsed([]string{"pkg.train", "--lr", "0.1"}, func(o *Options) { o.Module = true })},
		{[]string{"--", "torchrun", "--nproc_per_node", "2", "train.py"},
			parsed([]string{"torchrun", "--nproc_per_node", "2", "train.py"}, func(o *Options) { o.Launcher = true })},
		// an interpreter first: its script or module with it as --python, or with its own flags a launcher's line
		{[]string{"/venv/bin/python3.11", "train.py", "-u"}, parsed([]string{"train.py", "-u"}, func(o *Options) { o.Python = "/venv/bin/python3.11" })},
		{[]string{"--python", "py", "python", "-m", "pkg.train"}, parsed([]string{"pkg.train"}, func(o *Options) { o.Python, o.Module = "python", true })},
		{[]string{"python", "-u", "train.py"}, parsed([]string{"python", "-u", "train.py"}, func(o *Options) { o.Launcher = true })},
		{[]string{"python"}, parsed([]string{"python"}, func(o *Options) { o.Launcher = true })},
		{[]string{"python_utils.py"}, parsed([]string{"python_utils.py"}, nil)},
		{[]string{"-m", "python"}, parsed([]string{"python"}, func(o *Options) { o.Module = true })},
		{[]string{"--", "python3", "train.py"}, parsed([]string{"python3", "train.py"}, func(o *Options) { o.Launcher = true })},
		{[]string{"--python", "py", "--output", "out", "--timeout", "10m", "--kill-after", "5s", "--report", "stdout", "--full",
			"--python-profiler", "cprofile", "--sample-interval", "10ms", "--window-sample-interval", "1ms", "--step-source", "optimizer",
			"--no-trace", "--skip-first", "1", "--wait", "1", "--warmup", "0", "--active", "3", "--min-window", "1s", "--repeat", "0",
			"--record-shapes", "--profile-memory", "--with-stack", "--with-flops", "--with-modules", "--stop-after-profile", "--no-sync-debug",
			"--nvtx=ops", "--repro", "--verify=numerics", "--verify-steps", "5", "--live=web", "--live-port", "8080", "--host", "0.0.0.0",
			"--job-dir", "/jobs/1", "--job-wait", "1m", "x.py"},
			parsed([]string{"x.py"}, func(o *Options) {
				o.Python, o.Out, o.Timeout, o.KillAfter, o.Report, o.Full = "py", "out", 10*time.Minute, 5*time.Second, "stdout", true
				o.PythonProfiler, o.SampleInterval, o.WindowInterval, o.StepSource = "cprofile", 10*time.Millisecond, time.Millisecond, "optimizer"
				o.NoTrace, o.SkipFirst, o.Wait, o.Warmup, o.Active, o.MinWindow, o.Repeat = true, 1, 1, 0, 3, time.Second, 0
				o.RecordShapes, o.ProfileMemory, o.WithStack, o.WithFlops, o.WithModules, o.StopAfterProfile, o.NoSyncDebug = true, true, true, true, true, true, true
				o.NVTX, o.Repro, o.Verify, o.VerifySteps, o.Live, o.LivePort, o.LiveHost = "ops", true, "numerics", 5, "web", 8080, "0.0.0.0"
				o.JobDir, o.JobWait, o.fixedStart, o.fixedInterval = "/jobs/1", time.Minute, true, true
			})},
		// --skip-first or --warmup: the window starts where they say, however long the steps
		{[]string{"--warmup", "2", "x.py"}, parsed([]string{"x.py"}, func(o *Options) { o.fixedStart = true })},
		// bare --verify, --live and --nvtx take no value: the next argument is the program
		{[]string{"--verify", "--live", "--nvtx", "x.py"}, parsed([]string{"x.py"}, func(o *Options) { o.Verify, o.Live, o.NVTX = "on", "term", "steps" })},
		// --active alone: exactly those steps; with --min-window, as given
		{[]string{"--active", "3", "x.py"}, parsed([]string{"x.py"}, func(o *Options) { o.Active, o.MinWindow = 3, 0 })},
		{[]string{"--active", "3", "--min-window", "1s", "x.py"}, parsed([]string{"x.py"}, func(o *Options) { o.Active, o.MinWindow = 3, time.Second })},
		{[]string{"--out", "o", "x.py"}, parsed([]string{"x.py"}, func(o *Options) { o.Out = "o" })}, // the old name
		// a PINN's long L-BFGS steps: each evaluation of the closure a step
		{[]string{"--step-source", "closure", "x.py"}, parsed([]string{"x.py"}, func(o *Options) { o.StepSource = "closure" })},
		{[]string{}, nil},
		{[]string{"--timeout", "-5s", "x.py"}, nil},
		{[]string{"--kill-after", "-1s", "x.py"}, nil},
		{[]string{"--active", "0", "x.py"}, nil},
		{[]string{"--min-window", "-1s", "x.py"}, nil},
		{[]string{"--skip-first", "-1", "x.py"}, nil},
		{[]string{"--repeat", "-1", "x.py"}, nil},
		{[]string{"--sample-interval", "50us", "x.py"}, nil},
		{[]string{"--job-wait", "-1s", "x.py"}, nil},
		{[]string{"--verify", "--verify-steps", "2", "x.py"}, nil},
		{[]string{"-m", "--", "python", "x.py"}, nil},
		{[]string{"--python-profiler", "perf", "x.py"}, nil},
		{[]string{"--step-source", "epoch", "x.py"}, nil},
		{[]string{"--report", "file", "x.py"}, nil},
		{[]string{"--verify=all", "x.py"}, nil},
		{[]string{"--live=tty", "x.py"}, nil},
		{[]string{"--nvtx=kernels", "x.py"}, nil},
		{[]string{"--live-port", "70000", "x.py"}, nil},
		{[]string{"--no-such-flag", "x.py"}, nil},
	} {
		clitest.CheckParse(t, newCmd, func(ios *iostreams.IOStreams) *Options { return &Options{IO: ios} }, func(o *Options) { o.IO = nil }, tc.args, tc.want)
	}
}

// The agent may start the window early on long steps (early_start_s)
// only where the schedule was left to it: not with --skip-first or
// --warmup, nor for a launcher's ranks, which would decide apart.
func TestEarlyStartConfig(t *testing.T) {
	if runner.DefaultAgentConfig().Profiler.EarlyStartS <= 0 {
		t.Fatal("no early start by default")
	}
	for _, tc := range []struct {
		o    Options
		want float64
	}{
		{Options{}, runner.DefaultAgentConfig().Profiler.EarlyStartS},
		{Options{fixedStart: true}, 0},
		{Options{Launcher: true}, 0},
	} {
		tc.o.IO, _, _, _ = iostreams.Test()
		tc.o.Active, tc.o.Args = 5, []string{"x.py"}
		cfg, _ := tc.o.config() // (no such program: the configuration is made first)
		if got := cfg.Agent.Profiler.EarlyStartS; got != tc.want {
			t.Errorf("%+v: early_start_s %v, want %v", tc.o, got, tc.want)
		}
	}
}

// The sampler keeps within its budget by default; a --sample-interval
// given is kept whatever a sample costs.
func TestSampleBudgetConfig(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want float64
	}{
		{Options{}, runner.DefaultAgentConfig().SampleBudget},
		{Options{fixedInterval: true}, 0},
	} {
		tc.o.IO, _, _, _ = iostreams.Test()
		tc.o.Active, tc.o.Args = 5, []string{"x.py"}
		cfg, _ := tc.o.config()
		if got := cfg.Agent.SampleBudget; got != tc.want {
			t.Errorf("fixed interval %v: sample_budget %v, want %v", tc.o.fixedInterval, got, tc.want)
		}
	}
	if runner.DefaultAgentConfig().SampleBudget <= 0 {
		t.Error("no budget by default")
	}
}
