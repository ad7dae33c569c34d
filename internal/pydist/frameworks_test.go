package pydist

import (
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// These tests run the Python package from the source tree
// (PYTHONPATH=python) with a freshly built binary, in the test venv, which
// scripts/setup gives lightning, transformers and nbclient.

type sourcePackage struct {
	py, bin, root string
	env           []string
}

func newSourcePackage(t *testing.T, modules ...string) sourcePackage {
	t.Helper()
	if testing.Short() {
		t.Skip("runs training programs (-short)")
	}
	py := testutil.TorchPython(t)
	for _, m := range modules {
		if err := exec.Command(py, "-c", "import "+m).Run(); err != nil {
			t.Skipf("%s cannot import %s (scripts/setup installs it)", py, m)
		}
	}
	root := testutil.RepoRoot()
	bin := filepath.Join(t.TempDir(), "bottleneck")
	run(t, root, nil, "go", "build", "-o", bin, "./cmd/bottleneck")
	env := append(cleanEnv(), "PYTHONPATH="+filepath.Join(root, "python"), "BOTTLENECK_BINARY="+bin,
		"HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "PYTHONDONTWRITEBYTECODE=1")
	return sourcePackage{py: py, bin: bin, root: root, env: env}
}

// verdictOf reads the primary class of a run directory's diagnosis.
func verdictOf(t *testing.T, runDir string) string {
	t.Helper()
	var rep struct {
		TraceReport struct {
			Traces []struct {
				Diagnosis struct {
					Verdict struct{ Primary string } `json:"verdict"`
				} `json:"diagnosis"`
			} `json:"traces"`
		} `json:"trace_report"`
	}
	readJSON(t, filepath.Join(runDir, "report.json"), &rep)
	if len(rep.TraceReport.Traces) == 0 || rep.TraceReport.Traces[0].Diagnosis.Verdict.Primary == "" {
		t.Fatalf("%s: no diagnosis in report.json", runDir)
	}
	return rep.TraceReport.Traces[0].Diagnosis.Verdict.Primary
}

// bottleneckRun runs script under `bottleneck run` and returns the verdict.
func (s sourcePackage) bottleneckRun(t *testing.T, script string, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	argv := append([]string{"run", "--report", "none", "--python", s.py, "-o", dir, script}, args...)
	run(t, t.TempDir(), s.env, s.bin, argv...)
	return verdictOf(t, dir)
}

func checkSteps(t *testing.T, runDir string, want int) {
	t.Helper()
	var ev struct {
		StepSource string `json:"step_source"`
		Steps      int    `json:"steps"`
	}
	readJSON(t, filepath.Join(runDir, "evidence-rank0.json"), &ev)
	if ev.StepSource != "optimizer" || ev.Steps != want {
		t.Errorf("%s: steps %d from %q, want %d from the optimizer", runDir, ev.Steps, ev.StepSource, want)
	}
}

func TestLightningProfiler(t *testing.T) {
	s := newSourcePackage(t, "lightning")
	script := filepath.Join(s.root, "examples", "frameworks", "lightning_train.py")
	parent := t.TempDir()
	out := run(t, t.TempDir(), s.env, s.py, script, parent)
	runDir := filepath.Join(parent, "bottleneck-fit")
	// 16 optimizer steps; the first locks the step source, 15 end a step
	checkSteps(t, runDir, 15)
	for _, want := range []string{"Verdict: ", "bottleneck run directory: " + runDir, "Lightning action",
		"optimizer_step", "train_dataloader_next", "training_step", "backward"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe() output lacks %q:\n%s", want, out)
		}
	}
	got, want := verdictOf(t, runDir), s.bottleneckRun(t, script)
	if got != want {
		t.Errorf("BottleneckProfiler's verdict %q, bottleneck run's %q", got, want)
	}
	if got != "input-bound" {
		t.Errorf("verdict %q; the example's step waits on its Dataset", got)
	}
}

// A fit that raises calls neither describe() nor teardown(): the recording
// is saved when the process exits.
func TestLightningProfilerSavesWhenFitRaises(t *testing.T) {
	s := newSourcePackage(t, "lightning")
	parent := t.TempDir()
	cmd := exec.Command(s.py, filepath.Join(s.root, "examples", "frameworks", "lightning_train.py"), parent, "12")
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "failing at step 12 as asked") {
		t.Fatalf("the run did not fail as asked: %v\n%s", err, out)
	}
	runDir := filepath.Join(parent, "bottleneck-fit")
	var m struct{ State string }
	readJSON(t, filepath.Join(runDir, "manifest.json"), &m)
	if m.State != "ended" {
		t.Errorf("manifest state %q after the failed fit, want ended", m.State)
	}
	checkSteps(t, runDir, 11)
	verdictOf(t, runDir)
}

func TestHuggingFaceCallback(t *testing.T) {
	s := newSourcePackage(t, "transformers", "accelerate")
	script := filepath.Join(s.root, "examples", "frameworks", "hf_train.py")
	outDir := filepath.Join(t.TempDir(), "out")
	run(t, t.TempDir(), s.env, s.py, script, outDir, "--bottleneck")
	runDir := filepath.Join(outDir, "bottleneck")
	checkSteps(t, runDir, 15)
	got, want := verdictOf(t, runDir), s.bottleneckRun(t, script, filepath.Join(t.TempDir(), "out"))
	if got != want {
		t.Errorf("BottleneckCallback's verdict %q, bottleneck run's %q", got, want)
	}
}

func TestNotebook(t *testing.T) {
	s := newSourcePackage(t, "nbclient", "ipykernel")
	work := t.TempDir()
	check, _ := filepath.Abs(filepath.Join("testdata", "notebook_check.py"))
	run(t, work, s.env, s.py, check, work)
	b, err := os.ReadFile(filepath.Join(work, "shown.html"))
	if err != nil {
		t.Fatal(err)
	}
	shown := string(b)
	if !strings.HasPrefix(shown, "<iframe") {
		t.Fatalf("the cell did not display the HTML report: %.300s", shown)
	}
	page := html.UnescapeString(shown)
	report, err := os.ReadFile(filepath.Join(work, "nb-run", "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page, string(report)) {
		t.Error("the displayed HTML is not the run's report.html")
	}
	var m struct{ State string }
	b, _ = os.ReadFile(filepath.Join(work, "nb-run", "manifest.json"))
	if json.Unmarshal(b, &m) != nil || m.State != "ended" {
		t.Errorf("notebook run's manifest: %s", b)
	}
}

func TestTrackers(t *testing.T) {
	s := newSourcePackage(t, "wandb", "mlflow")
	work := t.TempDir()
	check, _ := filepath.Abs(filepath.Join("testdata", "trackers_check.py"))
	// MLflow's file store needs the opt-in; its database stores need
	// SQLAlchemy, which mlflow-skinny does not bring
	out := run(t, work, append(s.env, "WANDB_MODE=offline", "WANDB_SILENT=true", "MLFLOW_ALLOW_FILE_STORE=true"), s.py, check, work)
	if !strings.Contains(out, "trackers ok") {
		t.Errorf("tracker check did not finish:\n%s", out)
	}
}

// try_change() from the source package: the program as it is and with
// DataLoader workers, through the binary's `try` (testdata/try_change_check.py).
func TestTryChange(t *testing.T) {
	s := newSourcePackage(t)
	check, _ := filepath.Abs(filepath.Join("testdata", "try_change_check.py"))
	if out := run(t, t.TempDir(), s.env, s.py, check, s.root); !strings.Contains(out, "try_change ok") {
		t.Errorf("try_change check did not finish:\n%s", out)
	}
}
