package flops

import (
	"regexp"
	"strings"
)

// Peak is a device's dense peak TFLOP/s per dtype (0: not supported or
// unknown). TF32 is listed for reference; fp32 ops are compared with FP32.
type Peak struct {
	Name                         string
	FP64, FP32, TF32, FP16, BF16 float64
	FP8                          float64
}

// For returns the peak for a dtype from DtypeOf.
func (p Peak) For(dtype string) float64 {
	switch dtype {
	case "fp64":
		return p.FP64
	case "fp32":
		return p.FP32
	case "fp16":
		return p.FP16
	case "bf16":
		return p.BF16
	case "fp8":
		return p.FP8
	}
	return 0
}

// peaks: dense figures (without 2:4 sparsity) from the vendors' data
// sheets: NVIDIA V100 (SXM2 / PCIe), A100 (SXM, 40 and 80 GB alike), H100
// (SXM5 / PCIe), H200 (SXM), L4, A10, T4 data sheets; AMD Instinct MI210,
// MI250, MI250X, MI300X product pages (matrix-core figures; FP32 is the
// matrix FP32 rate). Sparse-only figures were halved.
var peaks = []struct {
	re *regexp.Regexp
	p  Peak
}{
	{regexp.MustCompile(`h100.*pcie`), Peak{"H100 PCIe", 25.6, 51.2, 378, 756, 756, 1513}},
	{regexp.MustCompile(`h100`), Peak{"H100 SXM", 33.5, 66.9, 494.7, 989.4, 989.4, 1978.9}},
	{regexp.MustCompile(`h200`), Peak{"H200", 33.5, 66.9, 494.7, 989.4, 989.4, 1978.9}},
	{regexp.MustCompile(`a100`), Peak{"A100", 9.7, 19.5, 156, 312, 312, 0}},
	{regexp.MustCompile(`v100.*pcie`), Peak{"V100 PCIe", 7, 14, 0, 112, 0, 0}},
	{regexp.MustCompile(`v100`), Peak{"V100 SXM2", 7.8, 15.7, 0, 125, 0, 0}},
	{regexp.MustCompile(`\bl4\b`), Peak{"L4", 0.49, 30.3, 60, 121, 121, 242}},
	{regexp.MustCompile(`\ba10\b`), Peak{"A10", 0.98, 31.2, 62.5, 125, 125, 0}},
	{regexp.MustCompile(`\bt4\b`), Peak{"T4", 0.25, 8.1, 0, 65, 0, 0}},
	{regexp.MustCompile(`mi300x`), Peak{"MI300X", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9}},
	{regexp.MustCompile(`mi250x`), Peak{"MI250X", 95.7, 95.7, 0, 383, 383, 0}},
	{regexp.MustCompile(`mi250`), Peak{"MI250", 90.5, 90.5, 0, 362.1, 362.1, 0}},
	{regexp.MustCompile(`mi210`), Peak{"MI210", 45.3, 45.3, 0, 181, 181, 0}},
}

// PeakFor finds the peak table entry for a deviceProperties name.
func PeakFor(device string) (Peak, bool) {
	l := strings.ToLower(device)
	for _, e := range peaks {
		if e.re.MatchString(l) {
			return e.p, true
		}
	}
	return Peak{}, false
}
