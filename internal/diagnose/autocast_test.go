package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
)

const autocastProgram = `import torch
m = torch.nn.Linear(8, 8)
for step in range(3):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = m(torch.randn(4, 8)).sum()
    loss.backward()
    with torch.autocast("cuda"):
        y = m(torch.randn(4, 8))
    with torch.amp.autocast(device_type='cpu', dtype=torch.float16):
        z = m(torch.randn(4, 8))
    with torch.cpu.amp.autocast():
        w = m(torch.randn(4, 8))

@torch.autocast("cpu")
def forward(x):
    return m(x)
`

// The autocast blocks on the CPU are found around a line, with their
// dtype (bfloat16 by default); a CUDA one and lines outside are not.
func TestCPUAutocastBlocks(t *testing.T) {
	src := filepath.Join(t.TempDir(), "train.py")
	if err := os.WriteFile(src, []byte(autocastProgram), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newSourceCache()
	for line, want := range map[int]int{5: 4, 6: 0, 8: 0, 10: 9, 12: 11, 16: 14, 2: 0} {
		if got := c.enclosing(src, line, &cpuAutocastBlock).Line; got != want {
			t.Errorf("line %d: in the block at %d, want %d", line, got, want)
		}
	}
}

// Autocast to bfloat16 on a CPU without bfloat16 instructions is named
// as the cause, with the block; on a CPU that has them, without the
// CPU's features, or with little of the compute under autocast, the
// usual change stays, and it suggests bf16 only where it would not be
// emulated.
func TestEmulatedAutocast(t *testing.T) {
	block := &AutocastBlock{File: "/home/u/train.py", Line: 4, DType: "bfloat16", Share: 0.25}
	for _, c := range []struct {
		name     string
		features []string
		block    *AutocastBlock
		want     string
		not      string
	}{
		{"AVX2 only", []string{"avx2"}, block, "leave autocast off on this machine", "bf16 autocast"},
		{"AMX", []string{"avx2", "amx_bf16", "avx512_bf16"}, block, "this CPU has bfloat16 instructions", "leave autocast off"},
		{"features unknown", nil, block, "on CPUs with AVX512-BF16/AMX", "leave autocast off"},
		{"little under autocast", []string{"avx2"}, &AutocastBlock{File: "/home/u/train.py", Line: 4, DType: "bfloat16", Share: 0.05}, "matmuls take 100% of the native time", "leave autocast off"},
		{"no autocast, AVX2", []string{"avx2"}, nil, "matmuls take 100% of the native time", "bf16"},
	} {
		s := &state{p: Default, step: 1000, steps: 1, share: map[Class]float64{CPUCompute: 0.9}, d: &Diagnosis{},
			py: &PythonEvidence{CPUAutocast: c.block},
			in: Analyses{Ops: &optable.OpTable{Rows: []optable.OpRow{{Name: "aten::mm", HostSelfUs: 900}}},
				Run: &RunEvidence{Env: &Env{CPUs: 2, NumThreads: 2, LocalRanks: 1, CPUFeatures: c.features}}}}
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
