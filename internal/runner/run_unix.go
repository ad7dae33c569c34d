//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/agent"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

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
	agentDir := filepath.Join(runDir, AgentDirName)
	if err := os.Mkdir(agentDir, 0o755); err != nil {
		return nil, err
	}
	defer cleanRunDir(runDir)
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
	if v, ok := ac.Set["thp_alloc"]; ok {
		// torch reads it once, at its import: from the process's start
		thp := "THP_MEM_ALLOC_ENABLE=0"
		if on, _ := strconv.ParseBool(v); on {
			thp = "THP_MEM_ALLOC_ENABLE=1"
		}
		env = append(filterEnv(env, "THP_MEM_ALLOC_ENABLE"), thp)
	}
	if v, ok := ac.Set["malloc_reuse"]; ok {
		// glibc reads them once, at the process's start
		env = filterEnv(env, "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
		if on, _ := strconv.ParseBool(v); on {
			env = append(env, rundir.MallocReuseEnv...)
		}
	}
	if v, ok := ac.Set["omp_passive"]; ok {
		// the OpenMP runtime reads it once, when torch loads it
		env = filterEnv(env, "OMP_WAIT_POLICY")
		if on, _ := strconv.ParseBool(v); on {
			env = append(env, rundir.OMPPassiveEnv)
		}
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

	m := &rundir.Manifest{
		Format:  rundir.ManifestFormat,
		Version: 1,
		Tool:    rundir.Tool{Name: "bottleneck", Version: cfg.Version},
		Command: rundir.Command{Mode: string(cfg.Mode), Python: cfg.Python, Target: cfg.Target, Args: cfg.Args,
			Argv: displayArgv(cfg, argv), Cwd: cwd},
		Started:  start,
		State:    "running",
		Settings: ac,
	}
	if err := rundir.WriteManifest(runDir, m); err != nil {
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
			_ = rundir.WriteManifest(runDir, m)
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
	switch {
	case fg == nil && cfg.Signals != nil:
		fg = func() bool { return false } // injected signals come from no terminal
	case fg == nil:
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
		_ = rundir.WriteManifest(runDir, m)
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
	if cfg.Live != nil {
		progressWG.Add(1)
		go func() {
			defer progressWG.Done()
			pollLive(runDir, cfg.Live, progressDone)
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
	m.Exit = &rundir.Exit{Code: code, Signal: sig}
	m.Exit.Reason = exitReason(m, code, sig)

	cleanRunDir(runDir)
	if w := diskFull(runDir); w != "" {
		m.Warnings = append(m.Warnings, w)
	}
	var host map[string]any
	select {
	case host = <-hostInfo:
	case <-time.After(3 * time.Second):
	}
	if err := writeEnvSummary(runDir, host); err != nil {
		m.Warnings = append(m.Warnings, "env.json: "+err.Error())
	}
	m.Processes = processSummaries(runDir)
	if _, err := rundir.SaveSources(runDir); err != nil {
		m.Warnings = append(m.Warnings, "copying the program's sources: "+err.Error())
	}
	if err := m.ScanFiles(runDir); err != nil {
		m.Warnings = append(m.Warnings, "listing files: "+err.Error())
	}
	if err := rundir.WriteManifest(runDir, m); err != nil {
		return &Result{RunDir: runDir, Manifest: m, ExitCode: code}, err
	}
	return &Result{RunDir: runDir, Manifest: m, ExitCode: code}, nil
}

// diskFullBytes: a run directory whose disk has less than this available
// after the run probably lost files the agent wrote (a full disk under
// --out: the report said only "no pyprofile file was written").
const diskFullBytes = 1 << 20

// freeBytes is the space available to this user on dir's filesystem (a
// variable for tests).
var freeBytes = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// diskFull says, when dir's disk is full, why files may be missing.
func diskFull(dir string) string {
	free, err := freeBytes(dir)
	if err != nil || free >= diskFullBytes {
		return ""
	}
	return fmt.Sprintf("the disk holding %s is full (%s available: no space left on device): files the agent wrote may be missing or cut short", dir, units.Bytes(int64(free)))
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
