package diagnose

import (
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/kernels"
)

// Precision advice rests on two measurements: the precision the step's
// matmul/convolution kernels run in (the kernel table, docs/kernels.md) and
// the device (the trace's deviceProperties, else the run's torch devices,
// else its kernel names). A step whose GEMMs already run in FP8/FP4 is
// never told to lower its precision; a bf16/fp16 step is offered FP8 only
// on a device with FP8 matrix units, as an experiment; an AMD device is
// named ROCm's paths, never NVIDIA-only libraries.

// precisionMix is the matmul/convolution kernel time of a step by the
// precision the kernels compute in.
type precisionMix struct {
	low     float64 // fp8, fp4, int8
	half    float64 // bf16, fp16
	tf32    float64 // fp32 data on tensor cores
	full    float64 // fp32, fp64
	unknown float64 // the name does not say
}

// mathPrecision sums the kernel table's GEMM/convolution time by precision.
func (s *state) mathPrecision() precisionMix {
	var m precisionMix
	kt := s.in.Kernels
	if kt == nil {
		return m
	}
	for _, r := range kt.Ranked() {
		if !isDeviceWork(r.Name) {
			continue
		}
		k := kernels.Classify(r.Name)
		if k.Family != kernels.GEMM && k.Family != kernels.Conv {
			continue
		}
		switch k.Precision {
		case "fp8", "fp4", "int8":
			m.low += r.TotalUs
		case "bf16", "fp16":
			m.half += r.TotalUs
		case "tf32":
			m.tf32 += r.TotalUs
		case "fp32", "fp64":
			m.full += r.TotalUs
		default:
			m.unknown += r.TotalUs
		}
	}
	return m
}

// dominant names the precision class holding at least half of the
// matmul/convolution time ("low", "half", "tf32", "full"), or "".
func (m precisionMix) dominant() string {
	total := m.low + m.half + m.tf32 + m.full + m.unknown
	switch {
	case total <= 0:
		return ""
	case m.low >= total/2:
		return "low"
	case m.half >= total/2:
		return "half"
	case m.tf32 >= total/2:
		return "tf32"
	case m.full >= total/2:
		return "full"
	case m.tf32+m.full >= total/2:
		return "full"
	}
	return ""
}

// vendor is who made the device: "amd", "nvidia" or "" (unknown).
type deviceFacts struct {
	vendor string
	name   string
	// major, minor: the compute capability (NVIDIA), or the gfx
	// generation PyTorch reports for ROCm devices (9.4: gfx942, MI300);
	// major < 0 when unknown.
	major, minor int
}

// device says what the step ran on: the trace's deviceProperties first,
// then the devices torch listed in the run, then ROCm library names among
// the kernels (traces whose device names are empty).
func (s *state) hardware() deviceFacts {
	d := deviceFacts{major: -1}
	if g := s.in.GPU; g != nil {
		for _, dev := range g.Devices {
			if dev.Name != "" || dev.ComputeCapability != "" {
				d.name = dev.Name
				d.major, d.minor = parseCapability(dev.ComputeCapability)
				break
			}
		}
	}
	if d.name == "" && d.major < 0 {
		if r := s.in.Run; r != nil && r.Env != nil && len(r.Env.Devices) > 0 {
			d.name = r.Env.Devices[0].Name
			d.major, d.minor = parseCapability(r.Env.Devices[0].Capability)
		}
	}
	switch n := strings.ToLower(d.name); {
	case strings.Contains(n, "amd") || strings.Contains(n, "instinct") || strings.Contains(n, "radeon"):
		d.vendor = "amd"
	case strings.Contains(n, "nvidia") || strings.Contains(n, "tesla") || strings.Contains(n, "geforce") || strings.Contains(n, "quadro"):
		d.vendor = "nvidia"
	case d.name == "" && s.rocmKernels():
		d.vendor = "amd"
	case d.major >= 0:
		d.vendor = "nvidia" // a compute capability without a vendor's name
	}
	return d
}

// rocmKernelMarks are fragments only ROCm's libraries put in kernel
// names: Tensile (rocBLAS/hipBLASLt) solutions, Composable Kernel,
// MIOpen, rocPRIM and the HIP runtime's own kernels.
var rocmKernelMarks = []string{"Cijk_", "ck::", "ck_tile::", "igemm_fwd_gtc", "igemm_bwd_gtc", "igemm_wrw_gtc", "MIOpen", "miopen", "rocprim::", "__amd_rocclr_"}

func (s *state) rocmKernels() bool {
	kt := s.in.Kernels
	if kt == nil {
		return false
	}
	for _, r := range kt.Ranked() {
		for _, m := range rocmKernelMarks {
			if strings.Contains(r.Name, m) {
				return true
			}
		}
	}
	return false
}

// parseCapability reads "major.minor"; -1, 0 when it cannot.
func parseCapability(cc string) (major, minor int) {
	a, b, _ := strings.Cut(cc, ".")
	major, err := strconv.Atoi(a)
	if err != nil {
		return -1, 0
	}
	minor, _ = strconv.Atoi(b)
	return major, minor
}

// units names the device's vector and matrix units as its vendor does.
func (d deviceFacts) units() (vector, matrix string) {
	if d.vendor == "amd" {
		return "vector ALUs", "matrix cores"
	}
	return "CUDA cores", "tensor cores"
}

