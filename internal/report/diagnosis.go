package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/textsafe"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// TopFindings is how many findings the text report shows; --json has all.
const TopFindings = 3

// WriteDiagnosis renders a trace's verdict and its top findings in plain
// language, within one terminal screen.
func WriteDiagnosis(w io.Writer, d *diagnose.Diagnosis) error {
	writeDiagnosis(w, d, false)
	return nil
}

// writeDiagnosis renders the verdict; brief leaves out what the full
// report adds (unmeasurable classes, measurements, all but the first
// location of each finding).
func writeDiagnosis(w io.Writer, d *diagnose.Diagnosis, brief bool) {
	if d == nil {
		return
	}
	writeVerdict(w, "Verdict", d.Verdict)
	writeWindow(w, d.Window, brief)
	if d.Verdict.Primary != diagnose.Undetermined {
		fmt.Fprintf(w, "  %s\n", d.Verdict.Why)
		var sec []string
		for _, c := range d.Verdict.Secondary {
			sec = append(sec, classShare(d, c))
		}
		if len(sec) > 0 {
			fmt.Fprintf(w, "  also: %s\n", strings.Join(sec, ", "))
		}
	}
	var um []string
	for _, u := range d.Unknown {
		if u.Class == diagnose.Straggler || u.Class == diagnose.Undetermined {
			continue
		}
		um = append(um, fmt.Sprintf("%s (%s)", u.Class, u.Why))
	}
	if len(um) > 0 && !brief {
		fmt.Fprintf(w, "  not measurable from this input: %s\n", strings.Join(um, "; "))
	}
	step := "mean step " + units.Duration(d.StepUs)
	if d.FindingsStepUs > 0 {
		step = fmt.Sprintf("mean step ~%s without the profiler's own cost, %s recorded", units.Duration(d.FindingsStepUs), units.Duration(d.StepUs))
	}
	writeFindings(w, d.Findings, step, brief)
}

// WriteRunDiagnosis renders the verdict across ranks.
func WriteRunDiagnosis(w io.Writer, d *diagnose.RunDiagnosis) error {
	writeRunDiagnosis(w, d, false)
	return nil
}

func writeRunDiagnosis(w io.Writer, d *diagnose.RunDiagnosis, brief bool) {
	if d == nil {
		return
	}
	writeVerdict(w, fmt.Sprintf("Verdict across %d ranks", len(d.PerRank)), d.Verdict)
	fmt.Fprintf(w, "  %s\n", d.Verdict.Why)
	for _, r := range d.PerRank {
		fmt.Fprintf(w, "  rank %d: %s %.0f%% (%s), step %s, communication %.0f%%\n", r.Rank, r.Primary, r.SharePct, r.Confidence, units.Duration(r.StepUs), r.CommPct)
	}
	var step float64
	for _, r := range d.PerRank {
		step = max(step, r.StepUs)
	}
	writeFindings(w, d.Findings, "mean step "+units.Duration(step), brief)
}

func writeVerdict(w io.Writer, label string, v diagnose.Verdict) {
	if v.Primary == diagnose.Undetermined {
		if v.Detail == "" {
			fmt.Fprintf(w, "%s: not measurable from this input — %s\n", label, textsafe.String(v.Why))
			return
		}
		fmt.Fprintf(w, "%s: UNDETERMINED — %s\n  %s\n", label, v.Detail, textsafe.String(v.Why))
		return
	}
	share := ""
	if v.SharePct > 0 {
		share = fmt.Sprintf(", %.0f%% of the step", v.SharePct)
	}
	fmt.Fprintf(w, "%s: %s (%s%s; confidence %s)\n", label, strings.ToUpper(string(v.Primary)), v.Detail, share, v.Confidence)
}

