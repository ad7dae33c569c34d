package try

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// pytorch/tutorials' neural style transfer, as it is and under bf16
// autocast (run --verify): each L-BFGS step evaluated the model 20 times
// as it is, 2-6 times changed. The steps ran 11x faster, a call of the
// model 1.78x, against 1.75x predicted: the call is what compares.
func TestCompareStepsOfDifferentWork(t *testing.T) {
	dir := filepath.Join(testutil.RepoRoot(), "testdata", "rundir")
	ios, _, _, _ := iostreams.Test()
	p, _, err := compare(ios, filepath.Join(dir, "cpu_neural_style"), filepath.Join(dir, "cpu_neural_style-tried-1"), 0)
	if err != nil {
		t.Fatal(err)
	}
	w := p.Work
	if w == nil {
		t.Fatalf("steps of 20 model calls against 2-6 compared as the same work: %.2fx a step", p.MeanSpeedup)
	}
	if w.Unit != "calls of the model on one sample" || w.BasePerStep != 20 || w.NewPerStep > 6 {
		t.Errorf("work: %+v", *w)
	}
	if p.MeanSpeedup < 5 || w.Speedup < 1.5 || w.Speedup > 2.1 || !w.Significant {
		t.Errorf("a step %.2fx faster, a call %.2fx (%.2fx to %.2fx): want the step far faster than the call, the call ~1.8x", p.MeanSpeedup, w.Speedup, w.Low, w.High)
	}
	var b bytes.Buffer
	Write(&b, &Result{Pairs: []Pair{*p}})
	if !strings.Contains(b.String(), "the steps did different work: 20.0 calls of the model on one sample a step as it is") {
		t.Errorf("not said:\n%s", b.String())
	}
}
