package kineto

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
)

// BenchmarkReadFile reads $BOTTLENECK_BENCH_TRACE (make one with
// cmd/bottleneck-gentrace, or use scripts/bench-analyze.sh for the
// end-to-end figures) and reports MB/s of uncompressed JSON.
func BenchmarkReadFile(b *testing.B) {
	path := os.Getenv("BOTTLENECK_BENCH_TRACE")
	if path == "" {
		b.Skip("set BOTTLENECK_BENCH_TRACE to a trace file")
	}
	for b.Loop() {
		tr, err := ReadFile(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(tr.BytesRead)
	}
}

// BenchmarkParse reads a generated 32 MB trace from memory, in one pass
// and with the workers: the parser's speed without disk or gzip.
func BenchmarkParse(b *testing.B) {
	var buf bytes.Buffer
	if _, err := tracegen.Generate(&buf, tracegen.Options{TargetBytes: 32 << 20, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	for _, workers := range []int{1, 0} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				if _, err := Read(bytes.NewReader(buf.Bytes()), "bench", Options{Workers: workers}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
