package tracegen

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The layouts write the same JSON: compact is the default with its
// whitespace removed, indent is what json.Indent (and Python's
// json.dump(indent=2)) makes of it, byte for byte; and the sizes the
// planner aims at are the layouts' own.
func TestLayouts(t *testing.T) {
	gen := func(l Layout, target int64) (string, Stats) {
		var b bytes.Buffer
		st, err := Generate(&b, Options{TargetBytes: target, Seed: 5, Layers: 2, MicroBatches: 2, Layout: l})
		if err != nil {
			t.Fatal(err)
		}
		if st.Bytes != int64(b.Len()) {
			t.Errorf("layout %q: stats say %d bytes, wrote %d", l, st.Bytes, b.Len())
		}
		return b.String(), st
	}
	def, _ := gen(LayoutDefault, 0)
	compact, _ := gen(LayoutCompact, 0)
	indent, _ := gen(LayoutIndent, 0)
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(def)); err != nil {
		t.Fatal(err)
	}
	if compact != want.String() {
		t.Error("compact layout is not the default compacted")
	}
	want.Reset()
	if err := json.Indent(&want, []byte(compact), "", "  "); err != nil {
		t.Fatal(err)
	}
	if indent != want.String() {
		t.Error("indent layout is not json.Indent of the compact one")
	}
	if len(compact) >= len(def) || len(indent) <= len(def) {
		t.Errorf("sizes: compact %d, default %d, indent %d", len(compact), len(def), len(indent))
	}

	for _, l := range []Layout{LayoutCompact, LayoutIndent} {
		var b bytes.Buffer
		st, err := Generate(&b, Options{TargetBytes: 4 << 20, Seed: 5, Layout: l})
		if err != nil {
			t.Fatal(err)
		}
		if d := float64(st.Bytes)/float64(4<<20) - 1; d < -0.1 || d > 0.1 {
			t.Errorf("layout %q: %d bytes for a 4 MiB target", l, st.Bytes)
		}
	}
	if err := (Options{Layout: "pretty"}).Check(); err == nil {
		t.Error("unknown layout accepted")
	}
}

// A flush may cut the output anywhere, inside a string or an escape too.
func TestRelayoutAcrossBuffers(t *testing.T) {
	const doc = `{"a": [1, {"b\"}": "x, y: [z]\\"}, {}, []], "c" : { "d":null }}`
	for _, l := range []Layout{LayoutCompact, LayoutIndent} {
		whole := string(newRelayout(l).append(nil, []byte(doc)))
		for cut := range len(doc) {
			r := newRelayout(l)
			got := string(r.append(r.append(nil, []byte(doc[:cut])), []byte(doc[cut:])))
			if got != whole {
				t.Fatalf("layout %q cut at %d: %q, want %q", l, cut, got, whole)
			}
		}
		var want bytes.Buffer
		json.Compact(&want, []byte(doc))
		if l == LayoutIndent {
			c := want.String()
			want.Reset()
			json.Indent(&want, []byte(c), "", "  ")
		}
		if whole != want.String() {
			t.Errorf("layout %q: %q, want %q", l, whole, want.String())
		}
	}
}

// TinyEvents adds small Python frames and keeps the rest of the trace.
func TestTinyEvents(t *testing.T) {
	count := func(tiny bool) (py, ops int) {
		var b bytes.Buffer
		if _, err := Generate(&b, Options{Seed: 3, Layers: 2, MicroBatches: 2, TinyEvents: tiny}); err != nil {
			t.Fatal(err)
		}
		var tr struct{ TraceEvents []struct{ Cat string } }
		if err := json.Unmarshal(b.Bytes(), &tr); err != nil {
			t.Fatal(err)
		}
		for _, e := range tr.TraceEvents {
			switch e.Cat {
			case "python_function":
				py++
			case "cpu_op":
				ops++
			}
		}
		return py, ops
	}
	py, ops := count(false)
	tpy, tops := count(true)
	if tops != ops || tpy < py+ops/4 {
		t.Errorf("python frames %d -> %d, ops %d -> %d", py, tpy, ops, tops)
	}
}
