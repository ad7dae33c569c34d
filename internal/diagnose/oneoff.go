package diagnose

import (
	"fmt"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/units"
)

var _ = addRule(Rule{
	ID: "run.one-off", Class: Host, Factor: 0,
	When:   "run evidence: the steps over twice the run's median step (after start-up, outside the window, not run.periodic's; less their waits for a CPU and a DataLoader) above the median, and the time from the last step's end to the program's end, >= 1 s and >= all the steps' time at the median step, the program not ended by bottleneck after its window; once per run: no per-step saving, never the verdict",
	Change: "work the steps do not do outweighs them (an evaluation, sampling or a save done once, or every few epochs): make it cheaper, run it less often, or in another process on a saved checkpoint",
	detect: (*state).oneOffFinding,
	Fires:  "TestOneOffFinding", Silent: "TestOneOffFinding",
})

// minOneOffS: one-off work worth a finding (run.startup's floor);
// minOneOffLinePct: the share of the run's samples from which a line is
// named as where it goes (after the first).
const minOneOffS, minOneOffLinePct = minStartupS, 10

// oneOffFinding: the run spent more outside its usual steps, once it had
// begun them, than in all of them at their median: a 65 s step and 58 s
// after the loop of sample images generated with 1000 denoising steps,
// against 48 steps of 110 ms, and the report spoke only of the steps'
// convolutions (diffusers' train_unconditional.py). Like run.startup, a
// short profiling run weighs it more than the full job will, unless the
// work recurs, so it is not ranked by a per-step saving and never the
// verdict; the whole run's main-thread samples say where it goes.
func (s *state) oneOffFinding() {
	r := s.in.Run
	if r == nil || r.OneOff == nil || r.StoppedAfterProfile {
		return
	}
	o := r.OneOff
	total := o.TotalS()
	if total < minOneOffS || total < o.UsualS {
		return
	}
	var parts []string
	if n := len(o.SlowSteps); n > 0 {
		parts = append(parts, fmt.Sprintf("%s above the median in %s", units.Seconds(o.SlowS), units.Things(n, "slow step")))
	}
	if o.AfterS > 0 {
		parts = append(parts, fmt.Sprintf("%s after the last step", units.Seconds(o.AfterS)))
	}
	title := fmt.Sprintf("Work outside the usual steps takes %s of the run (%s), more than all its steps at their median (%s)",
		units.Seconds(total), strings.Join(parts, ", "), units.Seconds(o.UsualS))
	ms := []Evidence{{"slow steps' time above the median", o.SlowS * 1e6, "us", "evidence"},
		{"time after the last step", o.AfterS * 1e6, "us", "evidence"},
		{"the steps at the median step", o.UsualS * 1e6, "us", "evidence"}}
	var where []Location
	change := rule("run.one-off").Change
	if py := s.py; py != nil && len(py.RunHot) > 0 {
		// the lines that hold it: the steps' own hold a few percent
		n := 1
		for n < min(3, len(py.RunHot)) && py.RunHot[n].Pct >= minOneOffLinePct {
			n++
		}
		var names string
		where, names = namedLines(py.RunHot, n, "main-thread samples, whole run")
		change = fmt.Sprintf("the run's main-thread samples go to %s: work the steps do not do outweighs them in this run (an evaluation, sampling or a save done once, or every few epochs): make it cheaper (fewer items or iterations of it), run it less often, or in another process on a saved checkpoint; a longer run spreads it over more steps only where it does not recur", names)
	}
	f := s.finding("run.one-off", title, 0, ms, where, change)
	f.OnceS = total
	s.emit(f)
}
