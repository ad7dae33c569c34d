// Package runner launches the user's Python program under bottleneck's
// agent for `bottleneck run`: it prepares the run directory, writes the
// agent and its configuration, starts the program once with its standard
// streams passed through, relays Ctrl-C / SIGTERM / --timeout, and records
// the manifest. It knows nothing of cobra or of report rendering.
//
// Signals (docs/run.md, "Exits"): the first SIGINT is graceful (the program
// gets KeyboardInterrupt and the agent saves; when the program shares
// bottleneck's terminal the terminal already delivered it, otherwise
// bottleneck forwards it); the second SIGINT kills the program and its
// descendants. SIGTERM/SIGHUP are forwarded as SIGTERM (the agent saves,
// then the program dies of SIGTERM). --timeout sends SIGINT, then SIGKILL
// after KillAfter. If bottleneck itself is killed, Linux delivers SIGTERM
// to the program (parent-death signal).
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/agent"
)

// Mode says how the program is started.
type Mode string

const (
	// Script: `python script.py args...`.
	Script Mode = "script"
	// Module: `python -m package.module args...`.
	Module Mode = "module"
	// Launcher: an arbitrary command (torchrun, accelerate launch, python
	// -m ...); the agent is injected into its Python processes through a
	// sitecustomize shim on PYTHONPATH.
	Launcher Mode = "launcher"
)

// ProfilerConfig is the torch.profiler window (see docs/run.md).
type ProfilerConfig struct {
	Enabled       bool `json:"enabled"`
	SkipFirst     int  `json:"skip_first"`
	Wait          int  `json:"wait"`
	Warmup        int  `json:"warmup"`
	Active        int  `json:"active"`
	Repeat        int  `json:"repeat"`
	RecordShapes  bool `json:"record_shapes"`
	ProfileMemory bool `json:"profile_memory"`
	WithStack     bool `json:"with_stack"`
	WithFlops     bool `json:"with_flops"`
	WithModules   bool `json:"with_modules"`
}

// AgentConfig is what the agent reads from its config.json.
type AgentConfig struct {
	RunDir             string         `json:"run_dir"`
	ToolVersion        string         `json:"tool_version"`
	PythonProfiler     string         `json:"python_profiler"`        // sample | cprofile | off
	SampleInterval     float64        `json:"sample_interval"`        // seconds, outside the window
	WindowInterval     float64        `json:"window_sample_interval"` // seconds, while the window records
	Profiler           ProfilerConfig `json:"profiler"`
	StepSource         string         `json:"step_source"` // auto | optimizer | dataloader | forward
	StopAfterProfile   bool           `json:"stop_after_profile"`
	SyncDebug          bool           `json:"sync_debug"`
	CheckpointInterval float64        `json:"checkpoint_interval"` // seconds; 0 disables
}

// DefaultAgentConfig returns the documented defaults.
func DefaultAgentConfig() AgentConfig {
	return AgentConfig{
		PythonProfiler: "sample",
		SampleInterval: 0.02,
		WindowInterval: 0.005,
		Profiler: ProfilerConfig{
			Enabled: true, SkipFirst: 5, Wait: 0, Warmup: 2, Active: 5, Repeat: 1,
		},
		StepSource:         "auto",
		SyncDebug:          true,
		CheckpointInterval: 15,
	}
}

// Config describes one run.
type Config struct {
	Python string // interpreter for Script and Module modes
	Mode   Mode
	// Target is the script path or module name; in Launcher mode Args is
	// the whole command and Target is unused.
	Target string
	Args   []string
	// RunDir is the run directory; "" means a new timestamped directory
	// under ./bottleneck-runs/.
	RunDir    string
	Timeout   time.Duration // 0: none
	KillAfter time.Duration // grace after a graceful stop before SIGKILL (default 30s)
	Agent     AgentConfig
	Version   string

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Env is appended to the environment (tests).
	Env []string
	// Dir is the program's working directory ("" : bottleneck's).
	Dir string
	// Progress, when set, receives one-line phase descriptions.
	Progress func(string)
	// Signals, when set, replaces the process's own SIGINT/SIGTERM/SIGHUP
	// notifications (tests inject signals through it).
	Signals <-chan os.Signal
	// TerminalForeground reports whether a SIGINT reached the program
	// directly from the terminal (it shares bottleneck's foreground process
	// group); then bottleneck does not forward it. Nil: detect.
	TerminalForeground func() bool
}

