package driver

import (
	"os"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/memlimit"
)

// BenchmarkAnalyze loads $BOTTLENECK_BENCH_TRACE and runs every analysis,
// as `bottleneck analyze` does, reporting MB/s of uncompressed JSON. It is
// the profiling entry point (with the binary's memory policy, which
// costs time) for the end-to-end path (-cpuprofile);
// scripts/bench-analyze.sh measures the binary itself, with peak RSS.
func BenchmarkAnalyze(b *testing.B) {
	path := os.Getenv("BOTTLENECK_BENCH_TRACE")
	if path == "" {
		b.Skip("set BOTTLENECK_BENCH_TRACE to a trace file (make one with cmd/bottleneck-gentrace)")
	}
	memlimit.Set(memlimit.Default())
	defer memlimit.Set(0)
	ios, _, _, _ := iostreams.Test()
	for b.Loop() {
		start := time.Now()
		res, _, err := Load(ios, []string{path}, true) // with the binary's memory policy, as analyze reads
		if err != nil || len(res.Traces) == 0 {
			b.Fatal(err, res.Failures)
		}
		read := time.Since(start)
		r := Build(res, read, DefaultOptions())
		b.SetBytes(r.BytesRead)
		b.ReportMetric(read.Seconds(), "read-s/op")
	}
}
