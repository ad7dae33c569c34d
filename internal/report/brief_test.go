package report

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
)

func TestWrap(t *testing.T) {
	long := "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align4>(Params)"
	in := " 1. Device kernels take 61% of the step and more words here\n    change: one two three\n    where: kernel " + long + " [8%]\n"
	got := Wrap(in, 30)
	want := " 1. Device kernels take 61% of\n" +
		"       the step and more words\n" +
		"       here\n" +
		"    change: one two three\n" +
		"    where: kernel void cutlas…\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// a word wider than the line loses its middle, not its end
	if got := Wrap(long, 30); !strings.Contains(got, "…") || !strings.HasSuffix(got, "(Params)") {
		t.Errorf("long word: %q", got)
	}
	for _, line := range strings.Split(Wrap(long, 30), "\n") {
		if n := len([]rune(line)); n > 30 {
			t.Errorf("%d columns: %q", n, line)
		}
	}
}

// The brief leaves a steady window's notes to the full report, but says
// in one line that its times are inflated; the full report lists them all.
func TestBriefWindowNotes(t *testing.T) {
	cpu, outlier := "the main thread waited for a CPU 40% of the window", "outlier step(s) 7 ..."
	short := "the main thread waited for a CPU 40% of the window: its times are inflated"
	for _, c := range []struct {
		inflated, brief bool
		want, not       []string
	}{
		{false, true, nil, []string{cpu, outlier}},
		{true, true, []string{short}, []string{outlier}},
		{true, false, []string{cpu, outlier}, nil},
	} {
		n := &diagnose.WindowNote{SteadyState: true, UsedSteps: []string{"8", "9"}, Notes: []string{outlier}}
		if c.inflated {
			n.CPUWaitPct, n.Notes = 40, []string{cpu + " (30% over the run): ...", outlier}
		}
		var b strings.Builder
		writeWindow(&b, n, c.brief)
		for _, s := range c.want {
			if !strings.Contains(b.String(), s) {
				t.Errorf("inflated %v, brief %v: lacks %q:\n%s", c.inflated, c.brief, s, b.String())
			}
		}
		for _, s := range c.not {
			if strings.Contains(b.String(), s) {
				t.Errorf("inflated %v, brief %v: shows %q:\n%s", c.inflated, c.brief, s, b.String())
			}
		}
	}
	// a window that is not steady keeps its other notes in the brief, and
	// the CPU wait still takes one line
	n := &diagnose.WindowNote{UsedSteps: []string{"8"}, CPUWaitPct: 40, Notes: []string{cpu + " (5% over the run): ...", outlier}}
	var b strings.Builder
	writeWindow(&b, n, true)
	if got := b.String(); !strings.Contains(got, short) || !strings.Contains(got, outlier) || strings.Contains(got, "5% over the run") {
		t.Errorf("unsteady window's brief:\n%s", got)
	}
}

// A long window's step lists stay one short line: the used steps as a
// count and range once they break into many pieces, the left-out ones by
// kind of reason past eight; a short window lists every step.
func TestWindowStepLists(t *testing.T) {
	steps := func(from, to int, skip func(int) bool) (used []string, out []diagnose.ExcludedStep) {
		for i := from; i <= to; i++ {
			if skip(i) {
				out = append(out, diagnose.ExcludedStep{Step: strconv.Itoa(i), Reason: "outlier: 4.00 ms against a median of 1.80 ms"})
			} else {
				used = append(used, strconv.Itoa(i))
			}
		}
		return used, out
	}
	for _, c := range []struct {
		name      string
		used      []string
		out       []diagnose.ExcludedStep
		want, not string
	}{
		{"short", []string{"8", "9", "11", "12"}, []diagnose.ExcludedStep{{Step: "10", Reason: "outlier: 40 ms against a median of 10 ms"}},
			"steps 8, 9, 11, 12 used; left out: 10 (outlier: 40 ms against a median of 10 ms)\n", ""},
		{"long", nil, nil, "; 92 steps of 8-129 used; left out: 30 steps (outlier: 11, 15, 19 and 27 more)\n", "against"},
	} {
		if c.name == "long" {
			c.used, c.out = steps(8, 129, func(i int) bool { return i%4 == 3 && i > 10 })
		}
		var b strings.Builder
		writeWindow(&b, &diagnose.WindowNote{SteadyState: true, UsedSteps: c.used, Excluded: c.out}, true)
		if got := b.String(); !strings.HasSuffix(got, c.want) || c.not != "" && strings.Contains(got, c.not) {
			t.Errorf("%s: %q, want it to end %q", c.name, got, c.want)
		}
	}
}
