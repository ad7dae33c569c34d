package kineto

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// withLimits shrinks the value limits and the shortest dropped stretch for
// one test, so that small inputs exercise them.
func withLimits(t testing.TB, str, meta, cut int) {
	saved := [3]int{maxString, maxMetadata, minCut}
	maxString, maxMetadata, minCut = str, meta, cut
	t.Cleanup(func() { maxString, maxMetadata, minCut = saved[0], saved[1], saved[2] })
}

// checkCuts reads input from one buffer and through a 7-byte window one
// byte at a time, where every stretch the reader need not hold is dropped
// at each refill: the models, problems and their offsets included, must be
// the same.
func checkCuts(t testing.TB, name string, input []byte) {
	t.Helper()
	whole, err1 := Read(bytes.NewReader(input), name, Options{Workers: 1})
	defer func(saved int) { windowSize = saved }(windowSize)
	windowSize = 7
	cut, err2 := Read(iotest.OneByteReader(bytes.NewReader(input)), name, Options{Workers: 1})
	sameRead(t, name+": read through a small window with cuts differs", whole, err1, cut, err2)
}

// sameRead reports what, with the difference, when the second read's
// model or error is not the first's.
func sameRead(t testing.TB, what string, want *trace.Trace, wantErr error, got *trace.Trace, gotErr error) {
	t.Helper()
	w, g := "error "+fmt.Sprint(wantErr), "error "+fmt.Sprint(gotErr)
	if wantErr == nil {
		w = dump(want)
	}
	if gotErr == nil {
		g = dump(got)
	}
	if g != w {
		t.Errorf("%s:\n%s", what, diff(w, g))
	}
}

// Inputs whose values are longer than the (shrunk) limits, or damaged,
// where the reader drops what it passes over.
var cutCases = map[string]string{
	"skipped strings": `{"traceEvents": [
 {"ph": "X", "name": "a", "ts": 1, "dur": 1, "junk": "0123456789abcdefghij\n\t\u00e9\ud83d\ude00\ud800x\q\u12G€` + "\xff\x01" + `tail "quoted" x", "pid": 1},
 {"ph": "X", "name": "b", "ts": 2, "dur": 1, "junk": "` + strings.Repeat("€a", 40) + "\xc3" + `", "more": "` + strings.Repeat(`\"`, 30) + `"},
 {"ph": "X", "name": "c", "ts": 3, "dur": 1, "junk": "` + strings.Repeat("x", 50) + `"    ` + strings.Repeat(" ", 40) + `, "tid": 2},
 {"ph": "X", "name": "d", "ts": 4, "dur": 1, "junk": "x` + "\xff" + strings.Repeat("x", 50) + "\xfe" + strings.Repeat("x", 50) + `"},
 {"ph": "X", "name": "e` + strings.Repeat("e", 30) + "\xff" + strings.Repeat("x", 50) + `", "ts": 5, "dur": 1}
]}`,
	"long kept strings": `{"traceEvents": [
 {"ph": "X", "name": "abcdefghijklmnopqrs€tuvwxyz", "ts": 1, "dur": 1},
 {"ph": "X", "name": "abcdefghijklmnopqr\u00e9\u00e9\u00e9 and more after it", "ts": 2, "dur": 1},
 {"ph": "X", "name": "abcdefghijklmnopqrst", "ts": 3, "dur": 1, "args": {"k": "0123456789` + "\xff" + `0123456789012345678901234567890` + "\xfe" + `", "d": "abc\tdefghijklmnopqrstuvwxyz"}},
 {"ph": "X", "name": "abc\qdefghijklmnopqrstuvwxyz\n0123456789", "ts": 4, "dur": 1, "cat": "` + strings.Repeat("c", 60) + `"},
 {"ph": "X", "name": "abcdefghijklmnopqrs"tuvw"xyz", "ts": 5, "dur": 1}
]}`,
	"skipped arrays and objects": `{"traceEvents": [
 {"ph": "X", "name": "a", "ts": 1, "dur": 1, "junk": [1, N/A, {"k": [true, false, null, "x\q"], "l": {}}, [], 2, 3, "four", [5, [6, [7]]], {"a": 1, "b": nan}], "pid": 1},
 {"ph": "X", "name": "b", "ts": 2, "dur": 1, "args": {"dims": [[1, 2, 3], [4, 5, 6], [7, 8, 9, 10, 11]], "small": [1, 2], "Ev Idx": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]}},
 {"ph": "X", "name": "c", "ts": 3, "dur": 1, "args": {"obj": {"x": "` + strings.Repeat("y", 30) + `", "z": [1, 2, 3, 4, 5, 6, 7, 8]}}},
 [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
]}`,
	"whitespace inside events": "{\"traceEvents\": [\n {\"ph\"   :    \"X\"  ,          \"name\":          \"a\",\n\n\n\n      \"ts\": 1          ,\"dur\":1                          }" +
		",\n {\"ph\": \"X\", \"name\": \"b\", \"args\": {\"k\":                         [1,                                2]}, \"ts\": 2, \"dur\": 1}\n]}",
	"metadata": `{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU", "totalGlobalMem": 1}],
 "note": "` + strings.Repeat("n", 100) + `", "big": [` + strings.Repeat(`"x", `, 20) + `1], "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
 "traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1}], "after": {"k": "` + strings.Repeat("\\n", 40) + `"}}`,
	"damage after long values": `{"traceEvents": [
 {"ph": "X", "name": "a", "ts": 1, "dur": 1, "junk": "` + strings.Repeat("x", 80) + `", "args": {"k": "` + strings.Repeat("y", 80) + `"}},
 {"ph": "X", "name": "b", "ts": 2 3, "junk": "` + strings.Repeat("z", 80) + `"},
 {"ph": "X", "name": "c", "ts": 3, "dur": 1, "junk": 123456789012345678901234567890},
 {"ph": "X", "name": "d", "ts": 4, "dur": 1, "junk": "` + strings.Repeat("w", 80) + `"},
 {"ph": "X", "name": "e", "ts": 5, "dur": 1, "junk": "` + strings.Repeat("v", 80),
}

