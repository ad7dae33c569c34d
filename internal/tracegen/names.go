package tracegen

// Name tables. Every event name the generator writes lives in the package
// table `names`, already JSON-escaped (none of them need escaping), and is
// referred to by a uint16 index so that records stay small. Kernel names
// are copied from real torch 2.x traces (tracelens h100, HTA test data):
// many are 300-800 characters of C++ template noise, which is exactly what
// makes real traces large and what a reader's string handling must survive.

var names []string

func nm(s string) uint16 {
	names = append(names, s)
	return uint16(len(names) - 1)
}

// Event names written with a numeric suffix (rec.num >= 0).
var (
	nProfilerStep = nm("ProfilerStep#")
	nModBlock     = nm("nn.Module: TransformerBlock_")
	nModLN        = nm("nn.Module: LayerNorm_")
	nModAttn      = nm("nn.Module: CausalSelfAttention_")
	nModMLP       = nm("nn.Module: MLP_")
	nModLinear    = nm("nn.Module: Linear_")
	nModGELU      = nm("nn.Module: GELU_")
	nModDropout   = nm("nn.Module: Dropout_")
	nModEmbedding = nm("nn.Module: Embedding_")
	nModModel     = nm("nn.Module: GPT_")
	nModDDP       = nm("nn.Module: DistributedDataParallel_")
)

// Annotations (user_annotation / gpu_user_annotation).
var (
	nDataLoader = nm("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")
	nZeroGrad   = nm("Optimizer.zero_grad#AdamW.zero_grad")
	nOptStep    = nm("Optimizer.step#AdamW.step")
	nAllReduce  = nm("nccl:all_reduce")
	nDDPForward = nm("DistributedDataParallel.forward")
)

// CPU ops.
var (
	nLinear          = nm("aten::linear")
	nT               = nm("aten::t")
	nTranspose       = nm("aten::transpose")
	nAsStrided       = nm("aten::as_strided")
	nAddmm           = nm("aten::addmm")
	nMatmul          = nm("aten::matmul")
	nMm              = nm("aten::mm")
	nView            = nm("aten::view")
	nReshape         = nm("aten::reshape")
	nUnsafeView      = nm("aten::_unsafe_view")
	nClone           = nm("aten::clone")
	nEmptyLike       = nm("aten::empty_like")
	nEmpty           = nm("aten::empty")
	nEmptyStrided    = nm("aten::empty_strided")
	nCopy            = nm("aten::copy_")
	nTo              = nm("aten::to")
	nToCopy          = nm("aten::_to_copy")
	nLayerNorm       = nm("aten::layer_norm")
	nNativeLayerNorm = nm("aten::native_layer_norm")
	nSDPA            = nm("aten::scaled_dot_product_attention")
	nSDPAFlash       = nm("aten::_scaled_dot_product_flash_attention")
	nFlashFwd        = nm("aten::_flash_attention_forward")
	nAdd             = nm("aten::add")
	nAddInplace      = nm("aten::add_")
	nGelu            = nm("aten::gelu")
	nDropout         = nm("aten::dropout")
	nNativeDropout   = nm("aten::native_dropout")
	nEmbedding       = nm("aten::embedding")
	nIndexSelect     = nm("aten::index_select")
	nLogSoftmax      = nm("aten::log_softmax")
	nLogSoftmaxImpl  = nm("aten::_log_softmax")
	nCrossEntropy    = nm("aten::cross_entropy_loss")
	nNllLossNd       = nm("aten::nll_loss_nd")
	nNllLoss         = nm("aten::nll_loss")
	nNllLossFwd      = nm("aten::nll_loss_forward")
	nStack           = nm("aten::stack")
	nCat             = nm("aten::cat")
	nUnsqueeze       = nm("aten::unsqueeze")
	nZero            = nm("aten::zero_")
	nFill            = nm("aten::fill_")
	nFusedAdamW      = nm("aten::_fused_adamw_")
	nItem            = nm("aten::item")
	nLocalScalar     = nm("aten::_local_scalar_dense")
	nRecordComms     = nm("record_param_comms")
	nSum             = nm("aten::sum")
	nMul             = nm("aten::mul")
	nDetach          = nm("aten::detach")
	nContiguous      = nm("aten::contiguous")

	nNativeDropoutBwd = nm("aten::native_dropout_backward")
	nGeluBwd          = nm("aten::gelu_backward")
	nLayerNormBwd     = nm("aten::native_layer_norm_backward")
	nSDPAFlashBwd     = nm("aten::_scaled_dot_product_flash_attention_backward")
	nFlashBwd         = nm("aten::_flash_attention_backward")
	nLogSoftmaxBwd    = nm("aten::_log_softmax_backward_data")
	nNllLossBwd       = nm("aten::nll_loss_backward")
	nEmbeddingBwd     = nm("aten::embedding_backward")
	nEmbeddingDense   = nm("aten::embedding_dense_backward")
)

