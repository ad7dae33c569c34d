package kineto

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
)

// readBoth reads input in one pass and with workers over tiny segments (so
// every fixture is cut many times, falsely too), from a stream and as a
// mapped file would be read, and fails unless all give the same model,
// problems included.
func readBoth(t *testing.T, name string, input []byte, segmentSizes ...int) {
	t.Helper()
	merged := 0
	testHookMerged = func() { merged++ }
	defer func() { testHookMerged = nil }()
	one, err1 := Read(bytes.NewReader(input), name, Options{Workers: 1})
	want := "error " + fmt.Sprint(err1)
	if err1 == nil {
		want = dump(one) + sparseIDs(one)
	}
	defer func(saved int) { segmentSize = saved }(segmentSize)
	for _, size := range segmentSizes {
		segmentSize = size
		merged = 0
		par, err := Read(bytes.NewReader(input), name, Options{Workers: 3})
		if merged == 0 && bytes.Count(input, []byte("},")) > 2 && size < len(input)/2 {
			t.Errorf("%s, %d-byte segments: read in one pass", name, size)
		}
		got := "error " + fmt.Sprint(err)
		if err == nil {
			got = dump(par) + sparseIDs(par)
		}
		if got != want {
			t.Errorf("%s, %d-byte segments: parallel read differs from one pass:\n%s", name, size, diff(want, got))
		}
		for _, workers := range []int{1, 3} {
			mapped, err := readMapped(readOnly(t, input), name, Options{Workers: workers})
			got := "error " + fmt.Sprint(err)
			if err == nil {
				got = dump(mapped) + sparseIDs(mapped)
			}
			if got != want {
				t.Errorf("%s, %d-byte segments, %d workers: mapped read differs from one pass:\n%s", name, size, workers, diff(want, got))
			}
		}
	}
}

// readOnly returns data mapped read-only from a file, as openInput maps
// small files (where it does not, data itself), so a reader that wrote
// to its input would fault.
func readOnly(t *testing.T, data []byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := openInput(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.close)
	if in.mapped == nil {
		return data
	}
	return in.mapped
}

// generated returns a trace the generator writes with opts, and its
// one-pass read.
func generated(t *testing.T, opts tracegen.Options) ([]byte, *trace.Trace) {
	t.Helper()
	var buf bytes.Buffer
	if _, err := tracegen.Generate(&buf, opts); err != nil {
		t.Fatal(err)
	}
	one, err := Read(bytes.NewReader(buf.Bytes()), "gen", Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), one
}

func TestParallelMatchesOnePassOnFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		for _, s := range parseTxtar(string(data)) {
			if s.name == "trace.json" {
				readBoth(t, filepath.Base(file), []byte(s.body), 1, 40, 300)
			}
		}
	}
}

// Every real trace (every era and vendor) reads the same both ways.
func TestParallelMatchesOnePassOnRealTraces(t *testing.T) {
	dir := testutil.Traces(t)
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".json.gz")) {
			return nil
		}
		data, err := uncompressed(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		readBoth(t, rel, data, 16<<10)
		n++
		return nil
	})
	if n < 40 {
		t.Errorf("compared only %d traces", n)
	}
}

// Edge cases for the cutting and its verification: traces whose "},{"
// patterns lie, pairs that cross segments, damage and early ends in the
// middle of a long list.
func TestParallelEdgeCases(t *testing.T) {
	ev := func(i int) string {
		return fmt.Sprintf(`{"ph": "X", "cat": "cpu_op", "name": "op%d", "pid": 1, "tid": 1, "ts": %d.5, "dur": 1, "args": {"External id": %d}}`, i%7, i*10, i)
	}
	var list []string
	for i := range 60 {
		list = append(list, ev(i))
	}
	events := strings.Join(list, ",\n  ")
	mid := len(list) / 2
	cases := map[string]string{
		"metadata after the list": `{"traceEvents": [` + events + `], "traceName": "x", "baseTimeNanoseconds": 1000}`,
		"minified":                strings.ReplaceAll(`{"traceEvents":[`+events+`]}`, "\n  ", ""),
		"lying cuts in strings and args": `{"traceEvents": [` + strings.Join(list[:mid], ",\n") +
			`,
{"ph": "X", "name": "a},\n{\"ph\": \"X\"}", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"objs": [{"a": 1},
  {"b": 2},
  {"c": [{},
{}]}]}},
` + strings.Join(list[mid:], ",\n") + `]}`,
		"begin/end across segments": `{"traceEvents": [` + strings.Join(list[:mid], ",\n") +
			`,
{"ph": "B", "name": "outer", "pid": 1, "tid": 2, "ts": 1},
` + strings.Join(list[mid:], ",\n") + `,
{"ph": "E", "pid": 1, "tid": 2, "ts": 900, "args": {"late": 1}}]}`,
		"damage in the middle": `{"traceEvents": [` + strings.Join(list[:mid], ",\n") +
			`,
{"ph": "X", "name": "bad" "pid": 1, "ts": 1},
{"ph": "X", "name": N/A, "pid": 1, "tid": 1, "ts": 2, "dur": 1},
` + strings.Join(list[mid:], ",\n") + `]}`,
		"cut off":           `{"traceEvents": [` + events[:len(events)*2/3],
		"cut after a comma": `{"traceEvents": [` + strings.Join(list, ",\n") + ",\n",
		"legacy list":       `[` + events + `]`,
		"process names late": `{"traceEvents": [` + events + `,
{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}}]}`,
	}
	for name, input := range cases {
		readBoth(t, name, []byte(input), 1, 40, 300, 4096)
	}
}

