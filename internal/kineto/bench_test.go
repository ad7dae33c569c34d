package kineto

import (
	"os"
	"testing"
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