// Dropping what is passed over never changes the model: every fixture and
// every case above, with limits small enough that they all apply.
func TestCutsGiveTheSameModel(t *testing.T) {
	withLimits(t, 20, 64, 1)
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		for _, s := range parseTxtar(string(data)) {
			if s.name == "trace.json" {
				checkCuts(t, filepath.Base(file), []byte(s.body))
				readBoth(t, filepath.Base(file), []byte(s.body), 1, 40)
			}
		}
	}
	for name, input := range cutCases {
		checkCuts(t, name, []byte(input))
		readBoth(t, name, []byte(input), 1, 40)
	}
}

// The rules for long values, on the cases above.
func TestLongValues(t *testing.T) {
	withLimits(t, 20, 64, 1)
	read := func(name string) *trace.Trace {
		tr, err := Read(strings.NewReader(cutCases[name]), name, Options{Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	tr := read("long kept strings")
	for i, want := range []string{"abcdefghijklmnopqrs", "abcdefghijklmnopqr\u00e9", "abcdefghijklmnopqrst", "abc\\qdefghijklmnopqr", `abcdefghijklmnopqrs"`} {
		if got := tr.Name(i); got != want {
			t.Errorf("name %d: %q, want %q (truncated at a character boundary within 20 bytes)", i, got, want)
		}
	}
	if !strings.Contains(fmt.Sprint(tr.Problems.List), "string too long (truncated to its first 19 bytes), 7 times") {
		t.Errorf("problems %v do not report the truncated strings", tr.Problems.List)
	}
	tr = read("skipped arrays and objects")
	if got := dump(tr); !strings.Contains(got, `"small"=[1, 2]`) || !strings.Contains(got, `"dims"=null`) || !strings.Contains(got, "array or object value too long") {
		t.Errorf("array arguments over the limit must read as null and be reported, shorter ones kept:\n%s", got)
	}
	tr = read("metadata")
	got := dump(tr)
	if !strings.Contains(got, "meta schemaVersion=1") || !strings.Contains(got, "devices=1 rank=1/2") || strings.Contains(got, "meta note") || strings.Contains(got, "meta big") {
		t.Errorf("metadata over the limit must be left out, the rest kept:\n%s", got)
	}
	if !strings.Contains(got, `metadata too large ("note" is longer than 64 bytes; left out), 3 times`) {
		t.Errorf("metadata left out must be reported:\n%s", got)
	}
	tr, err := Read(strings.NewReader(`[{"ph": "X", "name": "a", "ts": 1, "junk": 123456789012345678901234567890}]`), "word", Options{})
	if err == nil || !strings.Contains(err.Error(), "damaged event skipped (number or bare word longer than 20 bytes)") {
		t.Errorf("an overlong number must be damage: %v", err)
	}
}

// FuzzCuts checks that dropping what is passed over never changes the
// model, whatever the input.
func FuzzCuts(f *testing.F) {
	for _, input := range cutCases {
		f.Add([]byte(input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		withLimits(t, 20, 64, 1)
		checkCuts(t, "fuzz", data)
	})
}

// loop repeats its bytes forever.
type loop struct {
	b   []byte
	off int
}

func (l *loop) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], l.b[l.off:])
		n += k
		l.off = (l.off + k) % len(l.b)
	}
	return n, nil
}