// Autograd nodes on the backward thread. Each comes as a pair: the
// "autograd::engine::evaluate_function: X" wrapper and the node X itself.
type bwdNode struct{ eval, node uint16 }

func bn(x string) bwdNode {
	return bwdNode{nm("autograd::engine::evaluate_function: " + x), nm(x)}
}

var (
	bAdd        = bn("AddBackward0")
	bDropout    = bn("NativeDropoutBackward0")
	bAddmm      = bn("AddmmBackward0")
	bT          = bn("TBackward0")
	bGelu       = bn("GeluBackward0")
	bLayerNorm  = bn("NativeLayerNormBackward0")
	bFlash      = bn("ScaledDotProductFlashAttentionBackward0")
	bMm         = bn("MmBackward0")
	bLogSoftmax = bn("LogSoftmaxBackward0")
	bNllLoss    = bn("NllLossBackward0")
	bEmbedding  = bn("EmbeddingBackward0")
	bAccumulate = bn("torch::autograd::AccumulateGrad")
)

// CUDA runtime calls.
var (
	nLaunchKernel    = nm("cudaLaunchKernel")
	nMemcpyAsync     = nm("cudaMemcpyAsync")
	nMemsetAsync     = nm("cudaMemsetAsync")
	nStreamSync      = nm("cudaStreamSynchronize")
	nEventRecord     = nm("cudaEventRecord")
	nStreamWaitEvent = nm("cudaStreamWaitEvent")
	nStreamCapturing = nm("cudaStreamIsCapturing")
)

// cbid values CUPTI gives those calls.
var cbidOf = map[uint16]int64{
	nLaunchKernel: 211, nMemcpyAsync: 41, nMemsetAsync: 51, nStreamSync: 131,
	nEventRecord: 135, nStreamWaitEvent: 147, nStreamCapturing: 317,
}

// GPU-side names of copies and fills.
var (
	nMemcpyHtoD = nm("Memcpy HtoD (Pinned -> Device)")
	nMemcpyDtoH = nm("Memcpy DtoH (Device -> Pageable)")
	nMemcpyPtoP = nm("Memcpy PtoP (Device -> Device)")
	nMemset     = nm("Memset (Device)")
)

