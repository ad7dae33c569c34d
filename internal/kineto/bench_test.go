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

// BenchmarkParse reads generated 32 MB traces from memory, in one pass
// and with the workers: the parser's speed without disk or gzip, on the
// generator's default shape, on kernels with per-launch args and on ops
// with names of their own.
func BenchmarkParse(b *testing.B) {
	for _, shape := range []struct {
		name string
		opt  tracegen.Options
	}{
		{"default", tracegen.Options{TargetBytes: 32 << 20, Seed: 1}},
		{"per-launch-args", tracegen.Options{TargetBytes: 32 << 20, Seed: 1, PerLaunchArgs: true}},
		{"distinct-names", tracegen.Options{TargetBytes: 32 << 20, Seed: 1, DistinctNames: true}},
		{"compact", tracegen.Options{TargetBytes: 32 << 20, Seed: 1, Layout: tracegen.LayoutCompact}},
		{"indent", tracegen.Options{TargetBytes: 32 << 20, Seed: 1, Layout: tracegen.LayoutIndent}},
	} {
		var buf bytes.Buffer
		if _, err := tracegen.Generate(&buf, shape.opt); err != nil {
			b.Fatal(err)
		}
		for _, workers := range []int{1, 0} {
			b.Run(fmt.Sprintf("%s/workers=%d", shape.name, workers), func(b *testing.B) {
				b.SetBytes(int64(buf.Len()))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Read(bytes.NewReader(buf.Bytes()), "bench", Options{Workers: workers}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
