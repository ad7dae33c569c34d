// Package rundir owns the run directory that `bottleneck run` writes
// (docs/run.md, "Run directory"): its layout and file names, the format
// and version check of each file, and one Go type per file. Every other
// package asks it for a run directory's content instead of building file
// names or decoding the files itself.
package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File names of a run directory; per-process files carry a tag (rank0...).
const (
	ManifestName = "manifest.json"
	EnvName      = "env.json" // the environment summary: host and every process
	ReportText   = "report.txt"
	ReportJSON   = "report.json"
	ReportHTML   = "report.html"
)

// EvidenceName, ProcessEnvName and PyProfileName name a process's files.
func EvidenceName(tag string) string   { return "evidence-" + tag + ".json" }
func ProcessEnvName(tag string) string { return "env-" + tag + ".json" }
func PyProfileName(tag string) string  { return "pyprofile-" + tag + ".json" }

// The agent's working directories in a run directory, removed when the
// run ends: ProgressDirName holds each process's phase (<tag>.json, for
// the progress line), LiveDirName its --live feed.
const (
	ProgressDirName = ".progress"
	LiveDirName     = ".live"
)

// ReproDirName is where `run --repro` (and `bottleneck repro RUN`) write
// the hot ops' scripts.
const ReproDirName = "repro"

// WorkersDirName names the directory of a process's DataLoader worker
// profiles: one pyprofile file per worker process, <pid>.json (the agent's
// _bottleneck_workers.WORKERS_DIR).
func WorkersDirName(tag string) string { return "pyworkers-" + tag }

// Is reports whether dir is a run directory (it holds a manifest).
func Is(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, ManifestName))
	return err == nil && !st.IsDir()
}

// FormatVersion is the version of the run-directory files this build
// reads and writes; the agent writes the same (FORMAT_VERSION in
// internal/agent/py). A file of a newer version is refused rather than
// misread.
const FormatVersion = 1

// checkFormat checks a file's "format" and "version" keys.
func checkFormat(path, want, format string, version int) error {
	if format != want {
		return fmt.Errorf("%s: not a %s file (format %q)", path, want, format)
	}
	if version < 1 || version > FormatVersion {
		return fmt.Errorf("%s: %s version %d, this bottleneck reads version 1 to %d (upgrade bottleneck)", path, want, version, FormatVersion)
	}
	return nil
}

// TagLess orders process tags rank0 < rank1 < rank10 < others.
func TagLess(a, b string) bool {
	ra, oka := Rank(a)
	rb, okb := Rank(b)
	if oka && okb && ra != rb {
		return ra < rb
	}
	if oka != okb {
		return oka
	}
	return a < b
}

// Rank is the rank a tag names (rank3: 3).
func Rank(tag string) (int, bool) {
	var r int
	if _, err := fmt.Sscanf(tag, "rank%d", &r); err != nil || fmt.Sprintf("rank%d", r) != tag {
		return -1, false
	}
	return r, true
}

// FileKindName is what a run directory's file is (manifest.json's
// files[].kind; docs/run.md lists them).
type FileKindName string

// The file kinds.
const (
	KindEnv        FileKindName = "env"
	KindProcessEnv FileKindName = "process-env"
	KindManifest   FileKindName = "manifest"
	KindTrace      FileKindName = "trace"
	KindPyProfile  FileKindName = "pyprofile"
	KindPStats     FileKindName = "pstats"
	KindPyWorkers  FileKindName = "pyworkers"
	KindEvidence   FileKindName = "evidence"
	KindCrash      FileKindName = "crash"
	KindReportText FileKindName = "report-text"
	KindReportJSON FileKindName = "report-json"
	KindReportHTML FileKindName = "report-html"
	KindTried      FileKindName = "tried"
	KindOther      FileKindName = "other"
)

// FileKind classifies a run-directory file name; tag is the process tag
// for per-process files.
func FileKind(name string) (kind FileKindName, tag string) {
	cut := func(prefix, suffix string) (string, bool) {
		if strings.HasPrefix(name, prefix) && strings.HasSuffix(name, suffix) && len(name) > len(prefix)+len(suffix) {
			return name[len(prefix) : len(name)-len(suffix)], true
		}
		return "", false
	}
	switch name {
	case EnvName:
		return KindEnv, ""
	case ReportText:
		return KindReportText, ""
	case ReportJSON:
		return KindReportJSON, ""
	case ReportHTML:
		return KindReportHTML, ""
	case ManifestName:
		return KindManifest, ""
	case TriedName:
		return KindTried, ""
	}
	t, ok := cut("trace-", ".pt.trace.json.gz")
	if !ok {
		t, ok = cut("trace-", ".pt.trace.json")
	}
	if ok {
		if i := strings.Index(t, ".w"); i > 0 {
			t = t[:i]
		}
		return KindTrace, t
	}
	if t, ok := cut("pyprofile-", ".json"); ok {
		return KindPyProfile, t
	}
	if t, ok := cut("pyprofile-", ".pstats"); ok {
		return KindPStats, t
	}
	if t, ok := cut("evidence-", ".json"); ok {
		return KindEvidence, t
	}
	if t, ok := cut("env-", ".json"); ok {
		return KindProcessEnv, t
	}
	if t, ok := cut("crash-", ".txt"); ok {
		return KindCrash, t
	}
	return KindOther, ""
}

// ScanFiles lists the run directory's files (not the manifest) into m.Files.
func (m *Manifest) ScanFiles(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	m.Files = m.Files[:0]
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), WorkersDirName("")) {
			m.scanWorkers(dir, e.Name())
			continue
		}
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

// scanWorkers lists a process's DataLoader worker profiles and removes the
// temporary files a worker killed while writing left behind.
func (m *Manifest) scanWorkers(dir, sub string) {
	ents, err := os.ReadDir(filepath.Join(dir, sub))
	if err != nil {
		return
	}
	tag := strings.TrimPrefix(sub, WorkersDirName(""))
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		if strings.Contains(e.Name(), ".tmp-") {
			os.Remove(filepath.Join(dir, sub, e.Name()))
			continue
		}
		if info, err := e.Info(); err == nil {
			m.Files = append(m.Files, File{Path: sub + "/" + e.Name(), Kind: KindPyWorkers, Bytes: info.Size(), Tag: tag})
		}
	}
}