// writeWindow states which steps the verdict uses and whether the window
// is steady state, with how to re-profile when it is not.
func writeWindow(w io.Writer, n *diagnose.WindowNote, brief bool) {
	if n == nil {
		return
	}
	used := "no step used"
	switch {
	case n.WholeTrace && len(n.UsedSteps) > 0:
		used = "the whole trace used (no ProfilerStep marks)"
	case n.WholeTrace:
		used = "the whole trace (no ProfilerStep marks) left out: " + n.Excluded[0].Reason
	case len(n.UsedSteps) == 1:
		used = "step " + n.UsedSteps[0] + " used"
	case len(n.UsedSteps) > 0 && strings.Count(stepList(n.UsedSteps), ",") >= maxListed:
		// a long window with steps left out here and there
		used = fmt.Sprintf("%d steps of %s-%s used", len(n.UsedSteps), n.UsedSteps[0], n.UsedSteps[len(n.UsedSteps)-1])
	case len(n.UsedSteps) > 0:
		used = "steps " + stepList(n.UsedSteps) + " used"
	}
	if n.StepMarks != "" {
		used += " (no ProfilerStep marks: a step is an iteration from one " + n.StepMarks + " to the next)"
	}
	if len(n.Excluded) > 0 && !n.WholeTrace {
		used += "; left out: " + excludedList(n.Excluded)
	}
	state := "steady state"
	if !n.SteadyState {
		state = "NOT steady state"
	}
	fmt.Fprintf(w, "  window: %s; %s\n", state, textsafe.String(used))
	notes := n.Notes
	if brief {
		// the brief says in one line that the times are inflated (the
		// full note, first, says who held the CPUs); of a steady window
		// it says only what was used (the notes explain what was left out)
		if n.CPUWaitPct > 0 {
			fmt.Fprintf(w, "    - the main thread waited for a CPU %.0f%% of the window: its times are inflated by up to that much\n", n.CPUWaitPct)
			notes = notes[1:]
		}
		if n.SteadyState {
			return
		}
	}
	for _, note := range notes {
		fmt.Fprintf(w, "    - %s\n", textsafe.String(note))
	}
	if n.Reprofile != "" {
		fmt.Fprintf(w, "    %s\n", n.Reprofile)
	}
}

// maxListed: lists of steps longer than this are cut (the notes and the
// JSON have them whole).
const maxListed = 8

// excludedList names the left-out steps with their reasons, or, when
// there are more than maxListed, how many were left out for each kind of
// reason with the first steps of each.
func excludedList(ex []diagnose.ExcludedStep) string {
	var parts []string
	if len(ex) <= maxListed {
		for _, e := range ex {
			parts = append(parts, e.Step+" ("+e.Reason+")")
		}
		return strings.Join(parts, ", ")
	}
	var kinds []string
	byKind := map[string][]string{}
	for _, e := range ex {
		k, _, _ := strings.Cut(e.Reason, ":")
		if _, ok := byKind[k]; !ok {
			kinds = append(kinds, k)
		}
		byKind[k] = append(byKind[k], e.Step)
	}
	for _, k := range kinds {
		steps := byKind[k]
		list := strings.Join(steps[:min(3, len(steps))], ", ")
		if len(steps) > 3 {
			list += fmt.Sprintf(" and %d more", len(steps)-3)
		}
		parts = append(parts, fmt.Sprintf("%d steps (%s: %s)", len(steps), k, list))
	}
	return strings.Join(parts, ", ")
}

