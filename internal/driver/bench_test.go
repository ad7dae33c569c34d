package driver

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/memlimit"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
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

// BenchmarkAnalyzeSteps runs analyze's pipeline (read, analyses and
// diagnosis, the text and JSON reports) on generated traces of
// about the same size (40,000 ops, 70-100 MB) cut into 17, 1,000 and
// 10,000 steps (tracegen's OpsPerStep loop), to find work that grows
// with the steps rather than the events: analysis time should stay flat
// from left to right. Set BOTTLENECK_BENCH_STEPS (comma-separated) for
// other counts. docs/performance.md, "Many steps", has the figures and the command.
func BenchmarkAnalyzeSteps(b *testing.B) {
	counts := []int{17, 1000, 10000}
	if s := os.Getenv("BOTTLENECK_BENCH_STEPS"); s != "" {
		counts = counts[:0]
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("BOTTLENECK_BENCH_STEPS: bad count %q", f)
			}
			counts = append(counts, n)
		}
	}
	const ops = 40000
	ios, _, _, _ := iostreams.Test()
	for _, steps := range counts {
		path := filepath.Join(b.TempDir(), "steps.json")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tracegen.Generate(f, tracegen.Options{Seed: 1, Steps: steps, OpsPerStep: max(1, ops/steps), WorldSize: 1}); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("steps=%d", steps), func(b *testing.B) {
			var build, render time.Duration
			for b.Loop() {
				res, _, err := Load(ios, []string{path}, true)
				if err != nil || len(res.Traces) == 0 {
					b.Fatal(err, res.Failures)
				}
				start := time.Now()
				r := Build(res, 0, DefaultOptions())
				build += time.Since(start)
				start = time.Now()
				for _, asJSON := range []bool{false, true} { // analyze --full, --json
					if err := Write(io.Discard, r, asJSON); err != nil {
						b.Fatal(err)
					}
				}
				render += time.Since(start)
				b.SetBytes(r.BytesRead)
			}
			b.ReportMetric(build.Seconds()/float64(b.N), "analyses-s/op")
			b.ReportMetric(float64(build.Nanoseconds())/float64(b.N)/float64(steps), "analyses-ns/step")
			b.ReportMetric(render.Seconds()/float64(b.N), "render-s/op")
		})
	}
}

// smallTraces are real traces of the sizes most users analyze, each a
// different shape (testdata/traces/README.md): a GPU-bound DDP ResNet
// (15 MB, 105k events, launch queue up to 1022), a CPU-bound NCCL job
// (9.8 MB) and a CPU-only rank (1 MB, no GPU events at all).
var smallTraces = []struct{ name, path string }{
	{"gpu-ddp-15MB", "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"},
	{"gpu-nccl-10MB", "hta/nccl_parser_config/nccl_data.json.gz"},
	{"cpu-only-1MB", "hta/rank_non_gpu/rank_non_gpu.json.gz"},
}

// BenchmarkAnalyzeSmall runs what `bottleneck analyze TRACE` runs (Analyze:
// read, every analysis, the diagnosis and the terminal's summary) on small
// real traces, uncompressed first so the figure is the analysis's, not
// gzip's. Issue 35's target for such traces: <= 30 ms and peak RSS <= 25
// MB plus the file (scripts/bench-small.sh measures the binary's RSS).
// -benchmem's B/op is the bytes allocated per analysis.
func BenchmarkAnalyzeSmall(b *testing.B) {
	dir := testutil.Traces(b)
	ios, _, _, _ := iostreams.Test()
	for _, tc := range smallTraces {
		path := filepath.Join(b.TempDir(), "trace.json")
		gunzip(b, filepath.Join(dir, tc.path), path)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st, err := Analyze(io.Discard, ios, []string{path}, DefaultOptions())
				if err != nil || st != Complete {
					b.Fatal(st, err)
				}
			}
			if fi, err := os.Stat(path); err == nil {
				b.SetBytes(fi.Size())
			}
		})
	}
}

func gunzip(b *testing.B, src, dst string) {
	b.Helper()
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		b.Fatal(err)
	}
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}
