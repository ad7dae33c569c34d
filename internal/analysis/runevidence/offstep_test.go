package runevidence

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

const (
	sitePkgs  = "/venv/lib/python3.11/site-packages"
	modFile   = sitePkgs + "/torch/nn/modules/module.py"
	autograd  = sitePkgs + "/torch/autograd/__init__.py"
	ctxlib    = sitePkgs + "/torch/utils/_contextlib.py"
	tensorStr = sitePkgs + "/torch/_tensor_str.py"
)

// profileOf builds a sampled profile of the main thread from stacks of
// (file, line) frames, root first, each sampled count times in the window
// and out of it.
func profileOf(stacks map[int][][2]any) *pyprofile.Profile {
	p := &pyprofile.Profile{Profiler: "sample", Threads: []pyprofile.Thread{{Role: "main"}}}
	for count, ss := range stacks {
		st := pyprofile.Stack{Count: count, WindowCount: count}
		for _, f := range ss {
			p.Frames = append(p.Frames, pyprofile.Frame{File: f[0].(string), Line: f[1].(int), Func: "f"})
			st.Frames = append(st.Frames, len(p.Frames)-1)
		}
		p.Stacks = append(p.Stacks, st)
	}
	return p
}

func TestOffStep(t *testing.T) {
	src := filepath.Join(t.TempDir(), "train.py")
	if err := os.WriteFile(src, []byte(offStepProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	fr := func(file string, line int) [2]any { return [2]any{file, line} }
	train := [][2]any{fr(src, 10), fr(modFile, 1)}     // the training forward
	backward := [][2]any{fr(src, 11), fr(autograd, 1)} // its backward
	update := [][2]any{fr(src, 14)}                    // a manual SGD update under no_grad: no forward
	withEval := [][2]any{fr(src, 16), fr(modFile, 1)}  // a forward in a with no_grad block
	decorated := [][2]any{fr(src, 17), fr(ctxlib, 1), fr(src, 6), fr(modFile, 1)}
	printed := [][2]any{fr(src, 18), fr(tensorStr, 1)}
	logged := [][2]any{fr(src, 18), fr(sitePkgs+"/torch/utils/tensorboard/writer.py", 1), fr(tensorStr, 1)} // io.in-step's
	teacher := [][2]any{fr(src, 20), fr(modFile, 1)}                                                        // a frozen teacher: the loss needs it

	// each stack is keyed by its sample count (all distinct)
	share, lines, win := offStep(profileOf(map[int][][2]any{40: train, 30: backward, 10: update, 5: withEval, 7: decorated, 8: printed, 3: logged, 9: teacher}), newSourceCache(""), false)
	if want := 20.0 / 112; share != want || win != want {
		t.Errorf("share %v window %v, want %v", share, win, want)
	}
	got := map[int]string{}
	for _, l := range lines {
		got[l.Line.Line] = l.Kind
	}
	// the decorated evaluation is named at its call in the loop (17), not
	// inside evaluate()
	want := map[int]string{16: OffStepEval, 17: OffStepEval, 18: OffStepPrint}
	if len(got) != len(want) {
		t.Errorf("lines %+v, want %v", lines, want)
	}
	for l, k := range want {
		if got[l] != k {
			t.Errorf("line %d: %q, want %q", l, got[l], k)
		}
	}

	// a window of fast steps holds too few samples to tell work in every
	// step from work every N steps: no window share, so no finding
	few := profileOf(map[int][][2]any{40: train, 30: backward, 20: withEval})
	for i := range few.Stacks {
		few.Stacks[i].WindowCount = 0
	}
	few.Stacks[0].WindowCount = 2
	if _, _, win := offStep(few, newSourceCache(""), false); win != 0 {
		t.Errorf("2 window samples: window share %v, want 0", win)
	}
	// a window of enough samples, but only 2 of them in the work (an
	// evaluation every 50 steps caught by chance): it cannot tell either
	chance := profileOf(map[int][][2]any{40: train, 30: backward, 20: withEval})
	for i := range chance.Stacks {
		if chance.Stacks[i].Count == 20 {
			chance.Stacks[i].WindowCount = 2
		}
	}
	if _, _, win := offStep(chance, newSourceCache(""), false); win != 0 {
		t.Errorf("2 of 72 window samples in the work: window share %v, want 0", win)
	}
	// a window whose time the main thread spent in the agent's own work
	// (profiler start and stop) holds no sample of it at all: the same
	few.Stacks[0].WindowCount = 0
	few.Windows = [][2]float64{{1, 1.1}}
	if _, _, win := offStep(few, newSourceCache(""), false); win != 0 {
		t.Errorf("window without main-thread samples: window share %v, want 0", win)
	}
	// no window recorded (the program's own profiler): the whole run judges
	few.Windows = nil
	if _, _, win := offStep(few, newSourceCache(""), false); win != -1 {
		t.Errorf("no window: window share %v, want -1", win)
	}

	// an inference program runs every forward under no_grad: those are its
	// steps, not work off them
	if share, lines, _ := offStep(profileOf(map[int][][2]any{5: withEval, 7: decorated}), newSourceCache(""), false); share != 0 || lines != nil {
		t.Errorf("inference program: share %v lines %+v", share, lines)
	}
	// the same forwards in a run known to train (its optimizer stepped)
	// whose samples missed the backward and the update: evaluation
	if share, _, _ := offStep(profileOf(map[int][][2]any{5: withEval, 7: decorated}), newSourceCache(""), true); share != 1 {
		t.Errorf("training known, not sampled: share %v, want 1", share)
	}
	// training alone, with a manual update under no_grad: nothing
	if share, _, _ := offStep(profileOf(map[int][][2]any{40: train, 30: backward, 10: update}), newSourceCache(""), false); share != 0 {
		t.Errorf("training only: share %v", share)
	}
	// the innermost grad mode wins: Lightning's optimizer closure turns
	// gradients on (torch 2.x names the decorator's frame after its
	// context manager) inside a loop that may run under no_grad; its
	// training forward is the step's
	named := func(stack [][2]any, funcs ...string) [][2]any {
		out := slices.Clone(stack)
		for i, f := range funcs {
			out[i+1] = [2]any{ctxlib + "#" + f, 1}
		}
		return out
	}
	closure := named([][2]any{fr(src, 10), fr(ctxlib, 1), fr(modFile, 1)}, "enable_grad")
	inside := named([][2]any{fr(src, 17), fr(ctxlib, 1), fr(ctxlib, 1), fr(modFile, 1)}, "no_grad", "enable_grad")
	evalNamed := named([][2]any{fr(src, 17), fr(ctxlib, 1), fr(src, 6), fr(modFile, 1)}, "no_grad")
	p := profileOf(map[int][][2]any{40: closure, 30: backward, 20: inside, 7: evalNamed})
	for i, f := range p.Frames {
		if file, fn, ok := strings.Cut(f.File, "#"); ok {
			p.Frames[i].File, p.Frames[i].Func = file, fn
		}
	}
	if share, lines, _ := offStep(p, newSourceCache(""), false); share != 7.0/97 || len(lines) != 1 || lines[0].Line.Line != 17 {
		t.Errorf("enable_grad inside: share %v lines %+v, want the no_grad evaluation's 7/97 alone", share, lines)
	}
}

func TestInNoGradBlock(t *testing.T) {
	src := filepath.Join(t.TempDir(), "train.py")
	if err := os.WriteFile(src, []byte(offStepProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newSourceCache("")
	for line, want := range map[int]bool{6: true, 10: false, 11: false, 14: true, 16: true, 17: false, 18: false, 20: true, 21: false, 0: false, 999: false} {
		if got := c.inNoGradBlock(src, line); got != want {
			t.Errorf("line %d: %v, want %v", line, got, want)
		}
	}
	if c.inNoGradBlock(filepath.Join(t.TempDir(), "missing.py"), 3) {
		t.Error("a missing file is in a no_grad block")
	}
}

// offStepProgram is a training script; its line numbers are what the
// synthetic stacks below sample.
const offStepProgram = `import torch

@torch.no_grad()
def evaluate(model, batches):
    for b in batches:
        model(b)

def main(model, opt, x, val):
    for step in range(100):
        loss = model(x).sum()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        with torch.no_grad():
            model(val)
        evaluate(model, [val])
        print(loss)
        with torch.no_grad():
            t = teacher(x)
        (model(x) - t).pow(2).sum().backward()
`