// stepList writes step numbers compactly: consecutive runs as N-M.
func stepList(steps []string) string {
	var parts []string
	for i := 0; i < len(steps); {
		j := i
		for j+1 < len(steps) && next(steps[j], steps[j+1]) {
			j++
		}
		if j > i+1 {
			parts = append(parts, steps[i]+"-"+steps[j])
		} else {
			parts = append(parts, steps[i:j+1]...)
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

func next(a, b string) bool {
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	return err1 == nil && err2 == nil && y == x+1
}

func classShare(d *diagnose.Diagnosis, c diagnose.Class) string {
	for _, cs := range d.Classes {
		if cs.Class == c && cs.SharePct > 0 {
			return fmt.Sprintf("%s %.0f%%", c, cs.SharePct)
		}
	}
	return string(c)
}

// writeFindings lists fs; step names the step their percentages are of.
func writeFindings(w io.Writer, fs []diagnose.Finding, step string, brief bool) {
	maxMeasured, maxWhere := 3, 3
	if brief {
		maxMeasured, maxWhere = 0, 1
	}
	if len(fs) == 0 {
		fmt.Fprintln(w, "  no finding above the thresholds (docs/diagnosis.md)")
		return
	}
	n := min(len(fs), TopFindings)
	fmt.Fprintf(w, "Top findings (%d of %d, by time they could save; %s):\n", n, len(fs), step)
	for i, f := range fs[:n] {
		fmt.Fprintf(w, " %d. %s\n", i+1, f.Title)
		switch {
		case f.SavingUs > 0:
			how := ""
			if f.SavingMethod == "replay" {
				how = ", replayed"
			}
			if f.SavingUs > f.AtStakeUs {
				fmt.Fprintf(w, "    could save ~%s per step (%.0f%%%s: more than the %s it has to itself, as it also holds up work beside it); confidence %s\n", units.Duration(f.SavingUs), f.SavingPct, how, units.Duration(f.AtStakeUs), f.Confidence)
				break
			}
			fmt.Fprintf(w, "    could save ~%s per step (%.0f%%%s) of %s at stake; confidence %s\n", units.Duration(f.SavingUs), f.SavingPct, how, units.Duration(f.AtStakeUs), f.Confidence)
		case f.SavingMethod == "replay" && f.AtStakeUs > 0:
			fmt.Fprintf(w, "    %s per step (%.0f%%) at stake, but replayed the change alone saves nothing: other work hides it (the verdict says what is on the path); confidence %s\n", units.Duration(f.AtStakeUs), f.AtStakePct, f.Confidence)
		case f.OnceS > 0:
			fmt.Fprintf(w, "    %s once in this run, not per step; confidence %s\n", units.Seconds(f.OnceS), f.Confidence)
		case f.AtStakeUs > 0:
			fmt.Fprintf(w, "    %s per step (%.0f%%) at stake, saving not estimated; confidence %s\n", units.Duration(f.AtStakeUs), f.AtStakePct, f.Confidence)
		default:
			fmt.Fprintf(w, "    a risk rather than lost time; confidence %s\n", f.Confidence)
		}
		var ms []string
		for j, e := range f.Measured {
			if j == maxMeasured {
				break
			}
			ms = append(ms, evidenceText(e))
		}
		if len(ms) > 0 {
			fmt.Fprintf(w, "    measured: %s\n", strings.Join(ms, "; "))
		}
		var where []string
		for j, l := range f.Where {
			if j == maxWhere {
				break
			}
			where = append(where, locationText(l))
		}
		if len(where) > 0 {
			fmt.Fprintf(w, "    where: %s\n", strings.Join(where, "; "))
		}
		fmt.Fprintf(w, "    change: %s\n", f.Change)
		// the brief keeps one screen: the first finding's next change, and
		// how many more the full report has
		alts := f.Alternatives
		if brief {
			alts = alts[:min(len(alts), 1-min(i, 1))]
		}
		for _, a := range alts {
			fmt.Fprintf(w, "    %s: %s\n", a.Kind, a.Change)
		}
		if n := len(f.Alternatives) - len(alts); n > 0 && i == 0 {
			fmt.Fprintf(w, "    (%s in the full report)\n", units.Things(n, "other change"))
		}
	}
}

func evidenceText(e diagnose.Evidence) string {
	switch e.Unit {
	case "us":
		return fmt.Sprintf("%s %s", e.What, units.Duration(e.Value))
	case "":
		if e.Value == 0 {
			return e.What
		}
		return fmt.Sprintf("%s %.3g", e.What, e.Value)
	case "%":
		return fmt.Sprintf("%s %.1f%%", e.What, e.Value)
	}
	return fmt.Sprintf("%s %.1f %s", e.What, e.Value, e.Unit)
}

func locationText(l diagnose.Location) string {
	var s string
	switch {
	case l.File != "":
		s = fmt.Sprintf("%s:%d", shortFile(l.File), l.Line)
		if l.Name != "" {
			s += " (" + l.Name + ")"
		}
	default:
		s = l.Kind + " " + textsafe.String(truncate(l.Name, 70))
	}
	var extra []string
	if l.SharePct > 0 {
		extra = append(extra, fmt.Sprintf("%.0f%%", l.SharePct))
	}
	if l.Note != "" && l.Kind != "python" {
		extra = append(extra, l.Note)
	}
	if l.Inside != "" {
		extra = append(extra, textsafe.String(l.Inside))
	}
	if len(extra) > 0 {
		s += " [" + strings.Join(extra, ", ") + "]"
	}
	return s
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// shortFile shows a path relative to the working directory when it is
// inside it.
func shortFile(f string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, f); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return f
}