// A generated trace with every event kind, read through a reader that
// hands over odd-sized chunks.
func TestParallelMatchesOnePassOnGeneratedTrace(t *testing.T) {
	input, one := generated(t, tracegen.Options{TargetBytes: 2 << 20, Seed: 3, Devices: 2})
	defer func(saved int) { segmentSize = saved }(segmentSize)
	segmentSize = 64 << 10
	// With the size known the tables are reserved as segments are merged,
	// while earlier segments' events are still being copied (go test -race).
	for _, hint := range []int64{0, int64(len(input))} {
		par, err := Read(iotest.HalfReader(bytes.NewReader(input)), "gen", Options{Workers: 4, SizeHint: hint})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := dump(par), dump(one); got != want {
			t.Errorf("size hint %d: parallel read differs from one pass:\n%s", hint, diff(want, got))
		}
	}
}

// A recycled segment reader reads as a fresh one: nothing of what it
// read before (strings, argument sets, per-launch values, tracks, ids,
// flows, memory records, links) leaks into the next segment.
func TestRecycledReaderReadsAsNew(t *testing.T) {
	events := func(opts tracegen.Options) []byte { // the event list, from after its '['
		var buf bytes.Buffer
		if _, err := tracegen.Generate(&buf, opts); err != nil {
			t.Fatal(err)
		}
		b := buf.Bytes()
		i := bytes.Index(b, []byte(`"traceEvents"`))
		return b[i+bytes.IndexByte(b[i:], '[')+1:]
	}
	before := events(tracegen.Options{TargetBytes: 256 << 10, Seed: 1, DistinctNames: true, TinyEvents: true, PerLaunchArgs: true, Devices: 2})
	after := events(tracegen.Options{TargetBytes: 256 << 10, Seed: 2})
	read := func(r *reader, data []byte) string {
		r.buf, r.end, r.eof = data, len(data), true
		if end, _ := r.segmentEvents(); end != segmentListEnd {
			t.Fatalf("the segment ended with %d, not at the list's end", end)
		}
		r.t.Link()
		var tables strings.Builder // what the merge takes over, by id
		for id, s := range r.t.AllStrings() {
			fmt.Fprintf(&tables, "string %d %q\n", id, s)
		}
		fmt.Fprintf(&tables, "argument sets %d\n", r.t.ArgSets.Len())
		return dump(r.t) + sparseIDs(r.t) + tables.String()
	}
	for _, c := range []struct{ name, before, after string }{
		{"generated", string(before), string(after)},
		// The first new string of each is a category of another kind.
		{"categories", `{"cat": "kernel", "ph": "X", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 1}]`,
			`{"cat": "cpu_op", "ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]`},
	} {
		want := read(newReader("segment"), []byte(c.after))
		used := newReader("segment")
		read(used, []byte(c.before))
		used.recycle()
		if got := read(used, []byte(c.after)); got != want {
			t.Errorf("%s: a recycled reader read differently from a new one:\n%s", c.name, diff(want, got))
		}
	}
}

// Reading ends holding nothing only reading needed (the window, the
// segment buffers it replays, spare segment readers), so that linking
// and the analyses can reuse that memory.
func TestReleaseDropsReadingState(t *testing.T) {
	input, want := generated(t, tracegen.Options{TargetBytes: 1 << 20, Seed: 5})
	defer func(saved int) { segmentSize = saved }(segmentSize)
	segmentSize = 64 << 10
	r := newReader("gen") // as Read sets it up, to look in before finish
	r.src, r.buf, r.par = bytes.NewReader(input), make([]byte, windowSize), newParallel("gen", 2, false, false)
	defer r.par.stop()
	if err := r.top(); err != nil {
		t.Fatal(err)
	}
	r.trailing()
	if r.buf == nil || r.src == nil || len(r.par.spare) == 0 {
		t.Fatalf("before release: window %d bytes, source %v, %d spare readers; the test needs all three", len(r.buf), r.src != nil, len(r.par.spare))
	}
	r.release()
	if r.buf != nil || r.src != nil || len(r.par.spare) != 0 {
		t.Errorf("after release: window %d bytes, source %v, %d spare readers; want none", len(r.buf), r.src != nil, len(r.par.spare))
	}
	r.finish()
	if got, want := dump(r.t), dump(want); got != want {
		t.Errorf("the released reader's trace differs from a one-pass read:\n%s", diff(want, got))
	}
}

