package kernels_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/kernels"
	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Every rule classifies its own examples (so no earlier rule shadows it).
func TestRuleExamples(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range kernels.Rules {
		if seen[r.ID] {
			t.Errorf("rule %s twice", r.ID)
		}
		seen[r.ID] = true
		if len(r.Examples) == 0 || r.Evidence == "" {
			t.Errorf("rule %s: no example or no evidence", r.ID)
		}
		for _, ex := range r.Examples {
			if got := kernels.Classify(ex); got.Rule != r.ID {
				t.Errorf("rule %s example %.100q: matched by %q", r.ID, ex, got.Rule)
			}
		}
	}
}

// The cases the issue names, each with the name a library really emits.
func TestNamedCases(t *testing.T) {
	for _, c := range []struct {
		name      string
		family    kernels.Family
		unit      kernels.Unit
		precision string
	}{
		// FP32 on CUDA cores: never tensor cores.
		{"sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__51_cublas", kernels.GEMM, kernels.VectorCore, "fp32"},
		{"volta_sgemm_128x64_nn", kernels.GEMM, kernels.VectorCore, "fp32"},
		{"ampere_sgemm_32x32_sliced1x4_tn", kernels.GEMM, kernels.VectorCore, "fp32"},
		{"void cutlass::Kernel<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(cutlass_80_simt_sgemm_128x32_8x5_nn_align1::Params)", kernels.GEMM, kernels.VectorCore, "fp32"},
		// TF32 / bf16 tensor cores.
		{"sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize64x128x32_stage5_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn_infer", kernels.Conv, kernels.TensorCore, "tf32"},
		{"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_16x4_nn_align4::Params)", kernels.GEMM, kernels.TensorCore, "tf32"},
		{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", kernels.GEMM, kernels.TensorCore, "bf16"},
		// FP8 / MXFP4 on tensor cores.
		{"sm90_xmma_gemm_e4m3e4m3_e4m3f32_f32_tn_n_tilesize128x128x128_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", kernels.GEMM, kernels.TensorCore, "fp8"},
		{"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<4, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecialized>, cutlass::float_e4m3_t, cutlass::bfloat16_t> > >(Params)", kernels.GEMM, kernels.TensorCore, "fp8"},
		{"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1", kernels.GEMM, kernels.TensorCore, "fp4"},
		// AMD matrix cores.
		{"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1", kernels.GEMM, kernels.TensorCore, "bf16"},
		{"Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT16x16x128_MI16x16x1_SN_LDSB1_AFC1", kernels.GEMM, kernels.TensorCore, "fp32"},
		{"igemm_wrw_gtcx2_nhwc_bf16_bx0_ex1_bt64x64x64_wt32x32x8_ws1x1_wr1x1_ta1x4x1x4_1x16x1x16_tb1x4x1x4_1x16x1x16_gkgs", kernels.Conv, kernels.TensorCore, "bf16"},
		{"attn_fwd", kernels.Attention, kernels.TensorCore, ""},
		// cuDNN volta_scudnn: convolution on CUDA cores.
		{"cudnn_infer_volta_scudnn_128x64_relu_small_nn_v1", kernels.Conv, kernels.VectorCore, "fp32"},
		{"cudnn_train_volta_scudnn_128x128_stridedB_splitK_interior_nn_v1", kernels.Conv, kernels.VectorCore, "fp32"},
		// Communication beyond NCCL.
		{"void deep_ep::internode_ll::dispatch<false, 3, 7168>(void*, float*, int*, long*, void*, int*, void*, int*, void*, float const*, long const*, int*, int*, int, int, int, int, int, int, int, int, bool)", kernels.Communication, "", ""},
		{"nvshmemi_transfer_rma_kernel", kernels.Communication, "", ""},
		{"void c10d::symmetric_memory::(anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 8, 16>(c10::BFloat16*, unsigned long, unsigned long, unsigned int**, unsigned long, unsigned long)", kernels.Communication, "", ""},
		{"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", kernels.Communication, "", ""},
		// Not maths.
		{"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul> >(int, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul>)", kernels.Elementwise, "", "fp32"},
		{"void vllm::reshape_and_cache_flash_kernel<__hip_bfloat16, __hip_bfloat16, (vllm::Fp8KVCacheDataType)0>(__hip_bfloat16 const*)", kernels.Copy, "", "bf16"},
		// Unknown stays unknown.
		{"triton__0d1d2d3d", kernels.Unknown, "", ""},
		{"my_custom_kernel", kernels.Unknown, "", ""},
	} {
		got := kernels.Classify(c.name)
		if got.Family != c.family || got.Unit != c.unit || got.Precision != c.precision {
			t.Errorf("%.90s: got %s/%q/%q (rule %s), want %s/%q/%q", c.name, got.Family, got.Unit, got.Precision, got.Rule, c.family, c.unit, c.precision)
		}
	}
}

// Every kernel name in the real traces: the classification of each is
// kept in testdata/trace_kernels.tsv (regenerate with -update and review
// the diff), and none of the named families is misclassified.
func TestTraceKernels(t *testing.T) {
	dir := testutil.Traces(t)
	names := map[string]bool{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !(strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".json.gz")) || strings.Contains(p, "tb_plugin_unit") {
			return err
		}
		tr, err := kineto.ReadFile(p, kineto.Options{})
		if err != nil {
			t.Logf("skipping %s: %v", p, err)
			return nil
		}
		for i, k := range tr.Events.Kind {
			if k == trace.KindKernel {
				names[tr.Name(i)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 300 {
		t.Fatalf("only %d kernel names in %s", len(names), dir)
	}
	var rows []string
	unknown := 0
	for n := range names {
		k := kernels.Classify(n)
		if k.Family == kernels.Unknown {
			unknown++
		}
		rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t%.160s", cmpOr(string(k.Family), "UNKNOWN"), cmpOr(string(k.Unit), "-"), cmpOr(k.Precision, "-"), cmpOr(k.Rule, "-"), strings.ReplaceAll(n, "\t", " ")))
		lower := strings.ToLower(n)
		switch {
		case strings.HasPrefix(n, "nccl") && !strings.HasPrefix(n, "nccl:"):
			want(t, n, k, kernels.Communication, "")
		case strings.Contains(n, "sgemm") && !strings.Contains(n, "convolve"):
			want(t, n, k, kernels.GEMM, kernels.VectorCore)
		case strings.Contains(n, "scudnn"):
			want(t, n, k, kernels.Conv, kernels.VectorCore)
		case strings.HasPrefix(n, "Cijk_") && strings.Contains(n, "_MI"):
			want(t, n, k, kernels.GEMM, kernels.TensorCore)
		case strings.HasPrefix(n, "igemm_") && strings.Contains(n, "_gtcx"):
			want(t, n, k, kernels.Conv, kernels.TensorCore)
		case strings.Contains(n, "xmma") && !strings.Contains(n, "ffma"):
			if k.Unit != kernels.TensorCore {
				t.Errorf("%.100s: %+v, want tensor cores", n, k)
			}
		case strings.Contains(lower, "softmax"):
			want(t, n, k, kernels.Softmax, "")
		}
	}
	t.Logf("%d kernel names, %d unknown", len(names), unknown)
	sort.Strings(rows)
	testutil.Compare(t, "trace_kernels.tsv", []byte(strings.Join(rows, "\n")+"\n"))
}

func want(t *testing.T, name string, k kernels.Kind, f kernels.Family, u kernels.Unit) {
	t.Helper()
	if k.Family != f || k.Unit != u {
		t.Errorf("%.100s: %s/%q (rule %s), want %s/%q", name, k.Family, k.Unit, k.Rule, f, u)
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// docs/kernels.md is generated from the table.
func TestDocs(t *testing.T) {
	p := filepath.Join(testutil.RepoRoot(), "docs", "kernels.md")
	got := kernels.Markdown()
	if *testutil.Update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != got {
		t.Errorf("docs/kernels.md is not the generated table: BOTTLENECK_UPDATE=1 go test ./internal/analysis/kernels/")
	}
}

// Expert-parallel communication and low-precision GEMMs as their libraries
// name them (issue 32), each beside a near miss that must not be taken
// for it.
func TestExpertParallelAndLowPrecision(t *testing.T) {
	for _, c := range []struct {
		name      string
		family    kernels.Family
		unit      kernels.Unit
		precision string
	}{
		// DeepEP dispatch/combine (normal, low-latency, legacy), NCCL EP, NVSHMEM.
		{"void deep_ep::internode_ll::combine<(bool)0, (int)6144, (int)11, (int)4>(void *, void *, int *, void *, void const*, long const*, float const*, int const*, long const*, int*, int, int*, int, int, int, int, int, int, int, int, bool)", kernels.Communication, "", ""},
		{"void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(__nv_bfloat16*, float*, int*, int*, int*, int*, int, int, int, int, int)", kernels.Communication, "", ""},
		{"void deep_ep::legacy::internode_ll::dispatch<(bool)1, (bool)1, (int)7168>(void*, void*)", kernels.Communication, "", ""},
		{"void nccl_ep::internode_ll::combine<(bool)0,(int)7168,(int)9,(int)4,(ncclEpLayout_t)1>(void*)", kernels.Communication, "", ""},
		{"nvshmemi_init_array_kernel<int>(int*, int, int)", kernels.Communication, "", ""},
		// near misses: an MoE routing kernel and a GEMM that feeds the
		// dispatch are not communication
		{"void vllm::moe::topkGatingSoftmax<8, 256, 4, 16, int>(float const*, bool const*, float*, int, int*, int*, int, int, int)", kernels.Softmax, "", ""},
		// FP8 / FP4 GEMMs: cuBLASLt (nvjet qq, xmma e4m3), CUTLASS 3.x,
		// DeepGEMM, Triton (vLLM w8a8, triton_kernels MXFP4).
		{"nvjet_qqtst_128x256_128x6_2x1_2cta_v_bz_TNT", kernels.GEMM, kernels.TensorCore, "fp8"},
		{"nvjet_qqtst_128x256_128x6_2x2_2cta_h_bz_Avec32UE8M0_Bvec32UE8M0_TNT", kernels.GEMM, kernels.TensorCore, "fp8"},
		{"cutlass3x_sm100_tensorop_gemm_e4m3_e4m3_f32_bf16_bf16_64x120x128_1x1x1_0_tnn_align8_cpasync_1sm_epi_nosmem", kernels.GEMM, kernels.TensorCore, "fp8"},
		{"void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 160u, 128u, 0u, 64u, 9u, 4u, 128u, 128u, 1u, true, (deep_gemm::GemmType)1>(__nv_bfloat16*, float*, int*, unsigned int, CUtensorMap, CUtensorMap, CUtensorMap, CUtensorMap)", kernels.GEMM, kernels.TensorCore, "fp8"},
		{"void deep_gemm::sm100_fp8_fp4_gemm_1d1d_impl<(cute::UMMA::Major)0, (cute::UMMA::Major)0, (unsigned int)128>()", kernels.GEMM, kernels.TensorCore, "fp4"},
		{"_w8a8_block_fp8_matmul", kernels.GEMM, kernels.TensorCore, "fp8"},
		{"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1_swiglu", kernels.GEMM, kernels.TensorCore, "fp4"},
		// near misses: the same libraries' bf16 GEMMs are bf16, their
		// quantisation kernels are element-wise
		{"nvjet_sm90_tst_128x64_64x8_1x2_h_bz_bias_TNT", kernels.GEMM, kernels.TensorCore, "bf16"},
		{"nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", kernels.GEMM, kernels.TensorCore, "bf16"},
		{"void tensorrt_llm::kernels::fp8_blockscale_gemm::scale_1x128_kernel<__nv_bfloat16>(__nv_fp8_e4m3*, float*, __nv_bfloat16 const*, int, int)", kernels.Elementwise, "", "bf16"},
		// AMD: hipBLASLt FP8 (Tensile F8) and bf16 on the matrix cores
		{"Cijk_Alik_Bljk_F8BS_BH_Bias_HA_S_SAV_UserArgs_MT256x256x128_MI16x16x1_SN_LDSB1_AFC1", kernels.GEMM, kernels.TensorCore, "fp8"},
		{"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1", kernels.GEMM, kernels.TensorCore, "bf16"},
	} {
		got := kernels.Classify(c.name)
		if got.Family != c.family || got.Unit != c.unit || got.Precision != c.precision {
			t.Errorf("%.90s: got %s/%q/%q (rule %s), want %s/%q/%q", c.name, got.Family, got.Unit, got.Precision, got.Rule, c.family, c.unit, c.precision)
		}
		if k := kernels.Classify(c.name); k.FP32OnVectorCores() {
			t.Errorf("%.90s: counted as fp32 on CUDA cores", c.name)
		}
	}
}