// repeated streams prefix, unit repeated up to n bytes, and suffix,
// without holding them.
func repeated(prefix, unit string, n int64, suffix string) io.Reader {
	block := bytes.Repeat([]byte(unit), max(1, (64<<10)/len(unit)))
	return io.MultiReader(strings.NewReader(prefix), io.LimitReader(&loop{b: block}, n), strings.NewReader(suffix))
}

// A value far larger than the memory limit, in any place whose value is
// not kept whole, is read without holding it: plain, gzipped and by the
// parallel reader. The events around it are read, and the offsets of
// later damage stay those of the input.
func TestHugeValuesAreNotHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("reads gigabytes")
	}
	withMemoryLimit(t, 64<<20)
	const n = 200 << 20
	const after = `{"name": "b", "ph": "X", "ts": 2, "dur": 1}, {"name": "c", "ph": "X", "ts": 3 4}, {"name": "d", "ph": "X", "ts": 4, "dur": 1}]}`
	cases := []struct {
		name, prefix, unit, suffix string
		problems                   string
	}{
		{"kept argument", `{"traceEvents":[{"name":"a","ph":"X","ts":1,"dur":1,"args":{"blob":"`, "x", `"}}, `,
			"string too long"},
		{"skipped key", `{"traceEvents":[{"name":"a","ph":"X","ts":1,"dur":1,"junk":"`, "x\\n€", `"}, `, ""},
		{"skipped array", `{"traceEvents":[{"name":"a","ph":"X","ts":1,"dur":1,"junk":[`, `"x", [1, 2.5], {"k": null}, `, `0]}, `, ""},
		{"top-level key", `{"note": "`, "x", `", "traceEvents": [{"name":"a","ph":"X","ts":1,"dur":1}, `, "metadata too large"},
	}
	for _, c := range cases {
		n := n - n%len(c.unit) // whole units
		size := int64(len(c.prefix)) + int64(n) + int64(len(c.suffix))
		damage := size + int64(strings.Index(after, "4}")) // the second number of "ts"
		check := func(how string, tr *trace.Trace, err error, alloc uint64) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s, %s: %v", c.name, how, err)
			}
			var names []string
			for i := range tr.Events.Len() {
				names = append(names, tr.Name(i))
			}
			if fmt.Sprint(names) != "[a b d]" {
				t.Errorf("%s, %s: events %v, want [a b d]", c.name, how, names)
			}
			var found bool
			for _, p := range tr.Problems.List {
				switch {
				case p.What == "damaged event skipped":
					found = true
					if p.Offset != damage {
						t.Errorf("%s, %s: damage reported at byte %d, want %d", c.name, how, p.Offset, damage)
					}
				case p.What != c.problems:
					t.Errorf("%s, %s: unexpected problem %v", c.name, how, p)
				}
			}
			if !found {
				t.Errorf("%s, %s: the damage after the value is not reported: %v", c.name, how, tr.Problems.List)
			}
			if alloc > 100<<20 { // a held value alone would be 200 MiB; the limit's guard checks what is live
				t.Errorf("%s, %s: reading %d MiB allocated %d MiB", c.name, how, size>>20, alloc>>20)
			}
		}
		for _, workers := range []int{1, 4} {
			before := allocated()
			tr, err := Read(repeated(c.prefix, c.unit, int64(n), c.suffix+after), c.name, Options{Workers: workers})
			check(fmt.Sprintf("%d workers", workers), tr, err, allocated()-before)
		}
		if c.name == "kept argument" {
			gz := writeTemp(t, "huge.json.gz", gzipRepeat(t, c.prefix, c.unit, n/len(c.unit), c.suffix+after))
			before := allocated()
			tr, err := ReadFile(gz, Options{})
			check("gzip", tr, err, allocated()-before)
		}
	}
}

// distinctNames streams a trace of n events, each with a name of its own.
type distinctNames struct {
	n, i int
	buf  []byte
}

func (d *distinctNames) Read(p []byte) (int, error) {
	for len(d.buf) < len(p) && d.i <= d.n {
		switch {
		case d.i == 0:
			d.buf = append(d.buf, `{"traceEvents": [`...)
		case d.i < d.n:
			d.buf = fmt.Appendf(d.buf, `{"ph": "X", "cat": "cpu_op", "name": "aten::op_%09d_with_a_longer_name", "pid": 1, "tid": 1, "ts": %d, "dur": 1},`+"\n", d.i, d.i)
		default:
			d.buf = append(d.buf, `{"ph": "X", "name": "last", "ts": 0, "dur": 1}]}`...)
		}
		d.i++
	}
	if len(d.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, d.buf)
	d.buf = d.buf[:copy(d.buf, d.buf[n:])]
	return n, nil
}

