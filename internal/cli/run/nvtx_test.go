package run

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// nvtxProg trains a few steps, prints, and exits with status 3.
const nvtxProg = `import sys
import torch
m = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(12):
    opt.zero_grad()
    m(torch.randn(8, 4)).sum().backward()
    opt.step()
    print("step", step)
print("to stderr", file=sys.stderr)
sys.exit(3)
`

// --nvtx on a machine with no NVTX tool attached (and here no GPU): the
// program runs as without it, and the run says the ranges went nowhere
// (or, with a CPU-only torch, that NVTX is unavailable).
func TestNVTXWithoutACollector(t *testing.T) {
	py := torchPython(t)
	prog := filepath.Join(t.TempDir(), "nvtx_prog.py")
	if err := os.WriteFile(prog, []byte(nvtxProg), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := exec.Command(py, prog)
	var plainOut, plainErr bytes.Buffer
	plain.Stdout, plain.Stderr = &plainOut, &plainErr
	if err := plain.Run(); err == nil || plain.ProcessState.ExitCode() != 3 {
		t.Fatalf("plain run: %v\n%s", err, plainErr.String())
	}
	for _, mode := range []string{"--nvtx", "--nvtx=ops"} {
		t.Run(mode, func(t *testing.T) {
			r := bn(t, runOpts{}, append(small(py), mode, prog)...)
			if r.code != 3 || r.stdout != plainOut.String() {
				t.Fatalf("exit %d stdout %q, want 3 and %q\n%s", r.code, r.stdout, plainOut.String(), r.stderr)
			}
			if !strings.HasPrefix(r.stderr, plainErr.String()) && !strings.Contains(r.stderr, plainErr.String()) {
				t.Errorf("stderr lost the program's line:\n%s", r.stderr)
			}
			m, err := rundir.ReadManifest(r.dir)
			want := strings.TrimPrefix(strings.TrimPrefix(mode, "--nvtx"), "=")
			if want == "" {
				want = "steps"
			}
			if err != nil || m.Settings.NVTX != want {
				t.Fatalf("manifest settings nvtx %q (%v), want %q", m.Settings.NVTX, err, want)
			}
			var ev rundir.Evidence
			readJSON(t, filepath.Join(r.dir, "evidence-rank0.json"), &ev)
			nv := ev.NVTX
			if nv == nil || nv.Mode != want {
				t.Fatalf("evidence nvtx: %+v", nv)
			}
			var why string
			for _, mm := range ev.Missing {
				if mm.What == "NVTX ranges (--nvtx)" {
					why = mm.Why
				}
			}
			text, _ := os.ReadFile(filepath.Join(r.dir, "report.txt"))
			switch {
			case nv.State == "unavailable": // a CPU-only torch build
				if nv.Pushed != 0 || !strings.Contains(why, "unavailable in this torch build") {
					t.Errorf("nvtx %+v, missing %q", nv, why)
				}
			case nv.FirstDepth != nil && *nv.FirstDepth == -2: // NVTX works, nothing collects it
				if nv.Pushed != nv.Popped || nv.StepRanges != 12 || !strings.Contains(why, "no NVTX tool was attached") {
					t.Errorf("nvtx %+v, missing %q", nv, why)
				}
			default:
				t.Skipf("an NVTX tool is attached (first depth %v): nothing to report missing", nv.FirstDepth)
			}
			if !bytes.Contains(text, []byte("  - NVTX ranges (--nvtx): "+why)) {
				t.Errorf("report.txt does not say it:\n%s", text)
			}
			if want == "ops" {
				// no CUDA used: emit_nvtx() is not entered, and the trace is kept
				if !strings.HasPrefix(nv.Ops, "skipped: the program had not used CUDA") || len(ev.Profiler.Windows) != 1 {
					t.Errorf("ops %q, windows %d", nv.Ops, len(ev.Profiler.Windows))
				}
			} else if nv.Ops != "" || len(ev.Profiler.Windows) != 1 {
				t.Errorf("ops %q, windows %d", nv.Ops, len(ev.Profiler.Windows))
			}
		})
	}
}

func TestNVTXFlagParsing(t *testing.T) {
	if r := bn(t, runOpts{}, "--nvtx=kernels", "x.py"); r.err == nil || !strings.Contains(r.err.Error(), "want one of") {
		t.Errorf("--nvtx=kernels: %v, want a flag parse error", r.err)
	}
	// bare --nvtx takes no value: the next argument stays the program
	o := &Options{}
	cmd := newCmd(o, runRun)
	if err := cmd.ParseFlags([]string{"--nvtx", "train.py", "--lr", "1"}); err != nil {
		t.Fatal(err)
	}
	if o.NVTX != "steps" || strings.Join(cmd.Flags().Args(), " ") != "train.py --lr 1" {
		t.Errorf("nvtx %q args %q", o.NVTX, cmd.Flags().Args())
	}
	o = &Options{}
	cmd = newCmd(o, runRun)
	if err := cmd.ParseFlags([]string{"train.py"}); err != nil || o.NVTX != "" {
		t.Errorf("default nvtx %q (%v), want off", o.NVTX, err)
	}
}

// compileLater trains 3 eager steps, then compiles the model and forbids
// recompiling: the hooks --nvtx put on the model must go before Dynamo
// sees it.
const compileLater = `import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 32)
run = model
for step in range(12):
    if step == 3:
        run = torch.compile(model, backend="eager")
    opt.zero_grad()
    run(x).sum().backward()
    opt.step()
    if step == 3:
        torch.compiler.set_stance("fail_on_recompile")
print("unique graphs %d" % torch._dynamo.utils.counters["stats"]["unique_graphs"])
print("module hooks %d" % (len(model._forward_pre_hooks) + len(model._forward_hooks)))
`

// --nvtx adds no module hook that torch.compile would see, whether the
// program compiles before its first step or after a few.
func TestNVTXWithTorchCompile(t *testing.T) {
	py := torchPython(t)
	later := filepath.Join(t.TempDir(), "compile_later.py")
	if err := os.WriteFile(later, []byte(compileLater), 0o644); err != nil {
		t.Fatal(err)
	}
	for prog, want := range map[string]string{
		ex(t, "compiled_strict.py"): "unique graphs 1\n",
		// the hooks on the model were removed when it was compiled
		later: "unique graphs 1\nmodule hooks 0\n",
	} {
		t.Run(filepath.Base(prog), func(t *testing.T) {
			r := bn(t, runOpts{}, append(small(py), "--report", "none", "--nvtx", prog)...)
			if r.code != 0 || r.stdout != want {
				t.Fatalf("exit %d stdout %q, want 0 and %q\n%s", r.code, r.stdout, want, r.stderr)
			}
			if strings.Contains(r.stderr, "global hooks") || strings.Contains(r.stderr, "recompile") {
				t.Errorf("stderr:\n%s", r.stderr)
			}
			var ev rundir.Evidence
			readJSON(t, filepath.Join(r.dir, "evidence-rank0.json"), &ev)
			if nv := ev.NVTX; nv == nil || nv.Pushed == 0 || nv.Pushed != nv.Popped || nv.StepRanges != ev.Steps+1 {
				t.Errorf("nvtx %+v, %d steps", nv, ev.Steps)
			}
		})
	}
}
