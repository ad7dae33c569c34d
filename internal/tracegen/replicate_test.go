package tracegen

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
	"github.com/klauspost/compress/gzip"
)

// TestReplicateRealTrace grows a real GPU trace (bottleneck run's, with
// flows, kernels on streams, Python frames and memory events) to three
// copies and reads both back: the replica must read as the same program
// run three times as long, every link kept inside its copy.
func TestReplicateRealTrace(t *testing.T) {
	src := gunzipFile(t, "../../testdata/rundir/h100/item_sync/trace-rank0.pt.trace.json.gz")
	var buf bytes.Buffer
	st, err := Replicate(&buf, src, 3*int64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	if st.Copies != 3 || st.Bytes != int64(buf.Len()) {
		t.Fatalf("stats %+v for %d bytes written", st, buf.Len())
	}
	if !json.Valid(buf.Bytes()) {
		t.Fatal("the replica is not valid JSON")
	}
	if lo, hi := 2.9*float64(len(src)), 3.1*float64(len(src)); float64(st.Bytes) < lo || float64(st.Bytes) > hi {
		t.Errorf("%d bytes, want about 3x the source's %d", st.Bytes, len(src))
	}
	one, three := read(t, src), read(t, buf.Bytes())
	if len(one.Steps) < 2 || len(three.Steps) != 3*len(one.Steps) {
		t.Fatalf("%d steps in the source, %d in the replica; want 3x", len(one.Steps), len(three.Steps))
	}
	n := len(one.Steps)
	for i, s := range three.Steps {
		o := one.Steps[i%n]
		if s.End-s.Start != o.End-o.Start || s.Num != o.Num+(i/n)*n {
			t.Fatalf("replica's step %d: #%d, %d ns; source's step %d: #%d, %d ns",
				i, s.Num, s.End-s.Start, i%n, o.Num, o.End-o.Start)
		}
		if i > 0 && s.Start < three.Steps[i-1].End {
			t.Fatalf("replica's step %d starts before the one before it ends", i)
		}
	}
	if three.Events.Len() != 3*one.Events.Len() {
		t.Errorf("%d events in the replica, %d in the source", three.Events.Len(), one.Events.Len())
	}
	launched := func(tr *trace.Trace) (n int) {
		for i := range tr.Events.Len() {
			if tr.Events.Kind[i].OnDevice() && tr.Events.Launch(i) != trace.None {
				n++
			}
		}
		return n
	}
	if l1, l3 := launched(one), launched(three); l1 == 0 || l3 != 3*l1 {
		t.Errorf("device events linked to their launch: %d in the source, %d in the replica; want 3x", l1, l3)
	}
	if f1, f3 := len(one.Flows), len(three.Flows); f1 == 0 || f3 != 3*f1 {
		t.Errorf("flows: %d in the source, %d in the replica", f1, f3)
	}
	// The ids go on where the copy before ended, as dense as the source's
	// (a profiler numbers them from a base; an index of them stays small).
	idRange := func(c *trace.IDColumn) int64 {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, id := range c.All() {
			lo, hi = min(lo, id), max(hi, id)
		}
		return hi - lo + 1
	}
	for name, cols := range map[string][2]*trace.IDColumn{
		"correlation": {&one.Events.Correlation, &three.Events.Correlation},
		"External id": {&one.Events.ExternalID, &three.Events.ExternalID},
	} {
		if r1, r3 := idRange(cols[0]), idRange(cols[1]); r3 != 3*r1 {
			t.Errorf("%s ids span %d in the source, %d in the replica; want 3x", name, r1, r3)
		}
	}
	// Every copy after the first is the source's bytes but for what moved.
	lines := strings.Count(string(src), "\n")
	if got := strings.Count(buf.String(), "\n"); got < 3*lines-lines/2 {
		t.Errorf("%d lines in the replica, %d in the source: the layout was not kept", got, lines)
	}
}

func TestReplicateBareArrayAndErrors(t *testing.T) {
	src := []byte(`[{"ph":"X","name":"ProfilerStep#7","pid":1,"tid":1,"ts":100.5,"dur":10},` +
		`{"ph":"M","name":"process_name","pid":1,"args":{"name":"p"}},` +
		`{"ph":"X","name":"k","pid":0,"tid":7,"ts":1e2,"dur":1,"args":{"correlation":41}}]`)
	var buf bytes.Buffer
	st, err := Replicate(&buf, src, 1)
	if err != nil || st.Copies != 1 || !bytes.Equal(buf.Bytes(), src) {
		t.Fatalf("one copy: %v %+v\n%s", err, st, buf.Bytes())
	}
	buf.Reset()
	if _, err := Replicate(&buf, src, 2*int64(len(src))); err != nil {
		t.Fatal(err)
	}
	var evs []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &evs); err != nil {
		t.Fatalf("%v\n%s", err, buf.Bytes())
	}
	// span 100-110.5 µs, plus a 1% gap, rounded up: 11 µs
	want := []string{"ProfilerStep#7 100.5", "process_name null", "k 100", "ProfilerStep#8 111.5", "k 111"}
	var got []string
	for _, e := range evs {
		got = append(got, strings.TrimSpace(e["name"].(string)+" "+strings.TrimSuffix(jsonString(e["ts"]), ".0")))
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
	if c := evs[4]["args"].(map[string]any)["correlation"]; c != 42.0 {
		t.Errorf("second copy's correlation %v, want 42: the ids numbered on", c)
	}

	for _, bad := range []string{``, `{"traceEvents": {}}`, `{"x": 1}`, `{"traceEvents": []}`, `"s"`, `{"traceEvents": [{"ph":"X",}]}`} {
		if _, err := Replicate(&buf, []byte(bad), 100); err == nil {
			t.Errorf("Replicate(%q): no error", bad)
		}
	}
}

func TestAppendShiftedTime(t *testing.T) {
	for in, want := range map[string]string{
		"5371139390766.567": "5371139390776.567", // beyond float64's exact µs.ns
		"12":                "22",
		"0.001":             "10.001",
		"1.5e3":             "1510",
		"-3.5":              "6.5",
		`"x"`:               `"x"`,
	} {
		if got := string(appendShiftedTime(nil, []byte(in), 10)); got != want {
			t.Errorf("%s + 10 = %s, want %s", in, got, want)
		}
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func gunzipFile(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func read(t *testing.T, data []byte) *trace.Trace {
	t.Helper()
	tr, err := kineto.Read(bytes.NewReader(data), "replica.json", kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Problems.Any() {
		t.Errorf("problems reading: %v", tr.Problems.List)
	}
	return tr
}
