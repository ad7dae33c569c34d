package runevidence

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

// argChecks counts the main thread's samples inside torch.distributions'
// Distribution.__init__ and _validate_sample (Python 3.11's qualified
// names and older Pythons' bare ones) and names the program's line above
// them; sampling a distribution, another file named distribution.py, a
// worker thread and an import stay out.
func TestArgChecks(t *testing.T) {
	const (
		dists = sitePkgs + "/torch/distributions/"
		prog  = "/home/u/rollout.py"
	)
	type fr struct {
		file, fn string
		line     int
	}
	user := fr{prog, "collect", 40}
	p := &pyprofile.Profile{Profiler: "sample", Threads: []pyprofile.Thread{{Role: "main"}, {Role: "other"}}}
	add := func(count, thread int, frames ...fr) {
		st := pyprofile.Stack{Thread: thread, Count: count}
		for _, f := range frames {
			p.Frames = append(p.Frames, pyprofile.Frame{File: f.file, Func: f.fn, Line: f.line})
			st.Frames = append(st.Frames, len(p.Frames)-1)
		}
		p.Stacks = append(p.Stacks, st)
	}
	add(10, 0, user, fr{dists + "categorical.py", "Categorical.__init__", 73}, fr{dists + "distribution.py", "Distribution.__init__", 70}, fr{dists + "constraints.py", "_Simplex.check", 500})
	add(6, 0, fr{prog, "update", 55}, fr{dists + "categorical.py", "Categorical.log_prob", 150}, fr{dists + "distribution.py", "Distribution._validate_sample", 310})
	add(4, 0, fr{prog, "update", 55}, fr{dists + "normal.py", "__init__", 60}, fr{dists + "distribution.py", "__init__", 70}) // Python 3.10
	add(30, 0, user, fr{dists + "categorical.py", "Categorical.sample", 148})                                                 // drawing a sample: not a check
	add(20, 0, fr{prog, "train", 80}, fr{"/home/u/mylib/distribution.py", "Distribution.__init__", 3})                        // not torch's
	add(30, 0, fr{prog, "train", 81})
	add(50, 1, user, fr{dists + "distribution.py", "Distribution.__init__", 70}) // another thread
	share, lines := argChecks(p)
	if want := 20.0 / 100; share != want {
		t.Errorf("share %v, want %v", share, want)
	}
	if len(lines) != 2 || lines[0].Line != 40 || lines[0].Pct != 10 || lines[1].Line != 55 || lines[1].Pct != 10 {
		t.Errorf("lines %+v, want rollout.py:40 and :55 at 10%% each", lines)
	}
	if share, lines := argChecks(&pyprofile.Profile{Threads: []pyprofile.Thread{{Role: "main"}}}); share != 0 || lines != nil {
		t.Errorf("empty profile: %v %v", share, lines)
	}
}
