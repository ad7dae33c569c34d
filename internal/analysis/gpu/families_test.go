package gpu

import (
	"math"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// On the MI210 run the MIOpen xdlops convolutions are bf16 matrix-core
// work; the family rows add up to the kernel time, and their tensor rows
// to the tensor-core share.
func TestFamiliesMI210(t *testing.T) {
	r, err := Compute(tracetest.Load(t, tracetest.Golden["mi210_gpu_only"]), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range r.Devices {
		var pct, tensor float64
		n := 0
		for _, f := range d.Families {
			pct += f.Pct
			n += f.Kernels
			if f.Unit == "tensor" {
				tensor += f.TimeUs
			}
		}
		if n != d.KernelCount || math.Abs(pct-100) > 1e-6 || math.Abs(tensor-d.TensorCoreTimeUs) > 1e-6 {
			t.Errorf("device %d: %d kernels in families of %d, %.6f%%, tensor %.3f vs %.3f", d.Device, n, d.KernelCount, pct, tensor, d.TensorCoreTimeUs)
		}
		found := false
		for _, f := range d.Families {
			if f.Family == "conv" && f.Unit == "tensor" && f.Precision == "bf16" && f.Pct > 10 {
				found = true
			}
		}
		if d.KernelCount > 0 && !found {
			t.Errorf("device %d: no bf16 matrix-core convolution row: %+v", d.Device, d.Families)
		}
	}
}
