package trace

import "testing"

// An event's category is kept whatever its kind's other events have, read
// in one pass or merged from parts whose kinds begin with other
// categories.
func TestCategoriesKeptPerEvent(t *testing.T) {
	type ev struct {
		kind Kind
		cat  string
	}
	parts := [][]ev{
		{{KindCPUOp, "cpu_op"}, {KindOther, "overhead"}, {KindOther, "Trace"}, {KindCPUOp, "cpu_op"}},
		{{KindOther, "Trace"}, {KindOther, "overhead"}, {KindKernel, "kernel"}},                       // KindOther begins otherwise
		{{KindCPUOp, "Operator"}, {KindKernel, "kernel"}, {KindOther, "ac2g"}, {KindCPUOp, "cpu_op"}}, // so does KindCPUOp
		{{KindOther, "overhead"}, {KindOther, "ac2g"}},                                                // same first category
	}
	var want []string
	one := New("one")
	merged := New("merged")
	idx := map[TrackKey]TrackID{}
	for _, part := range parts {
		seg := New("seg")
		seg.TrackFor(TrackKey{Pid: 1, Tid: 1}, map[TrackKey]TrackID{})
		for _, e := range part {
			want = append(want, e.cat)
			for _, tr := range []*Trace{one, seg} {
				tr.AddEvent(&EventRecord{Kind: e.kind, Cat: tr.InternString(e.cat), SeqNum: -1})
			}
		}
		merged.AppendTables(seg, idx).CopyEvents()
	}
	for name, tr := range map[string]*Trace{"one pass": one, "merged": merged} {
		for i, w := range want {
			if got := tr.Str(tr.Events.Cat(i)); got != w {
				t.Errorf("%s: event %d category %q, want %q", name, i, got, w)
			}
		}
		if !tr.Events.cats.apart.valid(tr.Events.Len()) {
			t.Errorf("%s: categories kept apart invalid", name)
		}
	}
}