// Result is the outcome of a run.
type Result struct {
	RunDir   string
	Manifest *Manifest
	// ExitCode is the program's exit status (128+n when a signal ended it).
	ExitCode int
}

// FindPython returns the interpreter to use: explicit when set, else the
// active virtualenv's, else python3 (or python) on PATH.
func FindPython(explicit string) (string, error) {
	if explicit != "" {
		p, err := exec.LookPath(explicit)
		if err != nil {
			return "", fmt.Errorf("python interpreter %q: %w", explicit, err)
		}
		return p, nil
	}
	if venv := os.Getenv("VIRTUAL_ENV"); venv != "" {
		for _, n := range []string{"bin/python", "bin/python3", "Scripts/python.exe"} {
			p := filepath.Join(venv, n)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p, nil
			}
		}
	}
	for _, n := range []string{"python3", "python"} {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Python interpreter found: activate a virtualenv or pass --python")
}

// NewRunDir creates a fresh run directory: dir when set (it must not hold
// a previous run), else ./bottleneck-runs/<timestamp>[-N].
func NewRunDir(dir string, now time.Time) (string, error) {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, ManifestName)); err == nil {
			return "", fmt.Errorf("%s already holds a run (manifest.json); choose another --out", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		return filepath.Abs(dir)
	}
	base := filepath.Join("bottleneck-runs", now.Format("20060102-150405"))
	for i := 1; ; i++ {
		d := base
		if i > 1 {
			d = fmt.Sprintf("%s-%d", base, i)
		}
		if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
			return "", err
		}
		err := os.Mkdir(d, 0o755)
		if err == nil {
			return filepath.Abs(d)
		}
		if !os.IsExist(err) {
			return "", err
		}
	}
}

