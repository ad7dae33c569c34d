package trace

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// Interned strings keep their ids and bytes across the index's growth and
// new chunks, the caller's buffer may be reused, and Lookup finds exactly
// what was interned.
func TestStringTable(t *testing.T) {
	tr := New("x")
	base := tr.NumStrings()
	long := strings.Repeat("L", strChunk) // a chunk of its own
	// Longer than the small chunks a table starts with, not long enough
	// for a chunk of its own.
	middle := strings.Repeat("M", 3*firstChunk)
	var want []string
	buf := []byte{}
	for i := range 50000 {
		s := "op_" + strconv.Itoa(i)
		if i%10000 == 7 {
			s = long + s
		}
		if i == 3 || i == 40 {
			s = middle + s
		}
		buf = append(buf[:0], s...)
		if id := tr.Intern(buf); int(id) != base+i {
			t.Fatalf("%q: id %d, want %d", s, id, base+i)
		}
		copy(buf, "XXXX") // the table must have copied the bytes
		want = append(want, s)
	}
	for i, s := range want {
		id := StrID(base + i)
		if got := tr.Str(id); got != s {
			t.Fatalf("id %d: %.20q, want %.20q", id, got, s)
		}
		if got, ok := tr.Lookup(s); !ok || got != id {
			t.Fatalf("Lookup(%.20q) = %d, %v; want %d", s, got, ok, id)
		}
		if again := tr.InternString(s); again != id {
			t.Fatalf("%.20q interned again as %d, want %d", s, again, id)
		}
	}
	if _, ok := tr.Lookup("op_50000"); ok {
		t.Error("Lookup found a string never interned")
	}
	if id, ok := tr.Lookup(""); !ok || id != KeyEmpty || tr.Str(KeyEmpty) != "" {
		t.Errorf(`"" is %d, %v`, id, ok)
	}
	n := 0
	for id, s := range tr.AllStrings() {
		if s != tr.Str(id) || int(id) != n {
			t.Fatalf("AllStrings: %d %.20q at %d", id, s, n)
		}
		n++
	}
	if n != tr.NumStrings() || n != base+len(want) {
		t.Errorf("AllStrings yielded %d strings, NumStrings %d, want %d", n, tr.NumStrings(), base+len(want))
	}
}

// BenchmarkIntern interns a million distinct names, as a trace with a
// name per op does, and looks them up again.
func BenchmarkIntern(b *testing.B) {
	names := make([][]byte, 1<<20)
	for i := range names {
		names[i] = []byte("aten::generated_op_" + strconv.Itoa(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		tr := New("bench")
		for _, s := range names {
			tr.Intern(s)
		}
		for _, s := range names {
			tr.Intern(s)
		}
	}
}

// After ReserveStrings(n), interning n strings never rebuilds the index,
// and the strings already interned keep their ids.
func TestReserveStrings(t *testing.T) {
	tr := New("reserve")
	a := tr.InternString("a")
	tr.ReserveStrings(10000)
	size, refs := len(tr.strs.slots), unsafe.SliceData(tr.strs.refs)
	for i := 0; tr.NumStrings() < 10000; i++ {
		tr.InternString(strconv.Itoa(i))
	}
	if len(tr.strs.slots) != size {
		t.Errorf("the index grew from %d to %d slots", size, len(tr.strs.slots))
	}
	if unsafe.SliceData(tr.strs.refs) != refs {
		t.Error("the references grew")
	}
	if id, ok := tr.Lookup("a"); !ok || id != a {
		t.Errorf("Lookup(a) = %d, %v, want %d", id, ok, a)
	}
}

// Past the ids that leave room for hash bytes in the index, the index
// drops them, and every string keeps its id either side of the switch.
func TestStringIndexWithoutHashBytes(t *testing.T) {
	defer func(saved int) { tagShift = saved }(tagShift)
	tagShift = 5 // hash bytes while ids stay under 31
	tr := New("tags")
	ids := map[string]StrID{}
	for i := range 100 {
		s := "name " + strconv.Itoa(i)
		ids[s] = tr.InternString(s)
		if i%7 == 0 { // found again, before and after the switch
			if id := tr.InternString("name 0"); id != ids["name 0"] {
				t.Fatalf("after %d strings, name 0 is %d, was %d", i+1, id, ids["name 0"])
			}
		}
	}
	for s, want := range ids {
		if got, ok := tr.Lookup(s); !ok || got != want || tr.Str(want) != s {
			t.Errorf("Lookup(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	if _, ok := tr.Lookup("name 100"); ok {
		t.Error("Lookup found a string never interned")
	}
}

// A recycled table reads as a new one and stores its strings in the
// chunks it kept, long strings' own chunks apart.
func TestRecycledStringTable(t *testing.T) {
	tr := New("x")
	fill := func(prefix string) []string {
		var want []string
		for i := range 3000 {
			s := prefix + strconv.Itoa(i)
			if i == 100 {
				s += strings.Repeat("L", strChunk) // a chunk of its own
			}
			tr.InternString(s)
			want = append(want, s)
		}
		return want
	}
	fill("first_")
	smallChunks := func() (ptrs []*byte) {
		for _, c := range tr.strs.chunks {
			if cap(c) <= strChunk {
				ptrs = append(ptrs, unsafe.SliceData(c))
			}
		}
		return ptrs
	}
	before := smallChunks()
	tr.Recycle()
	if _, ok := tr.Lookup("first_1"); ok {
		t.Error("a recycled table still finds a string of before")
	}
	want := fill("other_")
	for _, s := range want {
		if id, ok := tr.Lookup(s); !ok || tr.Str(id) != s {
			t.Fatalf("%.20q: id %d, %v, reads back %.20q", s, id, ok, tr.Str(id))
		}
	}
	if after := smallChunks(); !slices.Equal(after, before) {
		t.Errorf("small strings' chunks %p after the same strings again, %p before: not reused", after, before)
	}
}
