package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
)

// kernelsChangeOn runs the GPU rules on a step that is all kernels, on a
// device as its trace's deviceProperties name it, and returns gpu.kernels'
// and gpu.precision's changes ("" when the rule stayed silent).
func kernelsChangeOn(t *testing.T, device, cc string, rows ...optable.KernelRow) (kernelsChange, precisionChange string) {
	t.Helper()
	s := gpuFindingsOn(device, cc, rows...)
	if f := findRule(s.d.Findings, "gpu.kernels"); f != nil {
		kernelsChange = f.AllChanges()
	} else {
		t.Fatalf("no gpu.kernels finding: %+v", s.d.Findings)
	}
	if f := findRule(s.d.Findings, "gpu.precision"); f != nil {
		precisionChange = f.AllChanges()
	}
	return kernelsChange, precisionChange
}

// gpuFindingsOn runs the GPU rules on a step that is all kernels, on a
// device as its trace's deviceProperties name it.
func gpuFindingsOn(device, cc string, rows ...optable.KernelRow) *state {
	var total float64
	for _, r := range rows {
		total += r.TotalUs
	}
	for i := range rows {
		rows[i].TotalPct = 100 * rows[i].TotalUs / total
	}
	s := &state{p: Default, device: true, step: total, steps: 1, share: map[Class]float64{GPUCompute: 0.9}, ev: map[Class][]Evidence{},
		avg: breakdown.Costs{KernelUs: total, TotalUs: total},
		in: Analyses{Kernels: &optable.KernelTable{Rows: rows, TotalRows: len(rows), TotalUs: total},
			GPU: &gpu.Result{Devices: []gpu.Device{{Name: device, ComputeCapability: cc, KernelCount: len(rows)}}}},
		d: &Diagnosis{Findings: []Finding{}}}
	applyRules(s, "gpu.")
	return s
}

// Device names and capabilities as the traces of testdata/traces record
// them (tracelens/h100, tracelens/mi300, tracelens/mi210, hta/nccl_parser_config).
const (
	h100  = "NVIDIA H100 80GB HBM3"
	mi300 = "AMD Instinct MI300X VF"
	mi210 = "AMD Instinct MI210"
	a100  = "NVIDIA A100-PG509-200"
)

// GEMMs that already run in FP8/FP4 are never told to lower their
// precision, whichever library named them.
func TestNoLowerPrecisionForFP8(t *testing.T) {
	for _, name := range []string{
		"nvjet_qqtst_128x256_128x6_2x1_2cta_v_bz_TNT",
		"sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
		"void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 160u, 128u, 0u, 64u, 9u, 4u, 128u, 128u, 1u, true, (deep_gemm::GemmType)1>(__nv_bfloat16*, float*, int*, unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)",
		"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1",
		"_w8a8_block_fp8_matmul",
		"cutlass3x_sm100_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_64x120x128_1x1x1_0_tnn_align8_cpasync_1sm_epi_nosmem",
	} {
		change, prec := kernelsChangeOn(t, h100, "9.0", optable.KernelRow{Name: name, TotalUs: 900}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 100})
		for _, bad := range []string{"lower precision", "FP8", "bf16 autocast", "bfloat16"} {
			if strings.Contains(change, bad) {
				t.Errorf("%.60s: gpu.kernels says %q: %s", name, bad, change)
			}
		}
		if prec != "" {
			t.Errorf("%.60s: gpu.precision fired: %s", name, prec)
		}
	}
}

// The control: bf16 GEMMs (the kernel of the tracelens H100 Qwen trace,
// and the nvjet kernels of testdata/rundir/h100/compile_gpu) on an H100
// are offered FP8, as an experiment; on an A100 (no FP8 units) they are
// not; on an MI300 FP8 is offered through ROCm's paths, on an MI210 not.
func TestFP8OfferedWhereTheDeviceHasIt(t *testing.T) {
	bf16 := []string{
		"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
		"nvjet_sm90_tst_128x64_64x8_1x2_h_bz_bias_TNT",
	}
	for _, name := range bf16 {
		change, _ := kernelsChangeOn(t, h100, "9.0", optable.KernelRow{Name: name, TotalUs: 900}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 100})
		if !strings.Contains(change, "FP8 as an experiment") || !strings.Contains(change, "Transformer Engine") || !strings.Contains(change, "measure") {
			t.Errorf("H100, %.50s: want FP8 as an experiment: %s", name, change)
		}
		change, _ = kernelsChangeOn(t, a100, "8.0", optable.KernelRow{Name: name, TotalUs: 900}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 100})
		if strings.Contains(change, "FP8") || strings.Contains(change, "lower precision") {
			t.Errorf("A100, %.50s: FP8 offered on a device without it: %s", name, change)
		}
	}
	amd := "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1"
	change, _ := kernelsChangeOn(t, mi300, "9.4", optable.KernelRow{Name: amd, TotalUs: 900}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 100})
	if !strings.Contains(change, "FP8 as an experiment") || !strings.Contains(change, "hipBLASLt") || strings.Contains(change, "Transformer Engine") {
		t.Errorf("MI300 bf16: want FP8 through ROCm's paths: %s", change)
	}
	change, _ = kernelsChangeOn(t, mi210, "9.0", optable.KernelRow{Name: amd, TotalUs: 900}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 100})
	if strings.Contains(change, "FP8") || strings.Contains(change, "lower precision") {
		t.Errorf("MI210 bf16: FP8 offered on a device without it: %s", change)
	}
}