// Distinct strings grow the model without bound: past the memory limit
// the read ends with the limit named (exit 3 with what was read, or 1),
// never with the runtime's fatal "out of memory".
func TestDistinctNamesStopAtTheMemoryLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("reads hundreds of megabytes")
	}
	withMemoryLimit(t, 32<<20)
	for _, workers := range []int{1, 4} {
		tr, err := Read(&distinctNames{n: 3_000_000}, "distinct", Options{Workers: workers})
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		last := tr.Problems.List[len(tr.Problems.List)-1]
		if !last.Fatal || !strings.Contains(last.What, "memory limit reached (--max-memory 32MiB") {
			t.Fatalf("%d workers: 3 million distinct names under a 32 MiB limit: problems %v, want the limit named", workers, tr.Problems.List)
		}
		if n := tr.Events.Len(); n < 10_000 || n >= 3_000_000 {
			t.Errorf("%d workers: %d events read before the limit", workers, n)
		}
	}
}

// simpleArrays are args values for skipSimpleArray, the fast path of
// skip: PyTorch's shapes and type lists, and near misses that it must
// leave to skip (fractions, missing or extra commas,
// escapes, non-ASCII text, deep nesting, a quote inside a string).
var simpleArrays = []string{
	`[[768, 1], []]`, `["c10::BFloat16", "Scalar"]`, `[ [ ] ]`, `[-0, -12, 0]`, "[\n 1,\t2\r]",
	`[1, 2.5]`, `[1e5]`, `[01]`, `[1,]`, `[,1]`, `[1 2]`, `[-]`, `["a" "b"]`, `["x\"y"]`, `["é"]`,
	`["a"b", 1]`, `[[[[[[[[[[1]]]]]]]]]]`, `[true, null]`, `[{"k": 1}]`, `[1, N/A]`, `[1]]`, `[[1]`,
}

// checkFastPaths reads input with the scanner's fast paths and without:
// the models, problems and their offsets included, must be the same.
func checkFastPaths(t testing.TB, name string, input []byte) {
	t.Helper()
	fast, err1 := Read(bytes.NewReader(input), name, Options{Workers: 1})
	fastPaths = false
	defer func() { fastPaths = true }()
	slow, err2 := Read(bytes.NewReader(input), name, Options{Workers: 1})
	sameRead(t, name+": the fast paths read it differently", slow, err2, fast, err1)
}

// The fast paths read exactly what the general paths read: simple arrays
// as an arg kept and as a member skipped, and the test traces.
func TestFastPaths(t *testing.T) {
	for _, a := range simpleArrays {
		input := `{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": {"dims": ` + a +
			`}, "junk": ` + a + `}, {"ph": "X", "name": "b", "ts": 2, "dur": 1}]}`
		checkFastPaths(t, a, []byte(input))
	}
	files, _ := filepath.Glob("testdata/*.txtar")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		for _, s := range parseTxtar(string(data)) {
			if s.name == "trace.json" {
				checkFastPaths(t, filepath.Base(file), []byte(s.body))
			}
		}
	}
}

// FuzzFastPaths checks that the scanner's fast paths (keys, simple
// arrays) read what the general paths read.
func FuzzFastPaths(f *testing.F) {
	for _, a := range simpleArrays {
		f.Add([]byte(`[{"ph": "X", "name": "a", "ts": 1, "args": {"dims": ` + a + `}}]`))
	}
	for _, input := range cutCases {
		f.Add([]byte(input))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFastPaths(t, "fuzz", data) })
}

// ws stops at the first byte that is not whitespace, whatever the mix and
// length of the run before it, and asks for more input when the window
// ends inside the run.
func TestWhitespaceRuns(t *testing.T) {
	for n := range 20 {
		for _, fill := range []string{" ", "\n", "\t ", " \r\n ", "\n  "} {
			run := strings.Repeat(fill, n)[:n]
			for _, tail := range []string{"x", ` "k": 1`} {
				w := window{buf: []byte(run + tail)}
				w.end = len(w.buf)
				w.ws()
				if want := len(run) + len(tail) - len(strings.TrimLeft(tail, " \t\r\n")); w.pos != want {
					t.Fatalf("%q: stopped at %d, want %d", run+tail, w.pos, want)
				}
			}
			w := window{buf: []byte(run)}
			w.end = len(w.buf)
			func() {
				defer func() {
					if r := recover(); r != errNeedMoreSpace {
						t.Fatalf("%q: recovered %v, want errNeedMoreSpace", run, r)
					}
				}()
				w.ws()
			}()
		}
	}
}
