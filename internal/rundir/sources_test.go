package rundir_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// SaveSources keeps a copy of the files the program's own frames name
// (those with their line's text: pytorch/examples' GCN, run on the
// project's CPU), not a library's, where SourcePath finds it.
func TestSaveSources(t *testing.T) {
	real := filepath.Join(testutil.RepoRoot(), "testdata", "rundir", "cpu_gcn")
	dir, progDir := t.TempDir(), t.TempDir()
	prog := filepath.Join(progDir, "main.py")
	if err := os.WriteFile(prog, []byte("print('the program')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{rundir.ManifestName, "evidence-rank0.json"} {
		b, err := os.ReadFile(filepath.Join(real, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var p map[string]any
	b, err := os.ReadFile(filepath.Join(real, "pyprofile-rank0.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	libs := 0
	for _, f := range p["frames"].([]any) {
		f := f.(map[string]any)
		if f["text"] != nil && f["text"] != "" {
			f["file"] = prog
		} else if strings.Contains(f["file"].(string), "site-packages") {
			libs++
		}
	}
	if libs == 0 {
		t.Fatal("the profile names no library file: the test's premise is gone")
	}
	if b, err = json.Marshal(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pyprofile-rank0.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := rundir.SaveSources(dir)
	if err != nil || n != 1 {
		t.Fatalf("SaveSources: %d files, %v; want the program's one file", n, err)
	}
	got, err := os.ReadFile(rundir.SourcePath(dir, prog))
	if err != nil || string(got) != "print('the program')\n" {
		t.Errorf("copy of %s: %q, %v", prog, got, err)
	}
}

// A name from the program cannot lead SourcePath outside the copy.
func TestSourcePathStaysInside(t *testing.T) {
	dir := filepath.Join("run")
	for _, file := range []string{"/a/../../../etc/passwd", `C:\Users\x\train.py`, "../../x.py", "/work/main/train.py"} {
		if p := rundir.SourcePath(dir, file); !strings.HasPrefix(p, filepath.Join(dir, rundir.SourcesDirName)+string(filepath.Separator)) {
			t.Errorf("SourcePath(%q) = %q: outside %s", file, p, rundir.SourcesDirName)
		}
	}
}
