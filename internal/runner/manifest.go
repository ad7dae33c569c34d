package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ManifestName is the manifest's file name in a run directory.
const ManifestName = "manifest.json"

// ManifestFormat is the manifest's "format" value.
const ManifestFormat = "bottleneck.run"

// Manifest describes one run (docs/run.md, "Run directory").
type Manifest struct {
	Format  string  `json:"format"`
	Version int     `json:"version"`
	Tool    Tool    `json:"tool"`
	Command Command `json:"command"`
	// State is running (written at launch), ended, or failed (the program
	// could not be started).
	State       string      `json:"state"`
	Error       string      `json:"error,omitempty"`
	PID         int         `json:"pid,omitempty"`
	Started     time.Time   `json:"started"`
	Ended       time.Time   `json:"ended,omitzero"`
	DurationS   float64     `json:"duration_s,omitempty"`
	Exit        *Exit       `json:"exit,omitempty"`
	Interrupted bool        `json:"interrupted,omitempty"` // SIGINT received (Ctrl-C)
	Terminated  bool        `json:"terminated,omitempty"`  // SIGTERM/SIGHUP received
	TimedOut    bool        `json:"timed_out,omitempty"`   // --timeout expired
	Killed      bool        `json:"killed,omitempty"`      // bottleneck sent SIGKILL
	Processes   []Process   `json:"processes,omitempty"`
	Files       []File      `json:"files"`
	Settings    AgentConfig `json:"settings"`
	Warnings    []string    `json:"warnings,omitempty"`
}

// Tool names the tool and its version (internal/version).
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Command is what was run.
type Command struct {
	Mode   string   `json:"mode"`
	Python string   `json:"python,omitempty"`
	Target string   `json:"target,omitempty"`
	Args   []string `json:"args"`
	// Argv is the equivalent command without bottleneck.
	Argv []string `json:"argv"`
	Cwd  string   `json:"cwd"`
}

// Exit is the program's exit status.
type Exit struct {
	// Code is what bottleneck exits with: the program's status, 128+n
	// when signal n ended it.
	Code   int    `json:"code"`
	Signal string `json:"signal,omitempty"`
	// Reason: exited, signaled, interrupted, terminated, timeout, killed.
	Reason string `json:"reason"`
}

// Process summarises one profiled Python process (one per rank).
type Process struct {
	Tag        string   `json:"tag"`
	PID        int      `json:"pid"`
	ExitReason string   `json:"exit_reason"` // from the agent; "" when it could not save (killed)
	StepSource string   `json:"step_source,omitempty"`
	Steps      int      `json:"steps"`
	Traces     []string `json:"traces,omitempty"`
	Final      bool     `json:"final"` // the agent finished normally
}

// File is one file of the run directory.
type File struct {
	Path  string `json:"path"`
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
	Tag   string `json:"tag,omitempty"`
}

// WriteManifest writes dir/manifest.json atomically.
func WriteManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, ManifestName), append(b, '\n'))
}

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// WriteFileAtomic writes data to a temporary file beside path and renames
// it into place, so readers never see a partial file.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// FileKind classifies a run-directory file name; tag is the process tag
// for per-process files.
func FileKind(name string) (kind, tag string) {
	cut := func(prefix, suffix string) (string, bool) {
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix) && len(name) > len(prefix)+len(suffix) {
			return name[len(prefix) : len(name)-len(suffix)], true
		}
		return "", false
	}
	switch name {
	case "env.json":
		return "env", ""
	case "report.txt":
		return "report-text", ""
	case "report.json":
		return "report-json", ""
	case ManifestName:
		return "manifest", ""
	}
	if t, ok := cut("trace-", ".pt.trace.json.gz"); ok {
		if i := strings.Index(t, ".w"); i > 0 {
			t = t[:i]
		}
		return "trace", t
	}
	if t, ok := cut("pyprofile-", ".json"); ok {
		return "pyprofile", t
	}
	if t, ok := cut("pyprofile-", ".pstats"); ok {
		return "pstats", t
	}
	if t, ok := cut("evidence-", ".json"); ok {
		return "evidence", t
	}
	if t, ok := cut("env-", ".json"); ok {
		return "process-env", t
	}
	return "other", ""
}

// ScanFiles lists the run directory's files (not the manifest) into m.Files.
func (m *Manifest) ScanFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	m.Files = m.Files[:0]
	for _, e := range ents {
		if e.IsDir() || e.Name() == ManifestName || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		kind, tag := FileKind(e.Name())
		m.Files = append(m.Files, File{Path: e.Name(), Kind: kind, Bytes: info.Size(), Tag: tag})
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	return nil
}

// Traces returns the trace files of the run directory, sorted.
func Traces(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		if k, _ := FileKind(e.Name()); k == "trace" && !e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

func readProcesses(dir string) []Process {
	ents, _ := os.ReadDir(dir)
	var out []Process
	for _, e := range ents {
		kind, tag := FileKind(e.Name())
		if kind != "evidence" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var ev struct {
			PID        int    `json:"pid"`
			Final      bool   `json:"final"`
			StepSource string `json:"step_source"`
			Steps      int    `json:"steps"`
			Exit       struct {
				Reason string `json:"reason"`
			} `json:"exit"`
			Profiler struct {
				Windows []struct {
					File string `json:"file"`
				} `json:"windows"`
			} `json:"profiler"`
		}
		if json.Unmarshal(b, &ev) != nil {
			continue
		}
		p := Process{Tag: tag, PID: ev.PID, ExitReason: ev.Exit.Reason, StepSource: ev.StepSource,
			Steps: ev.Steps, Final: ev.Final}
		for _, w := range ev.Profiler.Windows {
			if w.File != "" {
				p.Traces = append(p.Traces, w.File)
			}
		}
		out = append(out, p)
	}
	return out
}
