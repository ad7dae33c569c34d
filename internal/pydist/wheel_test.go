package pydist

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/agent"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/version"
)

func TestPythonVersion(t *testing.T) {
	for in, want := range map[string]string{"0.1.0-dev": "0.1.0.dev0", "1.2.3": "1.2.3", "2": "2"} {
		if got, err := PythonVersion(in); err != nil || got != want {
			t.Errorf("PythonVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "v1.2", "1.2-rc1", "1..2", "1.2-dev-dev"} {
		if got, err := PythonVersion(bad); err == nil {
			t.Errorf("PythonVersion(%q) = %q, want an error", bad, got)
		}
	}
}

// The wheel's version is read from the source; it must be the binary's.
func TestSourceVersionIsTheBinarysVersion(t *testing.T) {
	v, err := SourceVersion(testutil.RepoRoot())
	if err != nil {
		t.Fatal(err)
	}
	if v != version.Version {
		t.Fatalf("internal/version/version.go reads %q, the binary has %q", v, version.Version)
	}
}

// TestWheel builds the wheel for this machine, checks its contents and that
// a second build gives the same bytes, installs it into a fresh venv (torch
// from the test venv through a .pth file, no download) and runs the
// `bottleneck` command and the Python API from there.
// hostWheel builds this machine's wheel as scripts/build-wheel does and
// returns it with a Python that has torch and pip (skipping without one).
func hostWheel(t *testing.T) (py, whl string, plat Platform) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a wheel (-short)")
	}
	plat, ok := HostPlatform()
	if !ok {
		t.Skip("no wheel platform for this machine")
	}
	py = testutil.TorchPython(t)
	if err := exec.Command(py, "-m", "pip", "--version").Run(); err != nil {
		t.Skipf("%s has no pip: %v", py, err)
	}
	whl, err := Build(Options{Root: testutil.RepoRoot(), OutDir: t.TempDir(), Platform: plat, Time: wheelStamp})
	if err != nil {
		t.Fatal(err)
	}
	return py, whl, plat
}

// wheelStamp is the builder's time without SOURCE_DATE_EPOCH.
var wheelStamp = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

