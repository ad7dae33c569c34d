// Package agent embeds bottleneck's Python agent (the code that runs inside
// the user's Python process during `bottleneck run`) and writes it to disk
// at launch. The Python sources live in py/; their behaviour and the files
// they write are documented in docs/run.md.
package agent

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
)

//go:embed py/_bottleneck_agent.py py/_bottleneck_files.py py/_bottleneck_env.py py/_bottleneck_sampler.py
//go:embed py/_bottleneck_window.py py/_bottleneck_evidence.py py/_bottleneck_stepstats.py py/_bottleneck_workers.py
//go:embed py/_bottleneck_frameworks.py py/_bottleneck_changes.py py/_bottleneck_nvtx.py py/_bottleneck_boot.py py/sitecustomize.py
//go:embed py/_bottleneck_live.py py/_bottleneck_jobexchange.py py/_bottleneck_overhead.py py/_bottleneck_options.py
//go:embed py/_bottleneck_children.py py/_bottleneck_calls.py
var files embed.FS

// Boot is the file name of the bootstrap script run as
// `python BOOT CONFIG script|module TARGET ARGS...`.
const Boot = "_bottleneck_boot.py"

// Shim is the launcher-mode shim Python imports at startup from the
// PYTHONPATH entry Write's directory becomes.
const Shim = "sitecustomize.py"

// InProcess is the in-process entry points' module: only the wheel ships
// it (bottleneck_profiler.profile()); `bottleneck run` never writes it.
const InProcess = "_bottleneck_inprocess.py"

// Names lists the embedded files, in the order they are written: every
// module of py/ but InProcess (TestNamesListEveryModule).
var Names = []string{
	"_bottleneck_agent.py", "_bottleneck_files.py", "_bottleneck_env.py", "_bottleneck_sampler.py",
	"_bottleneck_window.py", "_bottleneck_evidence.py", "_bottleneck_stepstats.py", "_bottleneck_workers.py",
	"_bottleneck_frameworks.py", "_bottleneck_changes.py", "_bottleneck_nvtx.py", Boot, Shim,
	"_bottleneck_live.py", "_bottleneck_jobexchange.py", "_bottleneck_overhead.py", "_bottleneck_options.py",
	"_bottleneck_children.py", "_bottleneck_calls.py",
}

// Source returns the embedded text of one agent file.
func Source(name string) ([]byte, error) { return files.ReadFile("py/" + name) }

// Write writes the agent files into dir (created if needed) and returns
// the path of the bootstrap script. dir doubles as the PYTHONPATH entry for
// launcher mode (it holds the sitecustomize shim).
func Write(dir string) (boot string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, n := range Names {
		b, err := Source(n)
		if err != nil {
			return "", fmt.Errorf("agent: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			return "", fmt.Errorf("agent: %w", err)
		}
	}
	return filepath.Join(dir, Boot), nil
}
