package diagnose

import (
	"fmt"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// shortRunS: a run whose steps take less than this in all, the program
// having ended by itself, is mostly its start-up, and the verdict says
// so (pytorch/examples' regression: 259 steps in 46 ms of a 3.7 s run,
// told to torch.compile its Linear(4, 1)). compileFloorS: the least
// torch.compile was measured to cost before a first step, a single
// nn.Linear with its loss and backward (4.5 s on the 2-CPU development
// machine, torch 2.15, its steps then 2.7x slower: guards cost more than
// the ops); steps taking less in all cannot pay it back.
const shortRunS, compileFloorS = 1.0, 4.0

// runStepsS is the time all the run's steps took, when the program ran
// them all: not when bottleneck ended it after its window.
func (s *state) runStepsS() (float64, bool) {
	r := s.in.Run
	if r == nil || r.StepsS <= 0 || r.StoppedAfterProfile {
		return 0, false
	}
	return r.StepsS, true
}

// shortRun: the run's steps took less than shortRunS in all, and less
// than the time before the first of them.
func (s *state) shortRun() (steps, before float64, ok bool) {
	if steps, ok = s.runStepsS(); !ok {
		return 0, 0, false
	}
	before = s.in.Run.FirstStepS
	return steps, before, steps < shortRunS && before > steps
}

// compileTooLong says why torch.compile cannot pay for itself in this
// run, whose steps take less in all than a compile ("" when they take
// longer, or the run is not known whole).
func (s *state) compileTooLong() string {
	steps, ok := s.runStepsS()
	if !ok || steps >= compileFloorS {
		return ""
	}
	return fmt.Sprintf("not in a run this short: its compile takes seconds before the first step, more than all %s of this run's steps", units.Seconds(steps))
}

// noCompileInShortRun adds compileTooLong's reason to every change that
// proposes torch.compile and does not already say it, whichever rule
// wrote it (the recompile finding's are about a compile the program
// already pays).
func (s *state) noCompileInShortRun() {
	why := s.compileTooLong()
	if why == "" {
		return
	}
	note := func(change string) string {
		if !strings.Contains(change, "torch.compile") || strings.Contains(change, "in a run this short") {
			return change
		}
		return change + " (torch.compile " + why + ")"
	}
	for i := range s.d.Findings {
		f := &s.d.Findings[i]
		if f.Class == Recompile {
			continue
		}
		f.Change = note(f.Change)
		for j := range f.Alternatives {
			f.Alternatives[j].Change = note(f.Alternatives[j].Change)
		}
	}
}
