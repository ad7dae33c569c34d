package critpath

import (
	"bytes"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
)

// BenchmarkCompute finds the critical path of the first step of a
// generated trace (its graph is the analysis's scratch).
func BenchmarkCompute(b *testing.B) {
	var buf bytes.Buffer
	if _, err := tracegen.Generate(&buf, tracegen.Options{TargetBytes: 32 << 20, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	tr, err := kineto.Read(&buf, "generated.json", kineto.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := Compute(tr, Options{}); r.Error != "" {
			b.Fatal(r.Error)
		}
	}
}
