package diagnose

import (
	"math"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// input.padding fires where padding each batch to its own longest would
// leave out MinPaddingCut of the positions a model computes, its time at
// stake the step's computation times that share; it stays silent without
// a mask, on batches all tokens, and where the longest nearly fills the
// length (padding there is the sequences' own spread).
func TestPaddingFinding(t *testing.T) {
	for _, c := range []struct {
		name    string
		padding *rundir.Padding
		atStake float64 // µs; 0: silent
	}{
		// 4 calls of 16 x 256, half of the positions real, the longest 128
		{"fixed length", &rundir.Padding{Calls: 4, Tokens: 4 * 16 * 256, Real: 4 * 16 * 64, Longest: 4 * 16 * 128}, 0.6 * 0.5 * 100e3},
		{"no mask", nil, 0},
		{"all tokens", &rundir.Padding{Calls: 4, Tokens: 4096, Real: 4096, Longest: 4096}, 0},
		// the longest at 90% of the length: its padding is the spread of
		// the sequences' lengths, which padding to it keeps
		{"padded to the longest", &rundir.Padding{Calls: 4, Tokens: 4096, Real: 2048, Longest: 3686}, 0},
	} {
		run := &runevidence.RunEvidence{Models: []rundir.ModelCall{{Class: "BertForSequenceClassification", File: "/home/u/train.py", Line: 30, Func: "main", Calls: 4, Padding: c.padding}}}
		d := Compute(cpuTrace(run))
		f := findingOf(d, "input.padding")
		if (f != nil) != (c.atStake > 0) {
			t.Errorf("%s: finding %+v", c.name, f)
			continue
		}
		if f == nil {
			continue
		}
		if math.Abs(f.AtStakeUs-c.atStake) > 1 || math.Abs(f.SavingUs-0.8*c.atStake) > 1 || f.Class != CPUCompute ||
			len(f.Where) == 0 || f.Where[0].Line != 30 || !strings.Contains(f.Title, "75% of the positions BertForSequenceClassification computes are padding") ||
			!strings.Contains(f.Change, "would leave out 50% of them") || !strings.Contains(f.Change, "DataCollatorWithPadding") {
			t.Errorf("%s: %+v", c.name, f)
		}
	}
}
