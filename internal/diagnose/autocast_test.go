package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
)

// Autocast to bfloat16 on a CPU without bfloat16 instructions is named
// as the cause, with the block; on a CPU that has them, without the
// CPU's features, or with little of the compute under autocast, the
// usual change stays, and it suggests bf16 only where it would not be
// emulated.
func TestEmulatedAutocast(t *testing.T) {
	block := &runevidence.AutocastBlock{File: "/home/u/train.py", Line: 4, DType: "bfloat16", Share: 0.25}
	for _, c := range []struct {
		name     string
		features []string
		block    *runevidence.AutocastBlock
		want     string
		not      string
	}{
		{"AVX2 only", []string{"avx2"}, block, "leave autocast off on this machine", "bf16 autocast"},
		{"AMX", []string{"avx2", "amx_bf16", "avx512_bf16"}, block, "this CPU has bfloat16 instructions", "leave autocast off"},
		{"features unknown", nil, block, "on CPUs with AVX512-BF16/AMX", "leave autocast off"},
		{"little under autocast", []string{"avx2"}, &runevidence.AutocastBlock{File: "/home/u/train.py", Line: 4, DType: "bfloat16", Share: 0.05}, "matmuls take 100% of the native time", "leave autocast off"},
		{"no autocast, AVX2", []string{"avx2"}, nil, "matmuls take 100% of the native time", "bf16"},
	} {
		s := &state{p: Default, step: 1000, steps: 1, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{},
			py: &runevidence.PythonEvidence{CPUAutocast: c.block},
			in: Analyses{Ops: &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::mm", HostSelfUs: 900}}},
				Run: &runevidence.RunEvidence{Env: &runevidence.Env{CPUs: 2, NumThreads: 2, LocalRanks: 1, CPUFeatures: c.features}}}}
		s.findings()
		var change string
		for _, f := range s.d.Findings {
			if f.Rule == "cpu.native" {
				change = f.AllChanges()
			}
		}
		if !strings.Contains(change, c.want) || strings.Contains(change, c.not) {
			t.Errorf("%s: change %q, want %q and not %q", c.name, change, c.want, c.not)
		}
	}
}
