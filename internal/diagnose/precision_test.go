package diagnose

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
)

// gpuFindingsFor runs the GPU rules on a step that is all kernels, with
// the given kernels sharing its kernel time.
func gpuFindingsFor(rows ...optable.KernelRow) []Finding {
	var total float64
	for _, r := range rows {
		total += r.TotalUs
	}
	for i := range rows {
		rows[i].TotalPct = 100 * rows[i].TotalUs / total
	}
	s := &state{p: Default, device: true, step: total, steps: 1, share: map[Class]float64{GPUCompute: 0.9}, ev: map[Class][]Evidence{},
		avg: breakdown.Costs{KernelUs: total, TotalUs: total},
		in:  Analyses{Kernels: &optable.KernelTable{Rows: rows, TotalRows: len(rows), TotalUs: total}},
		d:   &Diagnosis{Findings: []Finding{}}}
	applyRules(s, "gpu.")
	return s.d.Findings
}

func findRule(fs []Finding, id string) *Finding {
	for i := range fs {
		if fs[i].Rule == id {
			return &fs[i]
		}
	}
	return nil
}

// FP32 GEMMs on CUDA cores get the TF32/bf16 advice, including the xmma
// kernels whose name says ffma (once counted as tensor-core work) and
// cuDNN's scudnn convolutions.
func TestPrecisionFiresForFP32OnCUDACores(t *testing.T) {
	for _, name := range []string{
		"sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__51_cublas",
		"volta_sgemm_128x64_nn",
		"cudnn_infer_volta_scudnn_128x64_relu_small_nn_v1",
	} {
		fs := gpuFindingsFor(optable.KernelRow{Name: name, TotalUs: 600}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 400})
		f := findRule(fs, "gpu.precision")
		if f == nil {
			t.Errorf("%.60s: no gpu.precision finding", name)
			continue
		}
		if len(f.Where) != 1 || f.Where[0].Name != name || !strings.Contains(f.Where[0].Note, "on CUDA cores (fp32)") {
			t.Errorf("%.60s: where %+v", name, f.Where)
		}
		if !strings.Contains(f.AllChanges(), "bfloat16") || !strings.Contains(f.AllChanges(), "set_float32_matmul_precision") {
			t.Errorf("%.60s: change %q", name, f.AllChanges())
		}
	}
}

// Kernels already on tensor cores (FP8, MXFP4, bf16, TF32, AMD MFMA),
// matrix-vector kernels and GEMMs whose math unit the table does not know
// never get "use bf16".
func TestPrecisionSilent(t *testing.T) {
	for _, name := range []string{
		"sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
		"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1",
		"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
		"sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_stage5_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer",
		"Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB1_AFC1",
		"igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt64x64x64_wt16x16x16_ws1x1_wr2x2_ta1x8x2x1_1x8x1x32_tb1x8x2x1_1x8x1x32",
		"void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 2, 2, false, false>(float)",
		"some_vendor_gemm_kernel",
	} {
		fs := gpuFindingsFor(optable.KernelRow{Name: name, TotalUs: 900}, optable.KernelRow{Name: "triton_poi_fused_add_0", TotalUs: 100})
		if f := findRule(fs, "gpu.precision"); f != nil {
			t.Errorf("%.60s: gpu.precision fired: %s", name, f.Title)
		}
		if findRule(fs, "gpu.kernels") == nil {
			t.Errorf("%.60s: no gpu.kernels finding (the test's step is not GPU-bound)", name)
		}
	}
}
