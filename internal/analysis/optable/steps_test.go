package optable

import (
	"math"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// A table restricted to steps says which steps it covers (the diagnosis
// divides its calls by them), and its calls are those of the steps kept.
func TestStepRange(t *testing.T) {
	tr := tracetest.Load(t, tracetest.Golden["test"])
	if len(tr.Steps) < 3 {
		t.Fatalf("want a trace with 3 or more steps, have %d", len(tr.Steps))
	}
	all := Ops(tr, Options{})
	if all.StepsFirst != 0 || all.StepsLast != 0 {
		t.Errorf("unrestricted table: steps %d-%d, want none", all.StepsFirst, all.StepsLast)
	}
	first, last := tr.Steps[1].Num, tr.Steps[2].Num
	part := Ops(tr, Options{StepFilter: true, FirstStep: first, LastStep: last})
	if part.StepsFirst != first || part.StepsLast != last {
		t.Errorf("steps %d-%d: table says %d-%d", first, last, part.StepsFirst, part.StepsLast)
	}
	if part.Calls <= 0 || part.Calls >= all.Calls {
		t.Errorf("steps %d-%d: %d calls of %d", first, last, part.Calls, all.Calls)
	}
	// a range past the trace's steps keeps none
	none := Ops(tr, Options{StepFilter: true, FirstStep: tr.Steps[len(tr.Steps)-1].Num + 1})
	if none.StepsLast != 0 || none.Calls != 0 {
		t.Errorf("no step kept: steps %d-%d, %d calls", none.StepsFirst, none.StepsLast, none.Calls)
	}
}

// Steps left out inside the range (the window check's outliers) are not
// counted: the table covers the others and says how many.
func TestStepExclude(t *testing.T) {
	tr := tracetest.Load(t, tracetest.Golden["test"])
	if len(tr.Steps) < 3 {
		t.Fatalf("want a trace with 3 or more steps, have %d", len(tr.Steps))
	}
	first, last := tr.Steps[0].Num, tr.Steps[2].Num
	whole := Ops(tr, Options{StepFilter: true, FirstStep: first, LastStep: last})
	middle := Ops(tr, Options{StepFilter: true, FirstStep: tr.Steps[1].Num, LastStep: tr.Steps[1].Num})
	exclude := make([]bool, len(tr.Steps))
	exclude[1] = true
	part := Ops(tr, Options{StepFilter: true, FirstStep: first, LastStep: last, Exclude: exclude})
	if whole.Steps != 3 || part.Steps != 2 || part.StepsFirst != first || part.StepsLast != last {
		t.Errorf("steps: whole %d, with one left out %d (%d-%d)", whole.Steps, part.Steps, part.StepsFirst, part.StepsLast)
	}
	if middle.Calls == 0 || part.Calls != whole.Calls-middle.Calls {
		t.Errorf("calls: whole %d, middle step %d, without it %d", whole.Calls, middle.Calls, part.Calls)
	}
	kWhole := Kernels(tr, Options{StepFilter: true, FirstStep: first, LastStep: last})
	kMiddle := Kernels(tr, Options{StepFilter: true, FirstStep: tr.Steps[1].Num, LastStep: tr.Steps[1].Num})
	kPart := Kernels(tr, Options{StepFilter: true, FirstStep: first, LastStep: last, Exclude: exclude})
	if kMiddle.TotalUs == 0 || math.Abs(kPart.TotalUs-(kWhole.TotalUs-kMiddle.TotalUs)) > 1e-6*kWhole.TotalUs {
		t.Errorf("kernel time: whole %.1f µs, middle step %.1f, without it %.1f", kWhole.TotalUs, kMiddle.TotalUs, kPart.TotalUs)
	}
}