// Run runs the program once and returns when it has ended and the run
// directory and manifest are written. The error is for failures of
// bottleneck itself (no interpreter, unwritable directory); the program's
// own failure is reported through Result.ExitCode.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.KillAfter <= 0 {
		cfg.KillAfter = 30 * time.Second
	}
	start := time.Now()
	runDir, err := NewRunDir(cfg.RunDir, start)
	if err != nil {
		return nil, err
	}
	agentDir, err := os.MkdirTemp("", "bottleneck-agent-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(agentDir)
	boot, err := agent.Write(agentDir)
	if err != nil {
		return nil, err
	}
	ac := cfg.Agent
	ac.RunDir = runDir
	ac.ToolVersion = cfg.Version
	cfgPath := filepath.Join(agentDir, "config.json")
	b, _ := json.MarshalIndent(ac, "", "  ")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		return nil, err
	}

	var argv []string
	env := filterEnv(os.Environ(), "BOTTLENECK_AGENT_ACTIVE", "BOTTLENECK_AGENT_CONFIG")
	if _, set := os.LookupEnv("KINETO_LOG_LEVEL"); !set {
		// The profiler window would print Kineto's own log lines (USDT
		// profiler_start, gpuGetDeviceCount ...) on the program's stderr;
		// the program's output stays its own. Set it to see them.
		env = append(env, "KINETO_LOG_LEVEL=6")
	}
	switch cfg.Mode {
	case Script, Module:
		if cfg.Python == "" {
			return nil, errors.New("runner: no Python interpreter")
		}
		argv = append([]string{cfg.Python, boot, cfgPath, string(cfg.Mode), cfg.Target}, cfg.Args...)
	case Launcher:
		if len(cfg.Args) == 0 {
			return nil, errors.New("runner: empty launcher command")
		}
		argv = append([]string(nil), cfg.Args...)
		pp := agentDir
		if old := os.Getenv("PYTHONPATH"); old != "" {
			pp += string(os.PathListSeparator) + old
		}
		env = filterEnv(env, "PYTHONPATH")
		env = append(env, "PYTHONPATH="+pp, "BOTTLENECK_AGENT_CONFIG="+cfgPath)
	default:
		return nil, fmt.Errorf("runner: unknown mode %q", cfg.Mode)
	}
	env = append(env, cfg.Env...)
	cwd, _ := os.Getwd()
	if cfg.Dir != "" {
		cwd = cfg.Dir
	}

	m := &Manifest{
		Format:  ManifestFormat,
		Version: 1,
		Tool:    Tool{Name: "bottleneck", Version: cfg.Version},
		Command: Command{Mode: string(cfg.Mode), Python: cfg.Python, Target: cfg.Target, Args: cfg.Args,
			Argv: displayArgv(cfg, argv), Cwd: cwd},
		Started:  start,
		State:    "running",
		Settings: ac,
	}
	if err := WriteManifest(runDir, m); err != nil {
		return nil, err
	}

	hostInfo := make(chan map[string]any, 1)
	go func() { hostInfo <- collectHost(ctx) }()

	path := argv[0]
	if cfg.Mode == Launcher {
		p, err := exec.LookPath(argv[0])
		if err != nil {
			m.State = "failed"
			m.Error = err.Error()
			m.Ended = time.Now()
			_ = WriteManifest(runDir, m)
			return &Result{RunDir: runDir, Manifest: m, ExitCode: 127}, fmt.Errorf("launcher %q: %w", argv[0], err)
		}
		path = p
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: cfg.Dir, Stdin: cfg.Stdin, Stdout: cfg.Stdout, Stderr: cfg.Stderr}
	setProcAttr(cmd)

	sigs := cfg.Signals
	if sigs == nil {
		ch := make(chan os.Signal, 4)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(ch)
		sigs = ch
	}
	fg := cfg.TerminalForeground
	if fg == nil {
		fg = func() bool { return terminalForeground(cfg.Stdin) }
	}

	// Start and Wait on one locked OS thread: Linux's parent-death signal
	// fires when the thread that forked the child exits.
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		m.State = "failed"
		m.Error = err.Error()
		m.Ended = time.Now()
		_ = WriteManifest(runDir, m)
		return &Result{RunDir: runDir, Manifest: m, ExitCode: 127}, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	m.PID = cmd.Process.Pid
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	if cfg.Progress != nil {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			pollProgress(runDir, cfg.Agent.Profiler, cfg.Progress, progressDone)
		}()
	}

	var timeoutC <-chan time.Time
	if cfg.Timeout > 0 {
		t := time.NewTimer(cfg.Timeout)
		defer t.Stop()
		timeoutC = t.C
	}
	var killC <-chan time.Time
	interrupts, terms := 0, 0
	var waitErr error
	pid := cmd.Process.Pid
loop:
	for {
		select {
		case waitErr = <-done:
			break loop
		case <-ctx.Done():
			m.Interrupted = true
			_ = syscall.Kill(pid, syscall.SIGINT)
			killC = time.After(cfg.KillAfter)
		case s := <-sigs:
			switch s {
			case os.Interrupt:
				interrupts++
				m.Interrupted = true
				if interrupts == 1 {
					if !fg() {
						_ = syscall.Kill(pid, syscall.SIGINT)
					}
				} else {
					m.Killed = true
					killTree(pid)
				}
			default:
				terms++
				m.Terminated = true
				if terms == 1 {
					_ = syscall.Kill(pid, syscall.SIGTERM)
					killC = time.After(cfg.KillAfter)
				} else {
					m.Killed = true
					killTree(pid)
				}
			}
		case <-timeoutC:
			m.TimedOut = true
			_ = syscall.Kill(pid, syscall.SIGINT)
			killC = time.After(cfg.KillAfter)
		case <-killC:
			m.Killed = true
			killTree(pid)
		}
	}
	close(progressDone)
	progressWG.Wait()
	end := time.Now()

	code, sig := exitStatus(cmd.ProcessState, waitErr)
	m.Ended = end
	m.DurationS = end.Sub(start).Seconds()
	m.State = "ended"
	m.Exit = &Exit{Code: code, Signal: sig}
	m.Exit.Reason = exitReason(m, code, sig)

	cleanRunDir(runDir)
	var host map[string]any
	select {
	case host = <-hostInfo:
	case <-time.After(3 * time.Second):
	}
	if err := writeEnvSummary(runDir, host); err != nil {
		m.Warnings = append(m.Warnings, "env.json: "+err.Error())
	}
	m.Processes = readProcesses(runDir)
	if err := m.ScanFiles(runDir); err != nil {
		m.Warnings = append(m.Warnings, "listing files: "+err.Error())
	}
	if err := WriteManifest(runDir, m); err != nil {
		return &Result{RunDir: runDir, Manifest: m, ExitCode: code}, err
	}
	return &Result{RunDir: runDir, Manifest: m, ExitCode: code}, nil
}

