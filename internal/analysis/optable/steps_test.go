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

// An optimizer step that outlasts its ProfilerStep on the same thread
// (prof.step() ran in its hook; the last stayed open while the profiler
// stopped) counts up to that step's end; on another thread, or another
// annotation, it keeps its duration.
func TestOptimizerStepCutAtStepEnd(t *testing.T) {
	tr := tracetest.ReadString(t, `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":1000},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#Adam.step","pid":1,"tid":1,"ts":800,"dur":74000},
{"ph":"X","cat":"cpu_op","name":"aten::add_","pid":1,"tid":1,"ts":810,"dur":100},
{"ph":"X","cat":"user_annotation","name":"Optimizer.step#SGD.step","pid":1,"tid":2,"ts":800,"dur":5000},
{"ph":"X","cat":"user_annotation","name":"train_step","pid":1,"tid":1,"ts":100,"dur":600},
{"ph":"X","cat":"user_annotation","name":"train_step","pid":1,"tid":1,"ts":1000,"dur":3000}
]}`)
	want := map[string][2]float64{ // host total, host self (µs)
		"Optimizer.step#Adam.step": {200, 100},
		"Optimizer.step#SGD.step":  {5000, 5000},
		"train_step":               {3600, 3600},
		"ProfilerStep#1":           {1000, 400},
	}
	seen := 0
	for _, r := range Ops(tr, Options{}).Rows {
		w, ok := want[r.Name]
		if !ok {
			continue
		}
		seen++
		if math.Abs(r.HostTotalUs-w[0]) > 0.01 || math.Abs(r.HostSelfUs-w[1]) > 0.01 {
			t.Errorf("%s: total %v self %v, want %v", r.Name, r.HostTotalUs, r.HostSelfUs, w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of %d rows", seen, len(want))
	}
}