// The process and thread names a merge takes from a segment outlive the
// segment's reader, whose string bytes its next segment reuses.
func TestMergedNamesOutliveTheSegment(t *testing.T) {
	segment := func(r *reader, events string) {
		r.buf, r.end, r.eof = []byte(events), len(events), true
		if end, _ := r.segmentEvents(); end != segmentListEnd {
			t.Fatalf("the segment ended with %d, not at the list's end", end)
		}
	}
	main, s := newReader("main"), newReader("segment")
	segment(s, `{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "trainer"}},
		{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "loader"}},
		{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 2, "ts": 1, "dur": 1}]`)
	main.merge(s).CopyEvents()
	s.recycle()
	segment(s, `{"ph": "X", "cat": "cpu_op", "name": "xxxxxxxxxxxxxxxxxxxxxxxx", "pid": 1, "tid": 2, "ts": 5, "dur": 1}]`)
	var names []string
	for _, n := range main.procName {
		names = append(names, n)
	}
	for _, n := range main.thrName {
		names = append(names, n)
	}
	slices.Sort(names)
	if want := []string{"loader", "trainer"}; !slices.Equal(names, want) {
		t.Errorf("merged names %q after the segment's reader was reused, want %q", names, want)
	}
}

// unreadArgs matches the per-launch values that no analysis reads in a dump.
var unreadArgs = regexp.MustCompile(` "(grid|warps per SM|memory bandwidth \(GB/s\))"=(\[[^\]]*\]|[^ \n]+)`)

// Read for the analyses only, a trace keeps everything but its flows,
// which it counts, its sequence numbers, its Python ids and the per-launch
// values no analysis reads, in one pass and in parallel.
func TestAnalysesOnlyKeepsAllButFlowsAndIDs(t *testing.T) {
	input, full := generated(t, tracegen.Options{TargetBytes: 1 << 20, Seed: 4, TinyEvents: true, Devices: 2})
	flows, seqs, pyIDs := len(full.Flows), full.Events.SeqNum.Len(), full.Events.Py.Len()
	if flows == 0 || seqs == 0 || pyIDs == 0 {
		t.Fatalf("the generated trace has %d flows, %d sequence numbers and %d events with Python ids; the test needs all three", flows, seqs, pyIDs)
	}
	full.Flows = nil
	withoutIDs := func(tr *trace.Trace) string {
		var kept []string
		for _, l := range strings.Split(sparseIDs(tr), "\n") {
			if !strings.HasPrefix(l, "py ") && !strings.HasPrefix(l, "seq ") {
				kept = append(kept, l)
			}
		}
		return dump(tr) + strings.Join(kept, "\n")
	}
	want := unreadArgs.ReplaceAllString(withoutIDs(full), "")
	defer func(saved int) { segmentSize = saved }(segmentSize)
	segmentSize = 64 << 10
	for _, workers := range []int{1, 3} {
		lean, err := Read(bytes.NewReader(input), "gen", Options{Workers: workers, AnalysesOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(lean.Flows) != 0 || lean.UnkeptFlows != flows || lean.NumFlows() != flows {
			t.Errorf("%d workers: %d flows kept, %d counted, want none kept and %d counted", workers, len(lean.Flows), lean.UnkeptFlows, flows)
		}
		if s, p := lean.Events.SeqNum.Len(), lean.Events.Py.Len(); s != 0 || p != 0 {
			t.Errorf("%d workers: %d events keep sequence numbers, %d Python ids", workers, s, p)
		}
		if got := withoutIDs(lean); got != want {
			t.Errorf("%d workers: the rest of the trace differs:\n%s", workers, diff(want, got))
		}
	}
}

// A file cut short after it was mapped faults where its pages were: the
// read ends with an error naming the file, not a crash, whether the cut
// comes before reading or while the workers parse (at the first merge).
func TestMappedFileCutShort(t *testing.T) {
	input, _ := generated(t, tracegen.Options{TargetBytes: 4 << 20, Seed: 3})
	defer func(saved int) { segmentSize = saved }(segmentSize)
	segmentSize = 64 << 10
	defer func() { testHookMerged = nil }()
	for _, workers := range []int{1, 2} {
		for _, midway := range []bool{false, true} {
			path := filepath.Join(t.TempDir(), "trace.json")
			if err := os.WriteFile(path, input, 0o600); err != nil {
				t.Fatal(err)
			}
			in, err := openInput(path)
			if err != nil {
				t.Fatal(err)
			}
			if in.mapped == nil {
				t.Skip("files are not mapped on this system")
			}
			cut := func() {
				if err := os.Truncate(path, 0); err != nil {
					t.Error(err)
				}
			}
			testHookMerged = nil
			if midway && workers > 1 {
				testHookMerged = func() { cut(); testHookMerged = nil }
			} else {
				cut()
			}
			tr, err := readMapped(in.mapped, path, Options{Workers: workers})
			in.close()
			if err == nil || tr != nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "changed while it was read") {
				t.Errorf("%d workers, cut midway %v: got trace %v, error %v; want an error naming %s", workers, midway, tr != nil, err, path)
			}
		}
	}
}