// atLeast reports whether the capability is known and at least major.minor.
func (d deviceFacts) atLeast(major, minor int) bool {
	return d.major > major || (d.major == major && d.minor >= minor)
}

// fp8 reports whether the device has FP8 matrix units, and whether that
// is known: NVIDIA from compute capability 8.9 (Ada, Hopper, Blackwell);
// AMD from MI300 (gfx94x, reported as 9.4) on, by capability or name.
func (d deviceFacts) fp8() (has, known bool) {
	switch d.vendor {
	case "nvidia":
		if d.major < 0 {
			return false, false
		}
		return d.atLeast(8, 9), true
	case "amd":
		n := strings.ToLower(d.name)
		for _, mi := range []string{"mi300", "mi308", "mi325", "mi350", "mi355"} {
			if strings.Contains(n, mi) {
				return true, true
			}
		}
		if d.major == 9 {
			return d.minor >= 4, true // gfx90a (MI200, 9.0) has no FP8; gfx94x/gfx95x do
		}
		if strings.Contains(n, "mi100") || strings.Contains(n, "mi200") || strings.Contains(n, "mi210") || strings.Contains(n, "mi250") {
			return false, true
		}
	}
	return false, false
}

// fewerBitsAdvice is the precision clause of the advice for matmuls that
// are the model's own work, with the separator the callers put before
// their next clause ("" when no lower precision fits the evidence):
//
//   - kernels off the step's path (kernelsOffPath): nothing;
//   - GEMMs already in FP8/FP4/int8: nothing: they are as low as the
//     hardware goes;
//   - bf16/fp16 GEMMs: FP8 as an experiment, on a device with FP8 units
//     (on AMD, ROCm's paths), nothing on one without;
//   - TF32 GEMMs (fp32 on tensor cores): bf16 autocast;
//   - fp32/fp64 GEMMs: bf16 autocast (TF32 too on NVIDIA from Ampere);
//   - precision unknown: "lower precision" where the device allows it.
func (s *state) fewerBitsAdvice() string {
	if s.kernelsOffPath() {
		return "" // faster kernels save nothing, and autocast's casts add host work (kernelsChange)
	}
	d := s.hardware()
	has, known := d.fp8()
	switch s.mathPrecision().dominant() {
	case "low":
		return ""
	case "half":
		switch {
		case known && !has:
			return ""
		case d.vendor == "amd":
			return "FP8 as an experiment (torchao float8 training or FP8 hipBLASLt GEMMs on MI300 and later; measure the step time and the loss)"
		case known:
			return "FP8 as an experiment (torchao float8 or Transformer Engine; measure the step time and the loss)"
		}
		return "FP8 as an experiment where the device has FP8 units (NVIDIA Ada/Hopper/Blackwell, AMD MI300; measure the step time and the loss)"
	case "tf32":
		return "bf16 autocast (the matmuls run in TF32 now)"
	case "full":
		switch {
		case d.vendor == "amd":
			return "bf16 autocast (the matmuls run in fp32 now)"
		case d.major >= 0 && !d.atLeast(8, 0):
			return "fp16 autocast with GradScaler (the matmuls run in fp32 now)"
		}
		return "bf16 autocast or TF32 (the matmuls run in fp32 now)"
	}
	if d.vendor == "amd" {
		return "lower precision (bf16 autocast; FP8 via torchao float8 on MI300 and later)"
	}
	return "lower precision"
}

// halfPrecisionChange is how fp32 matmuls get onto tensor/matrix cores on
// the device: bf16 autocast (fp16 with GradScaler before compute
// capability 8), and TF32 on NVIDIA from Ampere. ROCm's TF32 (xf32) is not
// offered: hipBLASLt has it on MI300 only, behind an environment variable.
func (s *state) halfPrecisionChange(d deviceFacts) string {
	switch {
	case d.vendor == "amd":
		return "torch.autocast(\"cuda\", dtype=torch.bfloat16) (ROCm runs bf16 on the matrix cores of MI100 and later)"
	case d.major >= 0 && !d.atLeast(8, 0):
		return "torch.autocast(\"cuda\", dtype=torch.float16) with torch.amp.GradScaler"
	}
	return "torch.autocast(\"cuda\", dtype=torch.bfloat16), or TF32: torch.set_float32_matmul_precision(\"high\")"
}

// attentionBackend names a faster fused-attention backend for the device:
// FlashAttention-3 is Hopper-only, ROCm has its own builds.
func (s *state) attentionBackend() string {
	d := s.hardware()
	switch {
	case d.vendor == "amd":
		return "ROCm's FlashAttention (the flash-attn build for ROCm, Composable Kernel or Triton backend, or AITER)"
	case d.major == 9:
		return "FlashAttention-3 / cuDNN attention on Hopper"
	case d.major >= 0:
		return "FlashAttention-2 or cuDNN attention (torch.nn.attention.sdpa_kernel)"
	}
	return "FlashAttention-3 / cuDNN attention on Hopper, FlashAttention-2 before it"
}

// generalKernelsChange is gpu.kernels' general change (rules.go) with its
// precision clause fitted to the measured kernels and device.
func (s *state) generalKernelsChange() string {
	return orTry(orTry(orTry("the device is the limit: reduce or fuse the top kernels (torch.compile)", s.fewerBitsAdvice()),
		"with low SM efficiency, a larger batch"), "a larger device")
}
