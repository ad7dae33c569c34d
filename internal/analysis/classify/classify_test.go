package classify

import (
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
)

func TestComm(t *testing.T) {
	for _, tc := range []struct {
		name     string
		op, kern bool
		tb       bool
	}{
		{"nccl:all_reduce", true, false, true},
		{"nccl:all_to_all", true, false, false},
		{"nccl:_all_gather_base", true, false, false},
		{"gloo:broadcast", true, false, true},
		{"record_param_comms", true, false, false},
		{"_c10d_functional::all_reduce", true, false, false},
		{"c10d::allreduce_", true, false, false},
		{"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", false, true, false},
		{"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", false, true, false},
		{"void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", false, true, false},
		{"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", false, true, false},
		// beyond NCCL: DeepEP, NVSHMEM, symmetric memory (the kernel table)
		{"void deep_ep::intranode::combine<c10::BFloat16, 8, 768>(c10::BFloat16*, float*, int*)", false, true, false},
		{"nvshmemi_transfer_rma_kernel", false, true, false},
		{"void c10d::symmetric_memory::(anonymous namespace)::multimem_all_reduce_kernel<float, 16, 8>(float*, unsigned long)", false, true, false},
		{"aten::add", false, false, false},
		{"void at::native::vectorized_elementwise_kernel<4>", false, false, false},
	} {
		if got := IsCommOp(tc.name); got != tc.op {
			t.Errorf("IsCommOp(%q) = %v", tc.name, got)
		}
		if got := IsCommKernel(tc.name); got != tc.kern {
			t.Errorf("IsCommKernel(%q) = %v", tc.name, got)
		}
		if got := IsTBCommunication(tc.name); got != tc.tb {
			t.Errorf("IsTBCommunication(%q) = %v", tc.name, got)
		}
	}
}

func TestTensorCores(t *testing.T) {
	yes := []string{
		"volta_h884gemm_64x64_ldg8_nn", "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_nn",
		"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align4>",
		"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
		"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
		"void flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>",
		"fmha_cutlassF_f16_aligned_64x64_rf_sm80", "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
		"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<2>>>>",
		"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1", "attn_fwd",
		"igemm_fwd_gtcx2_nhwc_bf16_bx0_ex1_bt64x64x64_wt16x16x16_ws1x1_wr2x2_ta1x8x2x1_1x8x1x32_tb1x8x2x1_1x8x1x32",
		"_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1",
	}
	no := []string{"volta_sgemm_128x32_nt", "void at::native::vectorized_elementwise_kernel<4>",
		"void cudnn::bn_bw_1C11_kernel_new<float>", "triton_poi_fused_add_cos_sin_0",
		// FP32 FFMA xmma kernels and cuDNN scudnn convolutions run on CUDA cores
		"sm90_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__51_cublas",
		"cudnn_infer_volta_scudnn_128x64_relu_small_nn_v1"}
	for _, n := range yes {
		if of(n, true)&TensorCore == 0 {
			t.Errorf("%q: no TensorCore class", n)
		}
	}
	for _, n := range no {
		if of(n, true)&TensorCore != 0 {
			t.Errorf("%q: TensorCore class", n)
		}
	}
	if TBUsesTensorCores("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTT") {
		t.Error("the TB list does not know nvjet")
	}
	if !TBUsesTensorCores("volta_h884gemm_64x64_ldg8_nn") {
		t.Error("TB list should know h884")
	}
}