// Python frames (with_stack). Addresses are part of the names in real
// traces, so they are here too.
var (
	pyRoot0      = nm("<string>(1): <module>")
	pyRoot1      = nm("train.py(212): <module>")
	pyMain       = nm("train.py(187): main")
	pyTrainLoop  = nm("train.py(141): train_loop")
	pyProfStep   = nm("torch/profiler/profiler.py(821): step")
	pyDLNext     = nm("torch/utils/data/dataloader.py(708): __next__")
	pyDLNextData = nm("torch/utils/data/dataloader.py(764): _next_data")
	pyFetch      = nm("torch/utils/data/_utils/fetch.py(49): fetch")
	pyCollate    = nm("torch/utils/data/_utils/collate.py(270): default_collate")
	pyTo         = nm("<built-in method to of Tensor object at 0x7f3a9c1d4e50>")
	pyCallImpl   = nm("torch/nn/modules/module.py(1747): _call_impl")
	pyWrapped    = nm("torch/nn/modules/module.py(1736): _wrapped_call_impl")
	pyDDPFwd     = nm("torch/nn/parallel/distributed.py(1637): forward")
	pyModelFwd   = nm("model.py(181): forward")
	pyBlockFwd   = nm("model.py(104): forward")
	pyAttnFwd    = nm("model.py(58): forward")
	pyMLPFwd     = nm("model.py(84): forward")
	pyLinearFwd  = nm("torch/nn/modules/linear.py(125): forward")
	pyLinearBI   = nm("<built-in function linear>")
	pyLNFwd      = nm("torch/nn/modules/normalization.py(217): forward")
	pyLNFunc     = nm("torch/nn/functional.py(2910): layer_norm")
	pyLNBI       = nm("<built-in method layer_norm of type object at 0x7f3b5c8e1f60>")
	pyEmbFwd     = nm("torch/nn/modules/sparse.py(190): forward")
	pyEmbFunc    = nm("torch/nn/functional.py(2551): embedding")
	pyEmbBI      = nm("<built-in method embedding of type object at 0x7f3b5c8e1f60>")
	pyGeluFwd    = nm("torch/nn/modules/activation.py(734): forward")
	pyGeluBI     = nm("<built-in function gelu>")
	pyDropFwd    = nm("torch/nn/modules/dropout.py(70): forward")
	pyDropFunc   = nm("torch/nn/functional.py(1425): dropout")
	pyDropBI     = nm("<built-in method dropout of type object at 0x7f3b5c8e1f60>")
	pySDPABI     = nm("<built-in function scaled_dot_product_attention>")
	pyView       = nm("<built-in method view of Tensor object at 0x7f3a9c1d5a80>")
	pyTransposeM = nm("<built-in method transpose of Tensor object at 0x7f3a9c1d5b20>")
	pyContig     = nm("<built-in method contiguous of Tensor object at 0x7f3a9c1d5c10>")
	pyLen        = nm("<built-in function len>")
	pyGetattr    = nm("torch/nn/modules/module.py(1915): __getattr__")
	pyCrossEnt   = nm("torch/nn/functional.py(3479): cross_entropy")
	pyCrossEntBI = nm("<built-in function cross_entropy_loss>")
	pyBackward   = nm("torch/_tensor.py(626): backward")
	pyAGBackward = nm("torch/autograd/__init__.py(347): backward")
	pyEngineRun  = nm("torch/autograd/graph.py(823): _engine_run_backward")
	pyRunBwdBI   = nm("<built-in method run_backward of torch._C._EngineBase object at 0x7f3b4d2e7c40>")
	pyOptWrapper = nm("torch/optim/optimizer.py(487): wrapper")
	pyOptStep    = nm("torch/optim/adamw.py(209): step")
	pyFusedAdamW = nm("torch/optim/adamw.py(712): _fused_adamw")
	pyZeroGrad   = nm("torch/optim/optimizer.py(955): zero_grad")
	pyItem       = nm("<built-in method item of Tensor object at 0x7f3a9c1d6d40>")
	pyIsInst     = nm("<built-in function isinstance>")
)

// Trace-level names.
var (
	nTraceSpan   = nm("PyTorch Profiler (0)")
	nProcName    = nm("process_name")
	nProcLabels  = nm("process_labels")
	nProcSort    = nm("process_sort_index")
	nThreadName  = nm("thread_name")
	nThreadSort  = nm("thread_sort_index")
	nIterStart   = nm("Iteration Start: PyTorch Profiler")
	nRecordWinEn = nm("Record Window End")
)

// Kernel templates. Launch geometry is filled in per generator (it
// depends on the model's sizes); names and register/shared-memory use are
// fixed.
type kernID uint8

const (
	kGemmQKV kernID = iota
	kGemmProj
	kGemmFC1
	kGemmFC2
	kGemmHead
	kGemmDgrad
	kGemmWgrad
	kLayerNorm
	kLayerNormBwdInput
	kLayerNormBwdGamma
	kFlashFwd
	kFlashBwdDotDoO
	kFlashBwd
	kFlashBwdConvertDq
	kCopy
	kAdd
	kAddInplace
	kGelu
	kGeluBwd
	kDropout
	kDropoutBwd
	kReduceSum
	kSoftmax
	kSoftmaxBwd
	kNllFwd
	kNllBwd
	kFill
	kIndexSelect
	kEmbeddingBwd
	kAdamW
	kNcclAllReduce
	numKerns
)

