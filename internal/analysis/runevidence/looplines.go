package runevidence

import "github.com/bottleneck-dev/bottleneck/internal/pyprofile"

// loopShare: a program frame that this share of the steps' main-thread
// samples pass through is above the training loop (the script's
// main() call, Lightning's trainer.fit() line); the first depth at which
// no frame holds it is the loop's body.
const loopShare = 0.95

// stepLoopFrames attributes the main thread's samples that count gives
// (the slow steps' ones) to the frame of the training loop's body they
// pass through: the loop's line that calls an evaluation every N steps
// (nanoGPT-style `losses = estimate_loss()`), where their innermost
// program lines are deep inside it (its get_batch). The loop's depth is
// found from the steps' samples (all samples less those before the first
// step ended, imports left out), counted in program frames, outermost
// first: the first depth at which no single line holds loopShare of
// them. Samples whose stack ends above that depth are left out; frames
// gives each line's frame.
func stepLoopFrames(p *pyprofile.Profile, count func(*pyprofile.Stack) int) (lines map[lineKey]int, frames map[lineKey]pyprofile.Frame) {
	type sample struct {
		frames []lineKey // program frames, outermost first
		steps  int       // samples in steps
		counts int       // count's samples
	}
	frames = map[lineKey]pyprofile.Frame{}
	var all []sample
	for si := range p.Stacks {
		st := &p.Stacks[si]
		if p.Threads[st.Thread].Role != "main" || len(st.Frames) == 0 || p.Importing(st.Frames) {
			continue
		}
		var own []lineKey
		for _, fi := range st.Frames {
			if f := p.Frames[fi]; !pyprofile.IsLibraryFile(f.File) {
				k := lineKey{f.File, f.Line}
				own, frames[k] = append(own, k), f
			}
		}
		if len(own) > 0 {
			all = append(all, sample{own, max(0, st.Count-st.StartupCount), count(st)})
		}
	}
	depth, alive := 0, all
	for ; ; depth++ {
		tally, total := map[lineKey]int{}, 0
		for _, s := range alive {
			total += s.steps
			if len(s.frames) > depth {
				tally[s.frames[depth]] += s.steps
			}
		}
		var top lineKey
		n := 0
		for k, c := range tally {
			if c > n {
				top, n = k, c
			}
		}
		if total == 0 || float64(n) < loopShare*float64(total) {
			break
		}
		var next []sample
		for _, s := range alive {
			if len(s.frames) > depth && s.frames[depth] == top {
				next = append(next, s)
			}
		}
		alive = next
	}
	lines = map[lineKey]int{}
	for _, s := range all {
		if s.counts > 0 && len(s.frames) > depth {
			lines[s.frames[depth]] += s.counts
		}
	}
	return lines, frames
}
