package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// RunDir copies the run directory testdata/rundir/NAME (written by
// `bottleneck run`, see its README) into a temporary directory, so a test
// can let commands write their reports into it.
func RunDir(t testing.TB, name string) string {
	t.Helper()
	src := filepath.Join(RepoRoot(), "testdata", "rundir", name)
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// CrashDumps is the text of the crash dumps (crash-TAG.txt: every
// thread's Python stack at a fatal signal) in run directory dir, for the
// message of a test whose run failed: the directory is gone after it.
func CrashDumps(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "crash-*.txt"))
	var b []byte
	for _, f := range files {
		if d, err := os.ReadFile(f); err == nil {
			b = append(append(append(b, "\n"+f+":\n"...), d...), '\n')
		}
	}
	return string(b)
}