func exitStatus(ps *os.ProcessState, waitErr error) (code int, sig string) {
	if ps == nil {
		return 1, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		s := ws.Signal()
		return 128 + int(s), signalName(s)
	}
	return ps.ExitCode(), ""
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGBUS:
		return "SIGBUS"
	}
	return fmt.Sprintf("signal %d", int(s))
}

func exitReason(m *Manifest, code int, sig string) string {
	switch {
	case m.TimedOut:
		return "timeout"
	case m.Killed:
		return "killed"
	case m.Interrupted:
		return "interrupted"
	case m.Terminated:
		return "terminated"
	case sig != "":
		return "signaled"
	}
	return "exited"
}

func filterEnv(env []string, names ...string) []string {
	out := env[:0:0]
outer:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue outer
			}
		}
		out = append(out, kv)
	}
	return out
}

func displayArgv(cfg Config, argv []string) []string {
	switch cfg.Mode {
	case Script:
		return append([]string{cfg.Python, cfg.Target}, cfg.Args...)
	case Module:
		return append([]string{cfg.Python, "-m", cfg.Target}, cfg.Args...)
	}
	return argv
}

// cleanRunDir removes the agent's coordination files and the temporary
// files of writes a kill interrupted (finished files are always renamed
// into place, so a *.tmp-* file is never a complete one).
func cleanRunDir(dir string) {
	_ = os.RemoveAll(filepath.Join(dir, ".claims"))
	_ = os.RemoveAll(filepath.Join(dir, ".progress"))
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// pollProgress turns the agent's .progress/<tag>.json files into phase
// lines until done is closed.
func pollProgress(dir string, pc ProfilerConfig, report func(string), done <-chan struct{}) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	report("starting")
	last, lastAt := "", time.Now()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		ents, _ := os.ReadDir(filepath.Join(dir, ".progress"))
		var parts []string
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, ".progress", e.Name()))
			if err != nil {
				continue
			}
			var p struct {
				Phase      string `json:"phase"`
				Tag        string `json:"tag"`
				Step       int    `json:"step"`
				Window     int    `json:"window"`
				ActiveStep int    `json:"active_step"`
				Active     int    `json:"active"`
			}
			if json.Unmarshal(b, &p) != nil {
				continue
			}
			s := p.Phase
			switch p.Phase {
			case "recording":
				s = fmt.Sprintf("recording step %d of %d", p.ActiveStep, p.Active)
			case "waiting":
				s = fmt.Sprintf("waiting for step %d (at step %d)", pc.SkipFirst+pc.Wait, p.Step)
			case "warming up", "writing trace", "recorded":
				s = fmt.Sprintf("%s (window %d)", p.Phase, p.Window)
			}
			parts = append(parts, p.Tag+": "+s)
		}
		sort.Strings(parts)
		msg := "running"
		if len(parts) > 0 {
			msg = strings.Join(parts, ", ")
		}
		// resend unchanged lines now and then: the display only starts
		// drawing after its delay
		if msg != last || time.Since(lastAt) > time.Second {
			last, lastAt = msg, time.Now()
			report(msg)
		}
	}
}
