package optable

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
)

func generated(tb testing.TB, opt tracegen.Options) *trace.Trace {
	tb.Helper()
	var buf bytes.Buffer
	if _, err := tracegen.Generate(&buf, opt); err != nil {
		tb.Fatal(err)
	}
	tr, err := kineto.Read(&buf, "generated.json", kineto.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

// A table cut to its top rows holds the first rows of the whole table,
// for every sort key, with the whole table's totals; the rows the
// diagnosis reads (Ranked) are the same whatever the sort and the top.
func TestTopRows(t *testing.T) {
	tr := generated(t, tracegen.Options{TargetBytes: 2 << 20, Seed: 5, DistinctNames: true})
	ranked := Ops(tr, Options{}).Ranked()
	if len(ranked) < 100 {
		t.Fatalf("%d ranked rows, want 100 or more", len(ranked))
	}
	for _, by := range SortKeys {
		all := Ops(tr, Options{SortBy: by})
		if all.TotalRows < 100 || len(all.Rows) != all.TotalRows {
			t.Fatalf("%s: %d rows of %d, want all of 100 or more", by, len(all.Rows), all.TotalRows)
		}
		for _, top := range []int{0, 1, 7, 20} {
			cut := Ops(tr, Options{SortBy: by, Top: top})
			if !reflect.DeepEqual(cut.Ranked(), ranked) {
				t.Errorf("sort by %s, top %d: the diagnosis reads other rows", by, top)
			}
			if top == 0 {
				continue
			}
			want := *all
			want.Rows = all.Rows[:top]
			cut.ranked, want.ranked = nil, nil
			if !reflect.DeepEqual(*cut, want) {
				t.Errorf("sort by %s, top %d: rows %v, want %v", by, top, cut.Rows, want.Rows)
			}
		}
	}
}

// BenchmarkOps builds the operator table of generated traces: the
// generator's own shape and one with a name per CPU op.
func BenchmarkOps(b *testing.B) {
	for _, shape := range []struct {
		name string
		opt  tracegen.Options
	}{
		{"default", tracegen.Options{TargetBytes: 16 << 20, Seed: 1}},
		{"distinct-names", tracegen.Options{TargetBytes: 16 << 20, Seed: 1, DistinctNames: true}},
	} {
		tr := generated(b, shape.opt)
		b.Run(shape.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Ops(tr, Options{Top: 20})
			}
		})
	}
}
