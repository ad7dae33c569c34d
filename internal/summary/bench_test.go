package summary_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/summary"
	"github.com/bottleneck-dev/bottleneck/internal/summary/simgen"
)

// BenchmarkMerge: decode, add and report the summaries of a job of 1,000
// steps per rank, on one core (merge reads files on every CPU). 10,000
// ranks are 1,000 simulated ranks' summaries fed 10 times under new rank
// numbers: the same bytes to decode and records to keep, without holding
// 450 MB of generated JSON. held-MB is the heap the job and its report
// hold after a GC: linear in ranks.
//
//	go test ./internal/summary/ -run '^$' -bench Merge -benchtime 1x
func BenchmarkMerge(b *testing.B) {
	const steps = 1000
	sums := simgen.Generate(simgen.Job{Ranks: 1000, Steps: steps, Seed: 5,
		Stragglers: []simgen.Straggler{{Rank: 17, Kind: simgen.Data, StrengthPct: 10}}})
	encoded := make([][]byte, len(sums))
	var total int
	for i, s := range sums {
		var buf bytes.Buffer
		if err := summary.Write(&buf, s); err != nil {
			b.Fatal(err)
		}
		encoded[i] = buf.Bytes()
		total += buf.Len()
	}
	sums = nil
	for _, copies := range []int{1, 10} {
		ranks := copies * len(encoded)
		b.Run(fmt.Sprintf("ranks=%d", ranks), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(copies * total))
			var before runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var held uint64
			for range b.N {
				job := summary.NewJob()
				for c := range copies {
					for i, e := range encoded {
						got, err := summary.Decode(bytes.NewReader(e), "bench")
						if err != nil {
							b.Fatal(err)
						}
						got[0].Rank = c*len(encoded) + i
						got[0].WorldSize = ranks
						if err := job.Add(got[0]); err != nil {
							b.Fatal(err)
						}
					}
				}
				rep := job.Report(0)
				b.StopTimer()
				var after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&after)
				held = after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
				if len(rep.Stragglers) == 0 {
					b.Fatal("no straggler found")
				}
				runtime.KeepAlive(job)
				b.StartTimer()
			}
			b.ReportMetric(float64(held)/(1<<20), "held-MB")
		})
	}
}
