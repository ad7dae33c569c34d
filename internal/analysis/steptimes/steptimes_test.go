package steptimes

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func series(durs ...float64) []Step {
	out := make([]Step, len(durs))
	t := 0.0
	for i, d := range durs {
		out[i] = Step{N: i + 1, StartS: t, DurS: d}
		t += d
	}
	return out
}

func TestWarmupOutliersDrift(t *testing.T) {
	steps := series(3, 0.4, 0.1, 0.1, 0.1, 0.1, 0.3, 0.1, 0.1, 0.1, 0.1, 0.1)
	steps[4].InWindow, steps[5].InWindow = true, true
	s := Summarize(steps)
	if !slices.Equal(s.Warmup, []int{1, 2}) || !slices.Equal(s.Outliers, []int{7}) {
		t.Errorf("warm-up %v outliers %v, want [1 2] [7]", s.Warmup, s.Outliers)
	}
	if s.DriftPct != 0 {
		t.Errorf("drift %v on a flat series", s.DriftPct)
	}
	if utf8.RuneCountInString(s.Spark) != 12 || s.Window != "    ^^" {
		t.Errorf("spark %q window %q", s.Spark, s.Window)
	}
	notes := strings.Join(s.Notes(), "\n")
	for _, want := range []string{"warm-up: steps 1-2 (3.40 s", "1 outlier step (over 2x the median): 7"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
}

func TestDrift(t *testing.T) {
	var durs []float64
	for i := range 40 {
		durs = append(durs, 0.1+0.002*float64(i)) // 0.10 s to 0.18 s
	}
	s := Summarize(series(durs...))
	if s.DriftPct < 50 || len(s.Warmup) != 0 || len(s.Outliers) != 0 {
		t.Errorf("drift %v warm-up %v outliers %v", s.DriftPct, s.Warmup, s.Outliers)
	}
	if !strings.Contains(strings.Join(s.Notes(), ""), "longer than the first quarter") {
		t.Errorf("notes %v", s.Notes())
	}
}

// A steady series with ordinary noise has nothing to say.
func TestSteadySilent(t *testing.T) {
	var durs []float64
	for i := range 200 {
		durs = append(durs, 0.1+0.01*float64(i%5)) // ±20% jitter
	}
	s := Summarize(series(durs...))
	if notes := s.Notes(); len(notes) != 0 {
		t.Errorf("steady series: %v", notes)
	}
	if n := utf8.RuneCountInString(s.Spark); n > Columns || s.StepsPerColumn != 4 {
		t.Errorf("%d columns, %d steps per column", n, s.StepsPerColumn)
	}
	if Summarize(nil) != nil {
		t.Error("no steps: want nil")
	}
}
