package flops

import (
	"regexp"
	"strings"
	"sync"
)

// Peak is a device's dense peak TFLOP/s per dtype (0: not supported or
// unknown) and its memory bandwidth. TF32 is listed for reference; fp32
// ops are compared with FP32.
type Peak struct {
	Name                         string
	FP64, FP32, TF32, FP16, BF16 float64
	FP8                          float64
	BandwidthGBs                 float64 // device memory (HBM/GDDR), GB/s
	HostLinkGBs                  float64 // host link, one direction, GB/s (PCIe x16 of the part's generation; GB200: NVLink-C2C)
}

// For returns the peak for a dtype from classify.Dtype.
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

// forRate is the peak for dtype at an achieved rate: fp32 work faster than
// the CUDA-core fp32 peak ran on TF32 tensor cores, whose peak applies.
func (p Peak) forRate(dtype string, tflops float64) (peak float64, tf32 bool) {
	peak = p.For(dtype)
	if dtype == "fp32" && peak > 0 && tflops > peak && p.TF32 > 0 {
		return p.TF32, true
	}
	return peak, false
}

// peaks: dense figures (without 2:4 sparsity) from the vendors' data
// sheets: NVIDIA V100 (SXM2 / PCIe), A100 (SXM, 40 and 80 GB alike), H100
// (SXM5 / PCIe), H200 (SXM), L4, L40S, A10, T4 data sheets, B200 / GB200
// (HGX 1000 W and GB200 1200 W configurations), GeForce RTX 3090 / 4090 /
// 5090 (Ampere GA102, Ada and Blackwell GeForce specifications; tensor
// rates with FP32 accumulate, as PyTorch uses); AMD Instinct MI210, MI250,
// MI250X, MI300X, MI325X product pages (matrix-core figures; FP32 is the
// matrix FP32 rate). Sparse-only figures were halved. Memory bandwidth from
// the same data sheets (A100: the 40 GB part's 1555 GB/s unless the name
// says 80GB, 2039 GB/s for SXM). A 0 is a figure no source gave (see
// docs/metrics.md: GH200 is left out, RTX 3090/5090 tensor rates too).
// The host link is the PCIe generation of the same data sheets at x16, one
// direction (Gen3 15.75, Gen4 31.5, Gen5 63 GB/s); GB200's Grace link is
// NVLink-C2C (900 GB/s both ways).
// Consumer names are anchored at the end so that "RTX 3090 Ti" or
// "RTX 4090 Laptop GPU" (other clocks and memory) do not borrow a figure.
//
// Compiled at the first lookup, not at each start of the binary: CPU
// runs, and commands that read no trace, look none up.
var peaks = sync.OnceValue(func() []devicePeak {
	return []devicePeak{
		{regexp.MustCompile(`h100.*pcie`), Peak{"H100 PCIe", 25.6, 51.2, 378, 756, 756, 1513, 2000, 63}},
		{regexp.MustCompile(`h100`), Peak{"H100 SXM", 33.5, 66.9, 494.7, 989.4, 989.4, 1978.9, 3350, 63}},
		// \b: "GH200" (other memory) is not an H200.
		{regexp.MustCompile(`\bh200`), Peak{"H200", 33.5, 66.9, 494.7, 989.4, 989.4, 1978.9, 4800, 63}},
		{regexp.MustCompile(`a100.*80gb`), Peak{"A100 80GB", 9.7, 19.5, 156, 312, 312, 0, 2039, 31.5}},
		{regexp.MustCompile(`a100`), Peak{"A100", 9.7, 19.5, 156, 312, 312, 0, 1555, 31.5}},
		{regexp.MustCompile(`v100.*pcie`), Peak{"V100 PCIe", 7, 14, 0, 112, 0, 0, 900, 15.75}},
		{regexp.MustCompile(`v100`), Peak{"V100 SXM2", 7.8, 15.7, 0, 125, 0, 0, 900, 15.75}},
		{regexp.MustCompile(`\bgb200`), Peak{"GB200", 45, 90, 1250, 2500, 2500, 5000, 8000, 450}},
		{regexp.MustCompile(`\bb200`), Peak{"B200", 40, 80, 1100, 2250, 2250, 4500, 8000, 63}},
		{regexp.MustCompile(`\bl40s\b`), Peak{"L40S", 0, 91.6, 183, 362.05, 362.05, 733, 864, 31.5}},
		{regexp.MustCompile(`rtx 5090$`), Peak{"RTX 5090", 0, 105.2, 0, 0, 0, 0, 1792, 63}},
		{regexp.MustCompile(`rtx 4090$`), Peak{"RTX 4090", 1.29, 82.58, 82.58, 165.2, 165.2, 330.3, 1008, 31.5}},
		{regexp.MustCompile(`rtx 3090$`), Peak{"RTX 3090", 0, 35.6, 0, 0, 0, 0, 936, 31.5}},
		{regexp.MustCompile(`\bl4\b`), Peak{"L4", 0.49, 30.3, 60, 121, 121, 242, 300, 31.5}},
		{regexp.MustCompile(`\ba10\b`), Peak{"A10", 0.98, 31.2, 62.5, 125, 125, 0, 600, 31.5}},
		{regexp.MustCompile(`\bt4\b`), Peak{"T4", 0.25, 8.1, 0, 65, 0, 0, 320, 15.75}},
		{regexp.MustCompile(`mi325x`), Peak{"MI325X", 0, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 6000, 63}},
		{regexp.MustCompile(`mi300x`), Peak{"MI300X", 163.4, 163.4, 653.7, 1307.4, 1307.4, 2614.9, 5300, 63}},
		{regexp.MustCompile(`mi250x`), Peak{"MI250X", 95.7, 95.7, 0, 383, 383, 0, 3277, 31.5}},
		{regexp.MustCompile(`mi250`), Peak{"MI250", 90.5, 90.5, 0, 362.1, 362.1, 0, 3277, 31.5}},
		{regexp.MustCompile(`mi210`), Peak{"MI210", 45.3, 45.3, 0, 181, 181, 0, 1638, 31.5}},
	}
})

type devicePeak struct {
	re *regexp.Regexp
	p  Peak
}

// PeakFor finds the peak table entry for a deviceProperties name.
func PeakFor(device string) (Peak, bool) {
	l := strings.ToLower(strings.TrimSpace(device))
	for _, e := range peaks() {
		if e.re.MatchString(l) {
			return e.p, true
		}
	}
	return Peak{}, false
}
