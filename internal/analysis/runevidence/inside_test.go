package runevidence

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// namedProfile builds a sampled profile of the main thread from stacks of
// frames "file:func", root first, each sampled count times.
func namedProfile(stacks ...namedStack) *pyprofile.Profile {
	p := &pyprofile.Profile{Profiler: "sample", Threads: []pyprofile.Thread{{Role: "main"}}}
	for _, s := range stacks {
		st := pyprofile.Stack{Count: s.count, SlowCount: s.slow}
		for i, f := range s.frames {
			p.Frames = append(p.Frames, pyprofile.Frame{File: f[0], Func: f[1], Line: 10 + i})
			st.Frames = append(st.Frames, len(p.Frames)-1)
		}
		p.Stacks = append(p.Stacks, st)
	}
	return p
}

type namedStack struct {
	count, slow int
	frames      [][2]string
}

func TestInsideOf(t *testing.T) {
	const (
		user   = "/w/ppo.py"
		sb3    = sitePkgs + "/stable_baselines3/common/on_policy_algorithm.py"
		policy = sitePkgs + "/stable_baselines3/common/policies.py"
		buffer = sitePkgs + "/stable_baselines3/common/buffers.py"
		tensor = sitePkgs + "/torch/_tensor.py"
	)
	learn, collect, train := [2]string{sb3, "learn"}, [2]string{sb3, "collect_rollouts"}, [2]string{sb3, "train"}
	call := [2]string{modFile, "_call_impl"}
	decorated := [2]string{sitePkgs + "/stable_baselines3/common/utils.py", "deprecate.<locals>.wrapper"}
	// the whole program is one call of a framework (model.learn()): its
	// rollouts call the policy's forward through torch's module call and
	// a decorator's wrapper
	p := namedProfile(
		namedStack{60, 60, [][2]string{{user, "<module>"}, learn, collect, call, {policy, "Policy.forward"}, call, decorated, {policy, "Mlp.forward"}}},
		namedStack{20, 20, [][2]string{{user, "<module>"}, learn, collect, {buffer, "Buffer.add"}}},
		namedStack{20, 0, [][2]string{{user, "<module>"}, learn, train, {tensor, "Tensor.backward"}}},
	)
	under := func(p *pyprofile.Profile) []lineStack {
		var out []lineStack
		for i := range p.Stacks {
			out = append(out, lineStack{&p.Stacks[i], 0})
		}
		return out
	}
	all := func(st *pyprofile.Stack) int { return st.Count }
	c := insideOf(p, under(p), all)
	if c == nil || c.Package != "stable_baselines3" || c.Func != "collect_rollouts" || c.Pct != 80 || len(c.Via) != 1 || c.Via[0] != "learn" || c.Module {
		t.Fatalf("inside %+v", c)
	}
	if want := "in stable_baselines3: learn > collect_rollouts (80%): Policy.forward 60%, Buffer.add 20%"; c.String() != want {
		t.Errorf("got %q\nwant %q", c.String(), want)
	}
	// the slow steps' samples alone go further, to the policy's network
	c = insideOf(p, under(p), func(st *pyprofile.Stack) int { return st.SlowCount })
	if want := "in stable_baselines3: Policy.forward > Mlp.forward (75%)"; c == nil || c.String() != want || len(c.Via) != 3 || !c.Module {
		t.Fatalf("slow steps' inside %+v, want %q", c, want)
	}

	for name, p := range map[string]*pyprofile.Profile{
		// torch's own functions: the trace shows what they do
		"torch": namedProfile(namedStack{50, 0, [][2]string{{user, "main"}, {tensor, "Tensor.backward"}, {autograd, "backward"}}}),
		// the line's own work
		"own": namedProfile(namedStack{50, 0, [][2]string{{user, "main"}}}),
		// spread over two functions of a package, neither most
		"spread": namedProfile(namedStack{50, 0, [][2]string{{user, "main"}, {buffer, "a"}}}, namedStack{50, 0, [][2]string{{user, "main"}, {buffer, "b"}}}),
		// the standard library is no package, nor torch.compile's code
		"stdlib":   namedProfile(namedStack{50, 0, [][2]string{{user, "main"}, {"/usr/lib/python3.11/json/encoder.py", "encode"}}}),
		"inductor": namedProfile(namedStack{50, 0, [][2]string{{user, "main"}, {"/tmp/torchinductor_me/ab/cab12.py", "call"}}}),
	} {
		if c := insideOf(p, under(p), all); c != nil {
			t.Errorf("%s: %+v", name, c)
		}
	}
}

func TestOneSampleInputs(t *testing.T) {
	in := func(first, last [][]int64) *rundir.StepInputs {
		return &rundir.StepInputs{First: &rundir.StepInput{Step: 1, Shapes: first}, Last: &rundir.StepInput{Step: 50, Shapes: last}}
	}
	// a generation loop: the prompt, then one token, of one sequence
	if got := OneSampleInputs(in([][]int64{{1, 32}, {1, 32}}, [][]int64{{1, 1}, {1, 1}})); got == nil || got.Step != 50 {
		t.Errorf("one sequence: %+v", got)
	}
	for name, c := range map[string]*rundir.StepInputs{
		"a batch":             in([][]int64{{8, 32}}, [][]int64{{8, 32}}),
		"one argument of 8":   in([][]int64{{1, 32}, {8, 4}}, [][]int64{{1, 32}, {8, 4}}),
		"a batch at first":    in([][]int64{{8, 32}}, [][]int64{{1, 32}}),
		"a scalar":            in([][]int64{{}}, [][]int64{{}}),
		"no tensor arguments": in(nil, nil),
		"no shapes":           nil,
	} {
		if got := OneSampleInputs(c); got != nil {
			t.Errorf("%s: %+v", name, got)
		}
	}
}
