package gpu

import (
	"reflect"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// Given the step breakdown, the analysis takes its window from it and
// computes what it computes on its own.
func TestComputeFromBreakdown(t *testing.T) {
	for _, name := range []string{"alexnet", "h100_qwen"} {
		tr := tracetest.Load(t, tracetest.Golden[name])
		for _, o := range []Options{{}, {Definition: breakdown.TB}, {Exclude: []bool{true}}} {
			want, err := Compute(tr, o)
			if err != nil {
				t.Fatal(err)
			}
			o.Breakdown, err = breakdown.Compute(tr, breakdown.Options{Definition: o.Definition, Exclude: o.Exclude})
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := Compute(tr, o); !reflect.DeepEqual(got, want) {
				t.Errorf("%s, definition %q: with the breakdown given, %+v; want %+v", name, o.Definition, got, want)
			}
		}
	}
}
