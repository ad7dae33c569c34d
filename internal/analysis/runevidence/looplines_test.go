package runevidence

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
)

// The slow steps' samples are named at the training loop's line they pass
// through: a script's loop at its module level, a main()'s loop one frame
// in (the frame every step's sample shares is above the loop), library
// frames skipped; samples from before the first step do not move the
// loop's depth.
func TestStepLoopFrames(t *testing.T) {
	const lib = "/usr/lib/python3/site-packages/torch/nn/modules/module.py"
	type frame = [2]any
	fr := func(file string, line int) frame { return frame{file, line} }
	type stack = struct {
		frames      []frame
		count, slow int
		startup     int
	}
	build := func(stacks []stack) *pyprofile.Profile {
		p := &pyprofile.Profile{Profiler: "sample", Threads: []pyprofile.Thread{{Role: "main"}}}
		for _, s := range stacks {
			st := pyprofile.Stack{Count: s.count, SlowCount: s.slow, StartupCount: s.startup}
			for _, f := range s.frames {
				p.Frames = append(p.Frames, pyprofile.Frame{File: f[0].(string), Line: f[1].(int), Func: "f"})
				st.Frames = append(st.Frames, len(p.Frames)-1)
			}
			p.Stacks = append(p.Stacks, st)
		}
		return p
	}
	slow := func(st *pyprofile.Stack) int { return st.SlowCount }
	// a script: the loop is the module's own lines
	script := build([]stack{
		{[]frame{fr("t.py", 118), fr(lib, 1)}, 500, 0, 0},                     // forward
		{[]frame{fr("t.py", 120)}, 300, 0, 0},                                 // backward
		{[]frame{fr("t.py", 108), fr("t.py", 52), fr("t.py", 42)}, 90, 90, 0}, // estimate_loss > get_batch
		{[]frame{fr("t.py", 108), fr("t.py", 53), fr(lib, 1)}, 30, 30, 0},     // estimate_loss > model
		{[]frame{fr("t.py", 31)}, 400, 0, 400},                                // data built before the steps
	})
	if got, _ := stepLoopFrames(script, slow); got[lineKey{"t.py", 108}] != 120 || len(got) != 1 {
		t.Errorf("script: %v", got)
	}
	// main() called from the module: the loop is one frame in
	withMain := build([]stack{
		{[]frame{fr("m.py", 200), fr("m.py", 80), fr(lib, 1)}, 500, 0, 0},
		{[]frame{fr("m.py", 200), fr("m.py", 82)}, 300, 0, 0},
		{[]frame{fr("m.py", 200), fr("m.py", 77), fr("m.py", 30)}, 60, 60, 0},
		{[]frame{fr("m.py", 201)}, 5, 0, 0}, // a print after main(): under 5%
	})
	if got, _ := stepLoopFrames(withMain, slow); got[lineKey{"m.py", 77}] != 60 || len(got) != 1 {
		t.Errorf("main: %v", got)
	}
	// no slow samples: nothing
	if got, _ := stepLoopFrames(build([]stack{{[]frame{fr("t.py", 1)}, 10, 0, 0}}), slow); len(got) != 0 {
		t.Errorf("no slow steps: %v", got)
	}
}
