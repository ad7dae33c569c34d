package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

// Run is a run directory read once: every file decoded, every problem
// kept beside the data it concerns.
type Run struct {
	Dir      string
	Manifest *Manifest
	// Env is env.json as written (nil when absent or not JSON); Host its
	// "host" object.
	Env  json.RawMessage
	Host map[string]any
	// Processes are the agent's processes, in TagLess order.
	Processes []*ProcessFiles
	// Traces are the trace files, sorted.
	Traces []string
	// Tried is what `run --verify` measured (nil: not verified, or
	// TriedErr says why it could not be read).
	Tried    *Tried
	TriedErr error
	// Repro are the scripts in ReproDirName, sorted (bottleneck repro).
	Repro []string
}

// ProcessFiles is what one profiled process (one rank) left in the run
// directory. A nil field was not written; its error says why when the
// file exists but could not be read.
type ProcessFiles struct {
	Tag string
	// Dir is the run directory (its sources: SourcePath).
	Dir         string
	Env         *Env
	EnvErr      error
	Evidence    *Evidence
	EvidenceErr error
	Profile     *pyprofile.Profile
	ProfileErr  error
	// Workers are the DataLoader worker processes' profiles (nil with
	// WorkersErr fs.ErrNotExist when the process had no sampled workers).
	Workers    *pyprofile.Workers
	WorkersErr error
}

// Read reads the run directory dir. Only a missing or unreadable manifest
// is an error: the other files may be missing (the program was killed, a
// profiler was off) and are reported per process.
func Read(dir string) (*Run, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: dir, Manifest: m}
	if b, err := os.ReadFile(filepath.Join(dir, EnvName)); err == nil && json.Valid(b) {
		var sum struct {
			Host map[string]any `json:"host"`
		}
		_ = json.Unmarshal(b, &sum) // valid JSON; a different shape only loses the host
		r.Env, r.Host = b, sum.Host
	}
	tags := map[string]bool{}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		switch kind, tag := FileKind(e.Name()); kind {
		case KindEvidence, KindPyProfile, KindProcessEnv:
			tags[tag] = true
		case KindTrace:
			r.Traces = append(r.Traces, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(r.Traces)
	r.Repro = ReproScripts(dir)
	if r.Tried, r.TriedErr = ReadTried(dir); NotWritten(r.TriedErr) {
		r.TriedErr = nil
	}
	order := make([]string, 0, len(tags))
	for t := range tags {
		order = append(order, t)
	}
	sort.Slice(order, func(i, j int) bool { return TagLess(order[i], order[j]) })
	for _, tag := range order {
		r.Processes = append(r.Processes, readProcess(dir, tag))
	}
	return r, nil
}

func readProcess(dir, tag string) *ProcessFiles {
	p := &ProcessFiles{Tag: tag, Dir: dir}
	var env Env
	if p.EnvErr = readJSON(filepath.Join(dir, ProcessEnvName(tag)), ProcessEnvFormat, &env, &env.Format, &env.Version); p.EnvErr == nil {
		p.Env = &env
	}
	p.Evidence, p.EvidenceErr = ReadEvidence(dir, tag)
	p.Profile, p.ProfileErr = pyprofile.ReadFile(filepath.Join(dir, PyProfileName(tag)))
	p.Workers, p.WorkersErr = pyprofile.ReadWorkers(filepath.Join(dir, WorkersDirName(tag)))
	return p
}

// ReadEvidence reads the evidence file of the process tagged tag.
func ReadEvidence(dir, tag string) (*Evidence, error) {
	var ev Evidence
	if err := readJSON(filepath.Join(dir, EvidenceName(tag)), EvidenceFormat, &ev, &ev.Format, &ev.Version); err != nil {
		return nil, err
	}
	return &ev, nil
}

// readJSON decodes path into v and checks the format and version that
// decoding stored in *format and *version.
func readJSON(path, want string, v any, format *string, version *int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return checkFormat(path, want, *format, *version)
}

// NotWritten reports whether err says a file does not exist.
func NotWritten(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// FirstWindowStep is the agent's number of the first step recorded in
// the trace file path (one of r.Traces), when the evidence names its
// window. torch numbers ProfilerStep#N from the profiler's creation, the
// agent from the program's first step (ProfilerStep#7 was the agent's
// step 8 in every run directory here); the report uses the agent's, so a
// step has one number in every view.
func (r *Run) FirstWindowStep(path string) (int, bool) {
	for _, pf := range r.Processes {
		if pf.Evidence == nil {
			continue
		}
		for _, w := range pf.Evidence.Profiler.Windows {
			if len(w.Steps) > 0 && w.File != "" && filepath.Join(r.Dir, w.File) == filepath.Clean(path) {
				return w.Steps[0], true
			}
		}
	}
	return 0, false
}

// ReproScripts lists the scripts in dir's ReproDirName, sorted, as paths
// relative to dir (a link from report.html too).
func ReproScripts(dir string) []string {
	out, _ := filepath.Glob(filepath.Join(dir, ReproDirName, "*.py"))
	for i, p := range out {
		out[i] = ReproDirName + "/" + filepath.Base(p)
	}
	return out
}