func TestWheel(t *testing.T) {
	py, whl, plat := hostWheel(t)
	root := testutil.RepoRoot()
	again, err := Build(Options{Root: root, OutDir: t.TempDir(), Platform: plat, Time: wheelStamp})
	if err != nil {
		t.Fatal(err)
	}
	b1, _ := os.ReadFile(whl)
	b2, _ := os.ReadFile(again)
	if !bytes.Equal(b1, b2) {
		t.Errorf("two builds of the same source differ (%d and %d bytes)", len(b1), len(b2))
	}
	checkWheel(t, whl)

	venv := filepath.Join(t.TempDir(), "venv")
	run(t, "", nil, py, "-m", "venv", "--without-pip", venv)
	vpy := filepath.Join(venv, "bin", "python")
	torchSite := strings.TrimSpace(run(t, "", nil, py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"))
	site := strings.TrimSpace(run(t, "", nil, vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"))
	if err := os.WriteFile(filepath.Join(site, "test-torch.pth"), []byte(torchSite+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "", nil, py, "-m", "pip", "--python", vpy, "install", "--no-index", "--no-deps",
		"--disable-pip-version-check", "--quiet", whl)

	// A user who calls the venv's command without activating the venv:
	// `run` must use the venv's interpreter, not python3 on PATH.
	env := cleanEnv()
	work := t.TempDir()
	runDir := filepath.Join(work, "run")
	out := run(t, work, env, filepath.Join(venv, "bin", "bottleneck"), "run", "--report", "none", "-o", runDir,
		"--skip-first", "2", "--warmup", "1", "--active", "2", filepath.Join(root, "examples", "run", "train_cnn.py"))
	if !strings.Contains(out, "trained 20 steps") {
		t.Errorf("program output missing: %q", out)
	}
	var m struct {
		Command struct{ Python string } `json:"command"`
	}
	readJSON(t, filepath.Join(runDir, "manifest.json"), &m)
	if m.Command.Python != vpy {
		t.Errorf("run used %q, want the venv's %q", m.Command.Python, vpy)
	}
	var rep struct {
		TraceReport json.RawMessage `json:"trace_report"`
	}
	readJSON(t, filepath.Join(runDir, "report.json"), &rep)
	if len(rep.TraceReport) == 0 {
		t.Error("run's report.json has no trace analysis")
	}

	inside, _ := filepath.Abs(filepath.Join("testdata", "api_inside_run.py"))
	insideDir := filepath.Join(work, "inside")
	out = run(t, work, env, filepath.Join(venv, "bin", "bottleneck"), "run", "--report", "none", "-o", insideDir, inside, insideDir)
	if !strings.Contains(out, "inside run ok") {
		t.Errorf("profile() inside bottleneck run:\n%s", out)
	}
	checkSteps(t, insideDir, 11)

	pyVer, _ := PythonVersion(version.Version)
	check, _ := filepath.Abs(filepath.Join("testdata", "api_check.py"))
	api := run(t, work, env, vpy, check, pyVer, runDir)
	if !strings.Contains(api, "api ok") {
		t.Errorf("API check did not finish:\n%s", api)
	}
}

// checkWheel: the entries pip needs, RECORD's hashes, the binary executable,
// and no importable `bottleneck` (pandas would import it).
func checkWheel(t *testing.T, whl string) {
	t.Helper()
	r, err := zip.OpenReader(whl)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	files := map[string][]byte{}
	var record string
	for _, f := range r.File {
		top := strings.SplitN(f.Name, "/", 2)[0]
		if top == "bottleneck" || top == "bottleneck.py" || strings.HasPrefix(top, "bottleneck.") {
			t.Errorf("wheel holds %s: `import bottleneck` must stay the NumPy accelerator's", f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		files[f.Name] = b
		if strings.HasSuffix(f.Name, "/RECORD") {
			record = string(b)
		}
		if f.Name == ImportName+"/bin/bottleneck" && f.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable (%v)", f.Name, f.Mode())
		}
	}
	for _, want := range []string{ImportName + "/bin/bottleneck", ImportName + "/_version.py", ImportName + "/__init__.py"} {
		if _, ok := files[want]; !ok {
			t.Errorf("wheel lacks %s", want)
		}
	}
	// every module of the agent's directory, less bottleneck run's launchers
	modules, err := filepath.Glob(filepath.Join("..", "agent", "py", "*.py"))
	if err != nil || len(modules) == 0 {
		t.Fatalf("agent modules: %v %v", modules, err)
	}
	for _, m := range modules {
		n := filepath.Base(m)
		_, ok := files[ImportName+"/_agent/"+n]
		if launcher := n == agent.Boot || n == agent.Shim; ok == launcher {
			t.Errorf("%s in the wheel: %v, want %v", n, ok, !launcher)
		}
	}
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(record), "\n") {
		f := strings.Split(line, ",")
		if len(f) != 3 || f[1] == "" {
			continue // RECORD itself
		}
		listed++
		sum := sha256.Sum256(files[f[0]])
		if want := "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]); f[1] != want || f[2] != fmt.Sprint(len(files[f[0]])) {
			t.Errorf("RECORD %s: %s,%s; content has %s,%d", f[0], f[1], f[2], want, len(files[f[0]]))
		}
	}
	if listed != len(files)-1 {
		t.Errorf("RECORD lists %d of %d files", listed, len(files)-1)
	}
}

// cleanEnv is the environment of a user with no venv active.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "VIRTUAL_ENV=") || strings.HasPrefix(kv, "BOTTLENECK_") || strings.HasPrefix(kv, "PYTHON") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if dir == "" {
		cmd.Dir, _ = os.Getwd()
	}
	if env != nil {
		cmd.Env = env
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// `pip wheel .` (pyproject.toml's in-tree backend) gives the very wheel
// the project's builder gives: one package, two routes.
func TestPipBuildsTheSameWheel(t *testing.T) {
	py, want, _ := hostWheel(t)
	out := t.TempDir()
	cmd := exec.Command(py, "-m", "pip", "wheel", testutil.RepoRoot(), "--no-deps", "--no-index", "-w", out)
	cmd.Env = append(os.Environ(), "PIP_DISABLE_PIP_VERSION_CHECK=1", "SOURCE_DATE_EPOCH=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip wheel: %v\n%s", err, b)
	}
	got := filepath.Join(out, filepath.Base(want))
	b1, err := os.ReadFile(got)
	if err != nil {
		t.Fatalf("pip wrote no %s: %v", filepath.Base(want), err)
	}
	b2, _ := os.ReadFile(want)
	if !bytes.Equal(b1, b2) {
		t.Errorf("pip's wheel differs from the builder's (%d and %d bytes)", len(b1), len(b2))
	}
}
