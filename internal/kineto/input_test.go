package kineto

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/bottleneck-dev/bottleneck/internal/memlimit"
)

// The gzip trailer holds the size mod 4 GiB: the estimate picks the wrap
// nearest a typical trace compression ratio.
func TestGzipSizeHintWraps(t *testing.T) {
	const gib = int64(1) << 30
	for _, c := range []struct{ isize, compressed, want int64 }{
		{300 << 20, 25 << 20, 300 << 20},                               // no wrap
		{10 * gib % (4 * gib), 750 << 20, 10 * gib},                    // 10 GiB at 13.6x
		{(5 * gib) % (4 * gib), 5 * gib / 10, 5 * gib},                 // 5 GiB at 10x
		{(4*gib + 100<<20) % (4 * gib), 4 * gib / 15, 4*gib + 100<<20}, // just past a wrap
	} {
		if got := nearestWrap(c.isize, c.compressed*12); got != c.want {
			t.Errorf("isize %d, compressed %d: estimate %d, want %d", c.isize, c.compressed, got, c.want)
		}
	}
}

const smallTrace = `{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]}`

func gzipBytes(t *testing.T, parts ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	for _, p := range parts {
		zw.Write(p)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// gzipRepeat compresses prefix, n copies of unit and suffix without
// holding the uncompressed bytes.
func gzipRepeat(t *testing.T, prefix, unit string, n int, suffix string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(prefix))
	block := bytes.Repeat([]byte(unit), 1<<16)
	for i := 0; i < n; i += 1 << 16 {
		zw.Write(block[:min(len(block), (n-i)*len(unit))])
	}
	zw.Write([]byte(suffix))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Damage after the trace's end (a bad gzip checksum, bytes after the gzip
// stream) is reported; the events read before it are kept.
func TestGzipDamageAfterTheTraceIsReported(t *testing.T) {
	good := gzipBytes(t, []byte(smallTrace))
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-8] ^= 0xff // CRC-32 is the trailer's first word
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"bad checksum", badCRC, "read error after the end of the trace"},
		{"trailing garbage", append(bytes.Clone(good), "garbage!"...), "read error after the end of the trace"},
		{"second document", gzipBytes(t, []byte(smallTrace+"\n"+smallTrace)), "data after the end of the trace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := ReadFile(writeTemp(t, "trace.json.gz", c.data), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Events.Len() != 1 {
				t.Errorf("read %d events, want the 1 before the damage", tr.Events.Len())
			}
			if !strings.Contains(fmt.Sprint(tr.Problems.List), c.want) {
				t.Errorf("problems %v do not report %q", tr.Problems.List, c.want)
			}
		})
	}
	tr, err := ReadFile(writeTemp(t, "trace.json.gz", good), Options{})
	if err != nil || tr.Problems.Any() {
		t.Errorf("intact gzip: err %v, problems %v", err, tr.Problems.List)
	}
}

// Reading time grows linearly with a long unit or leading whitespace in a
// gzip input (it was quadratic: the window restarted after every chunk).
// Eight times the input must take well under the 64x of a quadratic
// reader (the bound leaves room for a loaded machine).
func TestGzipLongRunsReadInLinearTime(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	shapes := map[string]func(n int) []byte{
		"leading whitespace": func(n int) []byte {
			return gzipBytes(t, bytes.Repeat([]byte(" "), n), []byte(smallTrace))
		},
		"long metadata string": func(n int) []byte {
			return gzipBytes(t, []byte(`{"note": "`), bytes.Repeat([]byte("a"), n), []byte(`", `), []byte(smallTrace[1:]))
		},
	}
	for name, gen := range shapes {
		t.Run(name, func(t *testing.T) {
			small, large := writeTemp(t, "s.json.gz", gen(4<<20)), writeTemp(t, "l.json.gz", gen(32<<20))
			best := func(path string) time.Duration {
				b := time.Duration(math.MaxInt64)
				for range 5 {
					start := time.Now()
					if _, err := ReadFile(path, Options{}); err != nil {
						t.Fatal(err)
					}
					b = min(b, time.Since(start))
				}
				return b
			}
			ts, tl := best(small), best(large)
			if ratio := float64(tl) / float64(ts); ratio > 24 {
				t.Errorf("8x the input took %.1fx the time (%v vs %v): not linear", ratio, tl, ts)
			}
		})
	}
}

// withMemoryLimit sets the process's hard memory limit for one test.
func withMemoryLimit(t *testing.T, limit int64) {
	memlimit.Set(limit)
	t.Cleanup(func() {
		memlimit.Set(0)
		debug.SetMemoryLimit(math.MaxInt64)
	})
}

// Gzip bombs stay within --max-memory: whitespace is not held at all, nor
// is a huge value that is not kept (see also bound_test.go).
func TestGzipBombsStayUnderTheMemoryLimit(t *testing.T) {
	withMemoryLimit(t, 64<<20)
	spaces := writeTemp(t, "spaces.json.gz", gzipRepeat(t, "", " \n", 128<<20, smallTrace))
	before := allocated()
	tr, err := ReadFile(spaces, Options{})
	if err != nil {
		t.Fatalf("256 MB of whitespace before a trace: %v", err)
	}
	if tr.Events.Len() != 1 || tr.Problems.Any() {
		t.Fatalf("256 MB of whitespace before a trace: %d events, problems %v", tr.Events.Len(), tr.Problems.List)
	}
	if alloc := allocated() - before; alloc > 16<<20 {
		t.Errorf("256 MB of whitespace: reading allocated %d MiB", alloc>>20)
	}

	huge := writeTemp(t, "string.json.gz", gzipRepeat(t, `{"note": "`, "a", 256<<20, `", `+smallTrace[1:]))
	before = allocated()
	tr, err = ReadFile(huge, Options{})
	if err != nil || tr.Events.Len() != 1 || len(tr.Problems.List) != 1 || tr.Problems.List[0].What != "metadata too large" {
		t.Fatalf("a 256 MB string in an unknown key under a 64 MiB limit: err %v, want the event read and the key left out", err)
	}
	if alloc := allocated() - before; alloc > 64<<20 {
		t.Errorf("a 256 MB string: reading allocated %d MiB under a 64 MiB limit", alloc>>20)
	}
}

func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// uncompressed returns the bytes of the trace file at path, inflated.
func uncompressed(path string) ([]byte, error) {
	in, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer in.close()
	if in.mapped != nil {
		return bytes.Clone(in.mapped), nil
	}
	return io.ReadAll(in.r)
}
