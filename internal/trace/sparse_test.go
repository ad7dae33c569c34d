package trace

import (
	"math"
	"testing"
)

// Python ids that do not fit 32 bits are kept whole, apart from the narrow
// ones, and read back in event order with the narrow ones; a segment's
// column appended at a base keeps both.
func TestPyColumnKeepsWideIDs(t *testing.T) {
	want := map[int]PyIDs{
		0: {1, 0},
		2: {math.MaxUint32, 7},
		3: {math.MaxUint32 + 1, 3},
		5: {4, -1},
		8: {5, 4},
	}
	var c PyColumn
	for _, i := range []int{0, 2, 3, 5, 8} {
		c.add(i, want[i])
	}
	var all PyColumn
	all.add(0, PyIDs{9, 9})
	all.appendFrom(&c, 10)
	if !all.valid(20) || all.Len() != 6 || len(all.wide.Events) != 2 {
		t.Fatalf("valid %v, len %d, wide %d; want true, 6, 2", all.valid(20), all.Len(), len(all.wide.Events))
	}
	prev := int32(-1)
	for e, v := range all.All() {
		if e <= prev {
			t.Fatalf("event %d after %d", e, prev)
		}
		prev = e
		if e == 0 {
			continue
		}
		if w := want[int(e)-10]; v != w {
			t.Errorf("All: event %d = %v, want %v", e, v, w)
		}
		if got, ok := all.At(int(e)); !ok || got != want[int(e)-10] {
			t.Errorf("At(%d) = %v, %v; want %v", e, got, ok, want[int(e)-10])
		}
	}
	if _, ok := all.At(11); ok {
		t.Error("At(11): an event without ids has some")
	}
}
