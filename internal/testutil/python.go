// Package testutil holds helpers shared by tests: the repository's paths,
// the shared real traces beside it, a Python with torch, and golden files
// rewritten with -update. It imports nothing from the module, so any
// package's tests (internal/kineto's included) can use it; reading traces
// is in testutil/tracetest.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// RepoRoot is the repository's root directory.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TorchPython returns a Python interpreter that can import torch:
// $BOTTLENECK_TEST_PYTHON, else the repository's .venv (which the README's
// set-up creates). Tests that need one skip with a message otherwise.
func TorchPython(t testing.TB) string {
	t.Helper()
	py := os.Getenv("BOTTLENECK_TEST_PYTHON")
	if py == "" {
		py = filepath.Join(RepoRoot(), ".venv", "bin", "python")
	}
	if _, err := os.Stat(py); err != nil {
		t.Skipf("no Python with torch (set BOTTLENECK_TEST_PYTHON or run scripts/setup): %v", err)
	}
	if err := exec.Command(py, "-c", "import torch").Run(); err != nil {
		t.Skipf("%s cannot import torch: %v", py, err)
	}
	return py
}

// TracesDir is testdata/traces: the real traces the repository owns
// (see its README for where each comes from and its licence).
func TracesDir() string {
	return filepath.Join(RepoRoot(), "testdata", "traces")
}

// Traces returns TracesDir, failing the test when it is missing: the
// traces are part of the repository, so a missing folder is a broken clone.
func Traces(t testing.TB) string {
	t.Helper()
	dir := TracesDir()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("real traces missing: %v", err)
	}
	return dir
}