var kernNames = [numKerns]uint16{
	kGemmQKV:           nm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"),
	kGemmProj:          nm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"),
	kGemmFC1:           nm("nvjet_tst_256x128_64x4_2x1_v_bz_coopA_bias_TNT"),
	kGemmFC2:           nm("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)"),
	kGemmHead:          nm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"),
	kGemmDgrad:         nm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"),
	kGemmWgrad:         nm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"),
	kLayerNorm:         nm("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"),
	kLayerNormBwdInput: nm("void at::native::(anonymous namespace)::layer_norm_grad_input_kernel_vectorized<c10::BFloat16, float>(c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16 const*, c10::BFloat16*, int)"),
	kLayerNormBwdGamma: nm("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel_32x32<c10::BFloat16, float>(long, long, c10::BFloat16 const*, c10::BFloat16 const*, float const*, float const*, c10::BFloat16*, c10::BFloat16*)"),
	kFlashFwd:          nm("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)"),
	kFlashBwdDotDoO:    nm("void pytorch_flash::flash_bwd_dot_do_o_kernel<true, pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params)"),
	kFlashBwd:          nm("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> >, true, false, true, false, false, false>(pytorch_flash::Flash_bwd_params)"),
	kFlashBwdConvertDq: nm("void pytorch_flash::flash_bwd_convert_dq_kernel<pytorch_flash::Flash_bwd_kernel_traits<64, 128, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, pytorch_flash::Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> > >(pytorch_flash::Flash_bwd_params, int)"),
	kCopy:              nm("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, 4, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1> >(int, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>, TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, at::native::memory::LoadWithCast<1>, at::native::memory::StoreWithCast<1>)"),
	kAdd:               nm("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)"),
	kAddInplace:        nm("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul> >(int, at::native::CUDAFunctorOnSelf_add<float>, std::array<char*, 2ul>)"),
	kGelu:              nm("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)"),
	kGeluBwd:           nm("void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul> >(int, at::native::GeluBackwardCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16, c10::BFloat16)#1}, std::array<char*, 3ul>)"),
	kDropout:           nm("void at::native::(anonymous namespace)::fused_dropout_kernel_vec<c10::BFloat16, float, unsigned int, 1, 4, bool>(at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<bool, unsigned int>, unsigned int, float, at::PhiloxCudaState)"),
	kDropoutBwd:        nm("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}>(at::TensorIteratorBase&, at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1}>(at::TensorIteratorBase&, at::native::(anonymous namespace)::masked_scale_kernel<bool, c10::BFloat16, float>(at::Tensor&, at::Tensor const&, at::Tensor const&, float)::{lambda(c10::BFloat16, bool)#1} const&)::{lambda(int)#1})"),
	kReduceSum:         nm("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4> >(at::native::ReduceOp<c10::BFloat16, at::native::func_wrapper_t<c10::BFloat16, at::native::sum_functor<c10::BFloat16, float, c10::BFloat16>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, c10::BFloat16, 4>)"),
	kSoftmax:           nm("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)"),
	kSoftmaxBwd:        nm("void at::native::(anonymous namespace)::cunn_SoftMaxBackward<8, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, long)"),
	kNllFwd:            nm("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<c10::BFloat16, float, long>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, long const*, c10::BFloat16 const*, bool, long, long, long, long)"),
	kNllBwd:            nm("void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<c10::BFloat16, long>(c10::BFloat16*, c10::BFloat16 const*, long const*, c10::BFloat16 const*, c10::BFloat16 const*, bool, int, int, long, long)"),
	kFill:              nm("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::BFloat16>, std::array<char*, 1ul>)"),
	kIndexSelect:       nm("void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<c10::BFloat16, unsigned int>, at::cuda::detail::TensorInfo<c10::BFloat16 const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, unsigned int, long)"),
	kEmbeddingBwd:      nm("void at::native::(anonymous namespace)::embedding_backward_feature_kernel<c10::BFloat16, float, long>(long const*, c10::BFloat16 const*, c10::BFloat16*, int, long, int, int)"),
	kAdamW:             nm("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*>(at::native::(anonymous namespace)::TensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, (at::native::ADAM_MODE)1, false>, double*, double, double, double, double, double, bool, double*, double*)"),
	kNcclAllReduce:     nm("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"),
}
