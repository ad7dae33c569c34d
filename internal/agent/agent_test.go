package agent

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// testPythons returns the interpreters to run the agent's unit tests with:
// BOTTLENECK_TEST_PYTHON, else the repository's .venv, else python3 on
// PATH (the agent needs no torch for these tests); plus each entry of
// BOTTLENECK_TEST_PYTHONS (os.PathListSeparator-separated), e.g. a Python
// 3.9 to check compatibility.
func testPythons(t *testing.T) []string {
	var out []string
	if p := os.Getenv("BOTTLENECK_TEST_PYTHON"); p != "" {
		out = append(out, p)
	} else if root, err := repoRoot(); err == nil {
		if p := filepath.Join(root, ".venv", "bin", "python"); fileExists(p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		if p, err := exec.LookPath("python3"); err == nil {
			out = append(out, p)
		}
	}
	for _, p := range filepath.SplitList(os.Getenv("BOTTLENECK_TEST_PYTHONS")) {
		if p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Skip("no Python found: set BOTTLENECK_TEST_PYTHON or create .venv at the repository root")
	}
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func repoRoot() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Abs(filepath.Join(filepath.Dir(file), "..", ".."))
}

// TestPythonUnitTests runs py/tests with unittest, so `go test ./...`
// covers the agent's Python code.
func TestPythonUnitTests(t *testing.T) {
	for _, py := range testPythons(t) {
		t.Run(filepath.Base(py), func(t *testing.T) {
			cmd := exec.Command(py, "-m", "unittest", "discover", "-s", filepath.Join("py", "tests"), "-v")
			cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if err != nil {
				t.Fatalf("%s: python unit tests failed: %v\n%s", py, err, out.String())
			}
			if !strings.Contains(out.String(), "OK") {
				t.Fatalf("unexpected unittest output:\n%s", out.String())
			}
			t.Logf("%s", lastLines(out.String(), 3))
		})
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func TestWriteEmbedsEveryFile(t *testing.T) {
	dir := t.TempDir()
	boot, err := Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(boot) != Boot {
		t.Fatalf("boot = %s", boot)
	}
	for _, n := range Names {
		want, err := os.ReadFile(filepath.Join("py", n))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: written file differs from py/%s", n, n)
		}
	}
}

// TestNamesListEveryModule: a module added to py/ but not to Names would be
// missing from the run's agent directory and the wheel, and the agent would
// fail to import it only there.
func TestNamesListEveryModule(t *testing.T) {
	onDisk, err := filepath.Glob(filepath.Join("py", "*.py"))
	if err != nil || len(onDisk) == 0 {
		t.Fatalf("py/*.py: %v %v", onDisk, err)
	}
	listed := map[string]bool{InProcess: true}
	for _, n := range Names {
		if listed[n] {
			t.Errorf("%s listed twice", n)
		}
		listed[n] = true
	}
	for _, p := range onDisk {
		if n := filepath.Base(p); !listed[n] {
			t.Errorf("py/%s is not in agent.Names", n)
		}
		delete(listed, filepath.Base(p))
	}
	for n := range listed {
		t.Errorf("agent.Names lists %s, which py/ does not hold", n)
	}
}

// The names the agent writes into the run directory are the ones
// internal/rundir reads: each process's files, by tag and window, its
// working directories, and the format version.
func TestAgentFileNames(t *testing.T) {
	py := testPythons(t)[0]
	cmd := exec.Command(py, "-c", `
import _bottleneck_files as f, _bottleneck_live as l, _bottleneck_workers as w
print("\n".join([str(f.FORMAT_VERSION), f.env_name("rank3"), f.evidence_name("rank3"), f.pyprofile_name("rank3"),
    f.pstats_name("rank3"), f.crash_name("rank3"), f.trace_name("rank3"), f.trace_name("rank3", 2),
    w.WORKERS_DIR % "rank3", f.PROGRESS_DIR, l.LIVE_DIR]))`)
	cmd.Dir = filepath.Join("py")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	want := []string{strconv.Itoa(rundir.FormatVersion), rundir.ProcessEnvName("rank3"), rundir.EvidenceName("rank3"), rundir.PyProfileName("rank3"),
		"pyprofile-rank3.pstats", "crash-rank3.txt", "trace-rank3.pt.trace.json.gz", "trace-rank3.w2.pt.trace.json.gz",
		rundir.WorkersDirName("rank3"), rundir.ProgressDirName, rundir.LiveDirName}
	if len(got) != len(want) {
		t.Fatalf("got %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("agent name %q, rundir's %q", got[i], want[i])
		}
	}
	// the names rundir recognises by their kind and tag
	kinds := map[string]rundir.FileKindName{got[4]: rundir.KindPStats, got[5]: rundir.KindCrash, got[6]: rundir.KindTrace, got[7]: rundir.KindTrace}
	for name, kind := range kinds {
		if k, tag := rundir.FileKind(name); k != kind || tag != "rank3" {
			t.Errorf("%s: rundir reads kind %s, tag %q", name, k, tag)
		}
	}
}
