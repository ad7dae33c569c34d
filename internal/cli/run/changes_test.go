package run

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/runner"
)

// changesProgram trains a small model on a DataLoader with no workers,
// sets its own thread count, prints a result that does not depend on
// workers or threads and exits with 3.
const changesProgram = `import sys
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)
ds = TensorDataset(torch.arange(96, dtype=torch.float32).reshape(48, 2) / 96, torch.ones(48, 1))
loader = DataLoader(ds, batch_size=4)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.4f batches %d" % (loss.item(), len(loader)))
sys.exit(3)
`

// A run with Set {num_workers: 2, threads: 1, gc_freeze: true} makes each
// change where the program would have its own way (its DataLoader, its
// set_num_threads call, the end of its first step), says so in the
// evidence, and leaves the program's output and exit status as they are
// without bottleneck.
func TestRunTimeChangesApplied(t *testing.T) {
	py := torchPython(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "train.py")
	if err := os.WriteFile(prog, []byte(changesProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := exec.Command(py, prog)
	plain.Dir = dir
	want, err := plain.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("the program alone: %v, want exit status 3", err)
	}

	ac := runner.DefaultAgentConfig()
	ac.Profiler.SkipFirst, ac.Profiler.Warmup, ac.Profiler.Active = 1, 1, 2
	ac.Set = map[string]string{"num_workers": "2", "threads": "1", "gc_freeze": "true"}
	var stdout, stderr bytes.Buffer
	res, err := runner.Run(context.Background(), runner.Config{
		Python: py, Mode: runner.Script, Target: prog, RunDir: filepath.Join(dir, "run"), Agent: ac,
		Stdout: &stdout, Stderr: &stderr, Dir: dir, Signals: make(chan os.Signal),
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if res.ExitCode != 3 || stdout.String() != string(want) {
		t.Fatalf("with the changes: exit %d, stdout %q; want 3 and %q\n%s", res.ExitCode, stdout.String(), want, stderr.String())
	}
	ev, err := rundir.ReadEvidence(res.RunDir, "rank0")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]rundir.Change{}
	for _, c := range ev.Changes {
		got[c.Name] = c
	}
	if len(ev.Changes) != 3 {
		t.Errorf("changes: %+v, want the 3 asked for", ev.Changes)
	}
	for name, sites := range map[string][]string{
		"num_workers": {"DataLoader at train.py:8: num_workers 0 -> 2"},
		"threads":     {"torch.set_num_threads(1) at torch's import", "torch.set_num_threads(2) at train.py:6 kept at 1"},
		"gc_freeze":   {"gc.freeze() after step 1: "},
	} {
		c := got[name]
		if !c.Applied || c.Error != "" || len(c.Sites) != len(sites) {
			t.Errorf("%s: %+v, want applied at %q", name, c, sites)
			continue
		}
		for i, s := range sites {
			if !strings.HasPrefix(c.Sites[i], s) {
				t.Errorf("%s: site %q, want %q", name, c.Sites[i], s)
			}
		}
	}
	// the DataLoader the agent recorded has the workers
	if l := ev.DataLoader.Loaders; len(l) != 1 || l[0].NumWorkers == nil || *l[0].NumWorkers != 2 {
		t.Errorf("loaders: %+v", l)
	}
}

// An ordinary run asks for no change, and its evidence lists none.
func TestNoRunTimeChangesByDefault(t *testing.T) {
	py := torchPython(t)
	dir := t.TempDir()
	prog := filepath.Join(dir, "train.py")
	if err := os.WriteFile(prog, []byte(changesProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	ac := runner.DefaultAgentConfig()
	ac.Profiler.SkipFirst, ac.Profiler.Warmup, ac.Profiler.Active = 1, 1, 2
	var stdout, stderr bytes.Buffer
	res, err := runner.Run(context.Background(), runner.Config{
		Python: py, Mode: runner.Script, Target: prog, RunDir: filepath.Join(dir, "run"), Agent: ac,
		Stdout: &stdout, Stderr: &stderr, Dir: dir, Signals: make(chan os.Signal),
	})
	if err != nil || res.ExitCode != 3 {
		t.Fatalf("%v %+v\n%s", err, res, stderr.String())
	}
	ev, err := rundir.ReadEvidence(res.RunDir, "rank0")
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Changes) != 0 {
		t.Errorf("changes in an ordinary run: %+v", ev.Changes)
	}
	if l := ev.DataLoader.Loaders; len(l) != 1 || l[0].NumWorkers == nil || *l[0].NumWorkers != 0 {
		t.Errorf("loaders: %+v", l)
	}
}
