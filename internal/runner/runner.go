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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
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

// DefaultAgentConfig returns the documented defaults.
func DefaultAgentConfig() rundir.AgentConfig {
	return rundir.AgentConfig{
		PythonProfiler: "sample",
		SampleInterval: 0.02,
		WindowInterval: 0.005,
		SampleBudget:   0.004,
		Profiler: rundir.ProfilerConfig{
			Enabled: true, SkipFirst: 5, Wait: 0, Warmup: 2, Active: 5, MinWindowS: 0.2, Repeat: 1, EarlyStartS: 2,
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
	Agent     rundir.AgentConfig
	Version   string

	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Env is appended to the environment (tests).
	Env []string
	// Dir is the program's working directory ("" : bottleneck's).
	Dir string
	// Progress, when set, receives one-line phase descriptions.
	Progress func(string)
	// Live, when set, receives the agent's live-view snapshots (the
	// files .live/<tag>.json, by tag) every LivePoll while the program
	// runs and once more after it ended; set Agent.Live with it.
	Live func(map[string][]byte)
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
	Manifest *rundir.Manifest
	// ExitCode is the program's exit status (128+n when a signal ended it).
	ExitCode int
}

// isInterpreter reports whether a path names a Python interpreter:
// python, python3, python3.11, pypy3, python.exe.
func isInterpreter(path string) bool {
	name := strings.TrimSuffix(filepath.Base(path), ".exe")
	for _, p := range []string{"python", "pypy"} {
		if v, ok := strings.CutPrefix(name, p); ok {
			return strings.Trim(v, "0123456789.") == ""
		}
	}
	return false
}

// SplitInterpreter reads a script's command line that starts with a
// Python interpreter (`bottleneck run python train.py`, `.venv/bin/python3
// -m pkg.train`): a script or `-m module` right after it becomes the
// interpreter (in place of python) and the program as the script and
// module modes take them, and any other interpreter flag first (`python -u
// train.py`) leaves the line to run as a launcher's. A line that does not
// start with an interpreter comes back as it is.
func SplitInterpreter(python string, args []string) (py string, module, launcher bool, rest []string) {
	if len(args) == 0 || !isInterpreter(args[0]) {
		return python, false, false, args
	}
	switch {
	case len(args) > 2 && args[1] == "-m":
		return args[0], true, false, args[2:]
	case len(args) > 1 && !strings.HasPrefix(args[1], "-"):
		return args[0], false, false, args[1:]
	}
	return python, false, true, args
}

// Program sets what c runs: a launcher's whole command, or a module or
// script with its arguments and, for those, the interpreter
// (FindPython(python)).
func (c *Config) Program(launcher, module bool, args []string, python string) error {
	switch {
	case launcher:
		c.Mode, c.Args = Launcher, args
		return nil
	case module:
		c.Mode = Module
	default:
		c.Mode = Script
	}
	c.Target, c.Args = args[0], args[1:]
	py, err := FindPython(python)
	c.Python = py
	return err
}

// FindPython returns the interpreter to use: explicit when set, else
// $BOTTLENECK_PYTHON (the pip-installed `bottleneck` command sets it to the
// interpreter it is installed in), else the active virtualenv's, else
// python3 (or python) on PATH.
func FindPython(explicit string) (string, error) {
	if explicit == "" {
		explicit = os.Getenv("BOTTLENECK_PYTHON")
	}
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

// AgentDirName is the run directory's folder for the agent's files while
// the program runs (its Python code and configuration); it is removed when
// the run ends, and a killed bottleneck leaves it in the run, not in /tmp.
const AgentDirName = ".agent"

// NewRunDir creates and claims a fresh run directory: dir when set (it
// must not exist or be empty: a run never writes over other files), else
// ./bottleneck-runs/<timestamp>[-N].
func NewRunDir(dir string, now time.Time) (string, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		ents, err := os.ReadDir(abs)
		if err != nil {
			return "", err
		}
		if len(ents) > 0 {
			what := "files"
			if _, err := os.Stat(filepath.Join(abs, rundir.ManifestName)); err == nil {
				what = "a run (manifest.json)"
			} else if _, err := os.Stat(filepath.Join(abs, rundir.LockName)); err == nil {
				what = "a run in progress (" + rundir.LockName + ")"
			}
			return "", fmt.Errorf("%s already holds %s; --output must name a new or empty directory", dir, what)
		}
		if err := claim(abs); err != nil {
			return "", fmt.Errorf("%s: another run claimed this directory first (%s); choose another --output", dir, rundir.LockName)
		}
		return abs, nil
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
			abs, err := filepath.Abs(d)
			if err != nil {
				return "", err
			}
			return abs, claim(abs)
		}
		if !os.IsExist(err) {
			return "", err
		}
	}
}

func exitReason(m *rundir.Manifest, code int, sig string) string {
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

func claim(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, rundir.LockName), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d\n", os.Getpid())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// cleanRunDir removes the agent's coordination files and the temporary
// files of writes a kill interrupted (finished files are always renamed
// into place, so a *.tmp-* file is never a complete one).
func cleanRunDir(dir string) {
	_ = os.RemoveAll(filepath.Join(dir, ".claims"))
	_ = os.RemoveAll(filepath.Join(dir, rundir.ProgressDirName))
	_ = os.RemoveAll(filepath.Join(dir, rundir.LiveDirName))
	_ = os.RemoveAll(filepath.Join(dir, AgentDirName))
	_ = os.Remove(filepath.Join(dir, rundir.LockName))
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// pollProgress turns the agent's .progress/<tag>.json files into phase
// lines until done is closed.
func pollProgress(dir string, pc rundir.ProfilerConfig, report func(string), done <-chan struct{}) {
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
		ents, _ := os.ReadDir(filepath.Join(dir, rundir.ProgressDirName))
		var parts []string
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, rundir.ProgressDirName, e.Name()))
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
				// the first recorded step, in the agent's numbers (those
				// of the report's window)
				s = fmt.Sprintf("waiting for step %d, the first recorded (at step %d)", pc.SkipFirst+pc.Wait+pc.Warmup+1, p.Step)
			case "warming up", "writing trace", "recorded":
				s = fmt.Sprintf("%s (window %d)", p.Phase, p.Window)
			case "saving":
				s = "the program ended: saving its files"
			case "done":
				// the agent is done, the process may not be (its exit
				// handlers, worker processes, other ranks)
				s = "saved; the process is exiting"
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

// LivePoll is how often the runner reads the live-view snapshots (the
// agent rewrites each at most every 0.5 s).
const LivePoll = 500 * time.Millisecond

// pollLive hands the agent's .live/<tag>.json files to report every
// LivePoll until done is closed, then once more (the snapshot the agent
// wrote as the program ended).
func pollLive(dir string, report func(map[string][]byte), done <-chan struct{}) {
	t := time.NewTicker(LivePoll)
	defer t.Stop()
	for {
		stop := false
		select {
		case <-done:
			stop = true
		case <-t.C:
		}
		ents, _ := os.ReadDir(filepath.Join(dir, rundir.LiveDirName))
		files := map[string][]byte{}
		for _, e := range ents {
			tag, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok {
				continue // a temporary file the agent is writing
			}
			if b, err := os.ReadFile(filepath.Join(dir, rundir.LiveDirName, e.Name())); err == nil {
				files[tag] = b
			}
		}
		report(files)
		if stop {
			return
		}
	}
}

// processSummaries lists the agent's processes for the manifest from
// their evidence files.
func processSummaries(dir string) []rundir.Process {
	ents, _ := os.ReadDir(dir)
	var out []rundir.Process
	for _, e := range ents {
		kind, tag := rundir.FileKind(e.Name())
		if kind != rundir.KindEvidence {
			continue
		}
		ev, err := rundir.ReadEvidence(dir, tag)
		if err != nil {
			continue
		}
		p := rundir.Process{Tag: tag, PID: ev.PID, Final: ev.Final, Steps: ev.Steps}
		if ev.StepSource != nil {
			p.StepSource = *ev.StepSource
		}
		if r, ok := ev.Exit["reason"].(string); ok {
			p.ExitReason = r
		}
		for _, w := range ev.Profiler.Windows {
			if w.File != "" {
				p.Traces = append(p.Traces, w.File)
			}
		}
		out = append(out, p)
	}
	return out
}