func TestRuntime(t *testing.T) {
	for name, want := range map[string]RuntimeClass{
		"cudaLaunchKernel": RuntimeLaunch, "cudaLaunchKernelExC": RuntimeLaunch, "cuLaunchKernel": RuntimeLaunch,
		"cudaGraphLaunch": RuntimeLaunch, "hipLaunchKernel": RuntimeLaunch, "hipExtModuleLaunchKernel": RuntimeLaunch,
		"hipModuleLaunchKernel": RuntimeLaunch, "cudaLaunchCooperativeKernel": RuntimeLaunch,
		"cudaStreamSynchronize": RuntimeSync, "cudaDeviceSynchronize": RuntimeSync, "cudaEventSynchronize": RuntimeSync,
		"hipDeviceSynchronize": RuntimeSync, "cuCtxSynchronize": RuntimeSync,
		"cudaStreamWaitEvent": RuntimeStreamWait, "cudaMemcpyAsync": RuntimeMemcpyAsync, "hipMemcpyWithStream": RuntimeMemcpyBlocking,
		"cudaMemcpy": RuntimeMemcpyBlocking, "cudaMemcpy2D": RuntimeMemcpyBlocking, "cudaMemsetAsync": RuntimeMemset,
		"cudaEventQuery": RuntimeOther, "cudaStreamIsCapturing": RuntimeOther, "cudaGetDevice": RuntimeOther,
		"aten::add": RuntimeOther, "cudaEventRecord": RuntimeOther,
	} {
		if got := RuntimeClassOf(name); got != want {
			t.Errorf("RuntimeClassOf(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDataLoader(t *testing.T) {
	for name, want := range map[string]bool{
		"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__":     true,
		"enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__":   true,
		"enumerate(DataLoader)#_MultiProcessingDataLoaderIter._next_data": false,
		"enumerate(DataPipe)#ShardingFilterIterDataPipe":                  false,
		"ProfilerStep#3": false,
	} {
		if IsDataLoader(name) != want {
			t.Errorf("IsDataLoader(%q) != %v", name, want)
		}
	}
	if !IsTBDataLoader("enumerate(DataPipe)#ShardingFilterIterDataPipe") {
		t.Error("TB counts DataPipe")
	}
}

func TestMemcpy(t *testing.T) {
	for name, want := range map[string]struct {
		d Direction
		h HostMem
	}{
		"Memcpy HtoD (Pinned -> Device)":   {HtoD, HostPinned},
		"Memcpy DtoH (Device -> Pageable)": {DtoH, HostPageable},
		"Memcpy DtoD (Device -> Device)":   {DtoD, HostNone},
		"Memcpy PtoP (Device -> Device)":   {PtoP, HostNone},
		"Memcpy HtoD (Managed -> Device)":  {HtoD, HostManaged},
		"Memcpy":                           {DirUnknown, HostNone},
	} {
		d, h := Memcpy(name)
		if d != want.d || h != want.h {
			t.Errorf("Memcpy(%q) = %v %v", name, d, h)
		}
	}
}

func TestTable(t *testing.T) {
	const js = `{"traceEvents":[
{"ph":"X","cat":"cpu_op","name":"nccl:all_reduce","pid":1,"tid":1,"ts":0,"dur":10},
{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":5}},
{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)","pid":0,"tid":7,"ts":4,"dur":5,"args":{"correlation":5}}
]}`
	tr, err := kineto.Read(strings.NewReader(js), "t.json", kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tb := For(tr)
	want := []Flag{CommOp | TBComm, Launch, CommKernel}
	for i, w := range want {
		if got := tb.Flags(tr.Events.Name[i]); got != w {
			t.Errorf("event %d %q: flags %b, want %b", i, tr.Name(i), got, w)
		}
	}
	if tb.Has(0, Comm) {
		t.Error("empty name classified")
	}
}

func TestIsBackward(t *testing.T) {
	for name, want := range map[string]bool{
		"autograd::engine::evaluate_function: AddmmBackward0": true,
		"AddmmBackward0":             true,
		"ConvolutionBackward1":       true,
		"MulBackward":                true,  // torch < 1.10
		"aten::convolution_backward": false, // the op the node calls, counted once through it
		"aten::addmm":                false,
		"Backwards_compat_op":        false,
	} {
		if got := IsBackward(name); got != want {
			t.Errorf("IsBackward(%q) = %v", name, got)
		}
	}
}
