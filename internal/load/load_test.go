package load

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const tiny = `{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}`

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A tensorboard_trace_handler directory: traces found recursively and in
// order, other files ignored, .pt.trace files with another suffix reported.
func TestExpand(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "w1.123.pt.trace.json"), tiny)
	writeFile(t, filepath.Join(dir, "sub", "w0.456.pt.trace.json.gz"), "")
	writeFile(t, filepath.Join(dir, "notes.txt"), "")
	writeFile(t, filepath.Join(dir, "w2.789.pt.trace.json.zst"), "")
	files, _, skipped, failed := Expand([]string{dir})
	if len(failed) > 0 {
		t.Fatal(failed)
	}
	want := []string{filepath.Join(dir, "sub", "w0.456.pt.trace.json.gz"), filepath.Join(dir, "w1.123.pt.trace.json")}
	if strings.Join(files, "|") != strings.Join(want, "|") {
		t.Errorf("files %v, want %v", files, want)
	}
	if len(skipped) != 1 || !strings.HasSuffix(skipped[0].Path, ".zst") {
		t.Errorf("skipped %v, want the .zst trace", skipped)
	}
	// One bad path does not hide the others.
	empty, missing := t.TempDir(), filepath.Join(dir, "missing.json")
	files, _, _, failed = Expand([]string{empty, missing, filepath.Join(dir, "w1.123.pt.trace.json")})
	if len(files) != 1 || len(failed) != 2 || !strings.Contains(failed[0].Err.Error(), "no trace files") || failed[1].Path != missing {
		t.Errorf("files %v, failed %v: want the one trace, the empty directory and the missing file", files, failed)
	}
}

func TestLoadRanks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "host_rank-3.1700000000.pt.trace.json"), tiny)
	writeFile(t, filepath.Join(dir, "worker1.1700000000.pt.trace.json"), tiny)
	writeFile(t, filepath.Join(dir, "x.json"), `{"distributedInfo": {"rank": 0, "world_size": 4}, "traceEvents": []}`)
	writeFile(t, filepath.Join(dir, "broken.json"), `not json`)
	res, err := Load([]string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range res.Traces {
		got = append(got, filepath.Base(tr.Path)+":"+tr.RankSource)
	}
	want := "x.json:distributedInfo|worker1.1700000000.pt.trace.json:file name|host_rank-3.1700000000.pt.trace.json:file name"
	if strings.Join(got, "|") != want {
		t.Errorf("traces in rank order: %v, want %s", got, want)
	}
	if res.Traces[2].Rank != 3 || res.Traces[2].Worker != "host_rank-3" {
		t.Errorf("rank %d worker %q, want 3, host_rank-3", res.Traces[2].Rank, res.Traces[2].Worker)
	}
	if len(res.Failures) != 1 || filepath.Base(res.Failures[0].Path) != "broken.json" {
		t.Errorf("failures %v, want broken.json", res.Failures)
	}
}

// A run directory's own files beside its traces (copied without its
// manifest) are not traces: its Python profiles are listed apart, the
// manifest, environment, evidence, reports and the DataLoader workers'
// profiles left out, without a note. A directory of Python profiles alone
// is no failure: it holds input.
func TestExpandRunDirectoryFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "trace-rank0.pt.trace.json"), tiny)
	writeFile(t, filepath.Join(dir, "other.json"), tiny)
	for _, name := range []string{"manifest.json", "env.json", "env-rank0.json", "evidence-rank0.json", "report.json",
		"tried.json", "pyprofile-rank1.json", "pyprofile-rank0.json", "pyworkers-rank0/123.json"} {
		writeFile(t, filepath.Join(dir, name), `{}`)
	}
	files, profiles, skipped, failed := Expand([]string{dir})
	wantFiles := []string{filepath.Join(dir, "other.json"), filepath.Join(dir, "trace-rank0.pt.trace.json")}
	wantProfiles := []string{filepath.Join(dir, "pyprofile-rank0.json"), filepath.Join(dir, "pyprofile-rank1.json")}
	if !slices.Equal(files, wantFiles) || !slices.Equal(profiles, wantProfiles) || len(skipped)+len(failed) > 0 {
		t.Errorf("files %v, profiles %v, skipped %v, failed %v; want %v and %v", files, profiles, skipped, failed, wantFiles, wantProfiles)
	}
	pyOnly := t.TempDir()
	writeFile(t, filepath.Join(pyOnly, "pyprofile-main.json"), `{}`)
	if files, profiles, _, failed := Expand([]string{pyOnly}); len(files) != 0 || len(profiles) != 1 || len(failed) != 0 {
		t.Errorf("profiles alone: files %v, profiles %v, failed %v", files, profiles, failed)
	}
}
