package run

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// frameworkPython returns the test Python when it imports every module,
// or skips (scripts/setup installs lightning and transformers).
func frameworkPython(t *testing.T, modules ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs training programs (-short)")
	}
	py := torchPython(t)
	for _, m := range modules {
		if err := exec.Command(py, "-c", "import "+m).Run(); err != nil {
			t.Skipf("%s cannot import %s (scripts/setup installs it)", py, m)
		}
	}
	return py
}

// offline keeps transformers off the network (the models are built from
// configs).
var offline = map[string]string{"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}

// plainRun runs the program with python alone: its stdout and exit status.
func plainRun(t *testing.T, py string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(py, args...)
	cmd.Dir = t.TempDir()
	out, err := cmd.Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// timings are the numbers of the Trainer's printed metrics that vary from
// run to run.
var timings = regexp.MustCompile(`('\w*(?:runtime|per_second)': )'[0-9.]+'`)

// phasesRun runs the program under bottleneck run and under plain python
// and checks they print the same and exit alike; it returns the run's
// framework phases and report.txt.
func phasesRun(t *testing.T, py string, args ...string) (*rundir.FrameworkPhases, string) {
	t.Helper()
	for k, v := range offline {
		t.Setenv(k, v)
	}
	r := bn(t, runOpts{}, append(small(py), args...)...)
	want, code := plainRun(t, py, args...)
	if r.code != code || timings.ReplaceAllString(r.stdout, "$1#") != timings.ReplaceAllString(want, "$1#") {
		t.Errorf("under run: exit %d, stdout %q; plain python: exit %d, stdout %q\n%s", r.code, r.stdout, code, want, r.stderr)
	}
	var ev rundir.Evidence
	readJSON(t, filepath.Join(r.dir, "evidence-rank0.json"), &ev)
	if len(ev.Errors) > 0 {
		t.Errorf("agent errors: %v", ev.Errors)
	}
	text, err := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	fp := ev.FrameworkPhases
	if fp == nil {
		t.Fatalf("no framework_phases in the evidence")
	}
	// the self times and the time outside any phase add up to the wall
	// span, which lies within the process's life
	sum := fp.OutsideS
	for _, p := range fp.Phases {
		sum += p.SelfS
		if p.SelfS < 0 || p.SelfS > p.TotalS+1e-9 || p.Calls < 1 {
			t.Errorf("phase %+v", p)
		}
	}
	life := ev.EndUnix - ev.StartUnix
	if fp.WallS <= 0 || math.Abs(sum-fp.WallS) > 0.02*fp.WallS || fp.WallS > life {
		t.Errorf("phases add up to %.3fs, wall %.3fs, process %.3fs", sum, fp.WallS, life)
	}
	return fp, string(text)
}

// phaseNamed is the first phase whose name contains part (Lightning's
// names hold class names), or is name exactly when part starts with "=".
func phaseNamed(fp *rundir.FrameworkPhases, part string) *rundir.Phase {
	name, exact := strings.CutPrefix(part, "=")
	for i, p := range fp.Phases {
		if p.Name == name || !exact && strings.Contains(p.Name, part) {
			return &fp.Phases[i]
		}
	}
	return nil
}

func TestLightningPhases(t *testing.T) {
	py := frameworkPython(t, "lightning")
	fp, text := phasesRun(t, py, filepath.Join(repoRoot(t), "examples", "frameworks", "lightning_train.py"), "--validate")
	if fp.Framework != "lightning" {
		t.Errorf("framework %q", fp.Framework)
	}
	for _, name := range []string{"training_step", "backward", "optimizer_step", "train_dataloader_next", "validation_step", "val_next"} {
		if phaseNamed(fp, name) == nil {
			t.Errorf("no %s phase in %+v", name, fp.Phases)
		}
	}
	// the closure runs training_step and backward inside optimizer_step:
	// its self time leaves them out
	opt := phaseNamed(fp, "optimizer_step")
	if ts := phaseNamed(fp, "training_step"); opt != nil && ts != nil && opt.SelfS > opt.TotalS-ts.TotalS+1e-6 {
		t.Errorf("optimizer_step self %.4fs, total %.4fs, training_step %.4fs", opt.SelfS, opt.TotalS, ts.TotalS)
	}
	// the example's Dataset sleeps: fetching batches is the largest phase
	if dl := phaseNamed(fp, "train_dataloader_next"); dl == nil || dl.SelfS < 0.3*fp.WallS {
		t.Errorf("train_dataloader_next %+v of a %.2fs wall", dl, fp.WallS)
	}
	if !strings.Contains(text, "Lightning phases (whole run, self time adds up to the wall time") ||
		!strings.Contains(text, "outside any phase") {
		t.Errorf("report.txt lacks the phases table:\n%s", text)
	}
	// validating 4 slow batches every 8 steps is a third of the run: the
	// diagnosis says so, with Lightning's knobs
	if val := phaseNamed(fp, "val_next"); val != nil && val.SelfS >= 0.2*fp.WallS &&
		(!strings.Contains(text, "Validation takes") || !strings.Contains(text, "limit_val_batches")) {
		t.Errorf("val_next %.2fs of %.2fs, but no validation finding:\n%s", val.SelfS, fp.WallS, text)
	}
}

func TestHuggingFaceTrainerPhases(t *testing.T) {
	py := frameworkPython(t, "transformers", "accelerate")
	fp, text := phasesRun(t, py, filepath.Join(repoRoot(t), "examples", "frameworks", "hf_train.py"),
		filepath.Join(t.TempDir(), "out"), "--evaluate")
	if fp.Framework != "transformers" {
		t.Errorf("framework %q", fp.Framework)
	}
	for name, calls := range map[string]int{"step": 16, "training_step": 16, "optimizer_step": 16,
		"get_batch_samples": 16, "evaluate": 2, "train": 1} {
		if p := phaseNamed(fp, "="+name); p == nil || p.Calls != calls {
			t.Errorf("phase %s: %+v, want %d calls", name, p, calls)
		}
	}
	if ev := phaseNamed(fp, "=evaluate"); ev != nil && ev.SelfS < 0.05*fp.WallS {
		t.Errorf("evaluate of 32 slow samples twice: %.3fs of %.2fs", ev.SelfS, fp.WallS)
	}
	if !strings.Contains(text, "Hugging Face Trainer phases (whole run") {
		t.Errorf("report.txt lacks the phases table:\n%s", text)
	}
}

// A program that uses neither framework gets no phases.
func TestNoFrameworkNoPhases(t *testing.T) {
	py := torchPython(t)
	r := bn(t, runOpts{}, append(small(py), ex(t, "train_cnn.py"), "--steps", "6", "--batch-size", "4")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var ev map[string]any
	readJSON(t, filepath.Join(r.dir, "evidence-rank0.json"), &ev)
	if v, ok := ev["framework_phases"]; !ok || v != nil {
		t.Errorf("framework_phases = %v (present %v), want null", v, ok)
	}
	text, _ := os.ReadFile(filepath.Join(r.dir, "report.txt"))
	if strings.Contains(string(text), "phases (whole run") {
		t.Errorf("report.txt has a phases table:\n%s", text)
	}
}