// On AMD devices no advice names NVIDIA-only paths: fp32 GEMMs on the
// vector ALUs get bf16 autocast (not TF32's switch), fused attention gets
// ROCm's FlashAttention, never FlashAttention-3 or cuDNN.
func TestROCmAdviceNamesROCm(t *testing.T) {
	fp32 := "Cijk_Ailk_Bljk_SB_MT64x64x8_SN_1LDSB0_APM1_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASLT_ASAE01_ASCE01_ASEM1_AAC0_BL1_BS1_DTL0_DTVA0_DTVB0_EPS1_FL0_GRVW4_GSU1"
	change, prec := kernelsChangeOn(t, mi300, "9.4", optable.KernelRow{Name: fp32, TotalUs: 900}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 100})
	for _, c := range []string{change, prec} {
		if !strings.Contains(c, "bfloat16") || strings.Contains(c, "set_float32_matmul_precision") || strings.Contains(c, "Transformer Engine") {
			t.Errorf("MI300 fp32 GEMMs: %s", c)
		}
	}
	if !strings.Contains(change, "on vector ALUs") || strings.Contains(change, "CUDA cores") {
		t.Errorf("MI300 fp32 GEMMs named by NVIDIA's units: %s", change)
	}
	attn := "void ck_tile::kentry<ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVSAsync<ck_tile::bf16_t> > >()"
	change, _ = kernelsChangeOn(t, mi300, "9.4", optable.KernelRow{Name: attn, TotalUs: 900}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 100})
	if !strings.Contains(change, "ROCm") || strings.Contains(change, "FlashAttention-3") || strings.Contains(change, "cuDNN") {
		t.Errorf("MI300 attention: %s", change)
	}
	// the control: on an H100 the same family of advice names Hopper's backends
	change, _ = kernelsChangeOn(t, h100, "9.0", optable.KernelRow{Name: "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)", TotalUs: 900}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 100})
	if !strings.Contains(change, "FlashAttention-3") {
		t.Errorf("H100 attention: %s", change)
	}
}

// A ROCm trace whose device names are empty (tracelens/vllm_decode_full)
// is known as AMD from its kernels; a Blackwell capability ("10.0") is not
// read as older than Ampere.
func TestDeviceFacts(t *testing.T) {
	s := &state{in: Analyses{GPU: &gpu.Result{Devices: []gpu.Device{{ComputeCapability: "9.4"}}},
		Kernels: &optable.KernelTable{Rows: []optable.KernelRow{{Name: "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1", TotalUs: 1}}, TotalRows: 1, TotalUs: 1}}}
	if d := s.hardware(); d.vendor != "amd" {
		t.Errorf("empty name, Tensile kernels: %+v", d)
	}
	b := deviceFacts{vendor: "nvidia", name: "NVIDIA B200", major: 10, minor: 0}
	if has, known := b.fp8(); !has || !known || !b.atLeast(8, 0) {
		t.Errorf("B200: fp8 %v/%v", has, known)
	}
	if has, known := (deviceFacts{vendor: "nvidia", major: 8, minor: 6}).fp8(); has || !known {
		t.Errorf("sm86: fp8 %v/%v", has, known)
	}
}

// FP32 GEMMs on CUDA cores of an NVIDIA device with TF32 tensor cores
// (8.0 and later): TF32 leads, a change run --verify=numerics can try;
// not on a V100 (no TF32) or an AMD device, nor with the device unknown.
func TestPrecisionLeadsWithTF32(t *testing.T) {
	for _, c := range []struct {
		name, device, cc string
		tf32             bool
	}{
		{"h100", h100, "9.0", true},
		{"a100", a100, "8.0", true},
		{"v100", "Tesla V100-SXM2-16GB", "7.0", false},
		{"mi210", mi210, "9.0", false},
		{"unknown", "", "", false},
	} {
		s := gpuFindingsOn(c.device, c.cc, optable.KernelRow{Name: "volta_sgemm_128x64_nn", TotalUs: 600}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 400})
		f := findRule(s.d.Findings, "gpu.precision")
		if f == nil {
			t.Fatalf("%s: no gpu.precision finding", c.name)
		}
		lead := strings.HasPrefix(f.Change, "run the fp32 matmuls and convolutions on tensor cores in TF32")
		if lead != c.tf32 || (f.Try["tf32"] == "true") != c.tf32 {
			t.Errorf("%s: TF32 leads %v, try %v: want %v: %s", c.name, lead, f.Try, c.tf32, f.AllChanges())
		}
	}
}
