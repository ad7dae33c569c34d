package driver

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/window"
	"github.com/bottleneck-dev/bottleneck/internal/diagnose"
	"github.com/bottleneck-dev/bottleneck/internal/load"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/scenario"
)

// A verdictCase is one diagnosis case of the corpus in docs/verdicts.md:
// the trace, the verdict an expert reading signs, and what must (and must
// not) be in the findings.
type verdictCase struct {
	name    string
	trace   func(t *testing.T) string // path of the trace
	primary diagnose.Class
	detail  string // substring of the verdict's detail ("" to skip)
	// steady: whether the window must be judged steady state.
	steady bool
	// first: rule of the top finding ("" to skip); rules: rules that
	// must fire; silent: rules that must not.
	first  string
	rules  []string
	silent []string
	// change: substring of the top finding's change; avoid: substrings
	// no finding's change may hold.
	change string
	avoid  []string
	// excluded: {step, reason}: the one step the window check must leave
	// out for that reason.
	excluded []string
	// marks: what the steps of a trace without ProfilerStep marks must
	// be found from ("" : ProfilerStep's, or the whole trace).
	marks string
}

func realTrace(rel string) func(t *testing.T) string {
	return func(t *testing.T) string { return filepath.Join(testutil.Traces(t), rel) }
}

func corpus(name string) func(t *testing.T) string {
	return func(t *testing.T) string { return filepath.Join("testdata", "corpus", name) }
}

func synth(build func(s *scenario.Trace)) func(t *testing.T) string {
	return func(t *testing.T) string {
		var s scenario.Trace
		build(&s)
		return s.Write(t)
	}
}

// Kernel names as real traces write them.
const (
	mm         = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
	gemm       = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_nn"
	softmax    = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)"
	flash      = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>, false, false, false, false, true, true, false>(pytorch_flash::Flash_fwd_params)"
	fprop      = "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn"
	nchwToNhwc = "void cudnn::ops::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float, false, true, (cudnnKernelDataType_t)0>(cudnn::ops::nchw2nhwc_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)"
	add        = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)"
	gemv       = "void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false, false, cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16 const>, cublasGemvTensorStridedBatched<__nv_bfloat16>, float>, float, float)"
	nhwcToNchw = "void cudnn::ops::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float, true, false, (cudnnKernelDataType_t)0>(cudnn::ops::nhwc2nchw_params_t<float>, __nv_bfloat16 const*, __nv_bfloat16*)"
)

var verdictCases = []verdictCase{
	// real traces
	{name: "ns_resolution", trace: realTrace("hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"),
		primary: diagnose.GPUCompute, steady: true, rules: []string{"gpu.precision"}, silent: []string{"sync.blocking", "gpu.channels-last", "gpu.attention"}},
	{name: "negative_queue", trace: realTrace("hta/negative_queue_length_values_check/rank0.json.gz"),
		primary: diagnose.Sync, steady: true, first: "sync.blocking", change: ".cpu()"},
	{name: "nccl_data", trace: realTrace("hta/nccl_parser_config/nccl_data.json.gz"),
		primary: diagnose.Host, steady: true, first: "host.python", silent: []string{"sync.blocking"}},
	// kernels fill 60% of the step by the breakdown, but the host runs
	// beside them for 83% of it and launches them late: HTA's critical
	// path runs 0.8% through kernels, and the replay saves 2% with
	// kernels twice as fast, 27% with the host's work cut to 30%
	{name: "control", trace: realTrace("hta/trace_diff/control/control.json.gz"),
		primary: diagnose.Host, steady: true, first: "host.python"},
	{name: "alexnet", trace: realTrace("hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"),
		primary: diagnose.Undetermined, detail: "start-up"},
	{name: "amd", trace: realTrace("hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"),
		primary: diagnose.Undetermined, detail: "start-up"},
	{name: "h100_qwen", trace: realTrace("tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"),
		primary: diagnose.Undetermined, detail: "mid-flight"},
	{name: "vllm_decode", trace: realTrace("tracelens/vllm_decode_full/graph_execution.json.gz"),
		primary: diagnose.Undetermined, detail: "mid-flight"},
	{name: "cpu_only", trace: realTrace("hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"),
		primary: diagnose.Comm, steady: true, first: "comm.exposed", change: "analyze all ranks together"},
	{name: "dtu_mlops_cpu", trace: realTrace("misc/dtu_mlops_cpu_profile_memory.json.gz"),
		primary: diagnose.CPUCompute, steady: true, first: "cpu.native"},
	{name: "zoology", trace: realTrace("misc/zoology_cpu_activity_on_gpu_machine.json.gz"),
		primary: diagnose.Undetermined, steady: true},

	// traces of programs in examples/corpus (testdata/corpus/README.md)
	{name: "run_cold_compile", trace: corpus("run_cold_compile.json.gz"), primary: diagnose.CPUCompute, first: "cpu.native",
		excluded: []string{"0", window.StartUp}},
	{name: "run_checkpoint_outlier", trace: corpus("run_checkpoint_outlier.json.gz"), primary: diagnose.CPUCompute, steady: true,
		excluded: []string{"5", window.Outlier}, silent: []string{"steps.periodic"}},
	{name: "eval_every_5", trace: corpus("eval_every_5.json.gz"), primary: diagnose.Periodic, steady: true,
		first: "steps.periodic", change: "forward ops with no backward beside them"},
	{name: "run_recompile_shapes", trace: corpus("run_recompile_shapes.json.gz"), primary: diagnose.Recompile, steady: true,
		first: "compile.recompile", change: "mark the varying dimension dynamic"},
	// profiled without a schedule or prof.step(): no ProfilerStep marks
	{name: "unmarked_train_loop", trace: corpus("unmarked_train_loop.json.gz"), primary: diagnose.Input, steady: true,
		first: "input.loader", marks: "Optimizer.step#Adam.step"},
	{name: "unmarked_decode_annotated", trace: corpus("unmarked_decode_annotated.json.gz"), primary: diagnose.Overhead, steady: true,
		marks: "decode_step", silent: []string{"input.loader", "cpu.native"}},
	{name: "unmarked_forward_with_stack", trace: corpus("unmarked_forward_with_stack.json.gz"), primary: diagnose.CPUCompute, steady: true,
		first: "cpu.native", change: "channels_last", marks: "nn.Module: Net_0"},
	{name: "unmarked_one_iteration", trace: corpus("unmarked_one_iteration.json.gz"), primary: diagnose.Input, first: "input.loader"},

	// synthetic device-side cases
	{name: "synthetic_mid_flight", primary: diagnose.Undetermined, detail: "mid-flight",
		trace: synth(func(s *scenario.Trace) {
			// one step; the first 30 ms the device runs kernels launched
			// before the capture while the host waits in a sync
			for i := range 30 {
				s.Device("kernel", mm, float64(i)*1000, 990, 0)
			}
			s.Runtime("cudaDeviceSynchronize", 100, 29900)
			s.GPUStep(1, 50, 30000, 40, 1000)
		})},
	{name: "synthetic_three_microseconds", primary: diagnose.Undetermined, detail: "",
		trace: synth(func(s *scenario.Trace) {
			// one 3 µs step of 24 tiny ops: nothing to judge a program by
			for i := range 24 {
				s.Op("aten::add", 0.1*float64(i), 0.1)
			}
			s.Step(0, 0, 3)
		})},
	{name: "synthetic_mid_flight_first_step", primary: diagnose.GPUCompute,
		trace: synth(func(s *scenario.Trace) {
			// carry-over covers step 1 only: it is left out, steps 2-4 are GPU-bound
			for i := range 20 {
				s.Device("kernel", mm, float64(i)*1000, 990, 0)
			}
			s.Runtime("cudaDeviceSynchronize", 100, 19900)
			end := s.GPUStep(1, 50, 20000, 30, 1000)
			for n := 2; n <= 4; n++ {
				end = s.GPUStep(n, end, end, 40, 1000)
			}
		}), silent: []string{"sync.blocking"}},
	{name: "synthetic_cold_first_step", primary: diagnose.GPUCompute,
		trace: synth(func(s *scenario.Trace) {
			// step 1: the first launch of a kernel takes 400 ms (lazy
			// module loading) while the device waits; steps 2-4 are GPU-bound
			s.LaunchLone(20, 400000, "void first_use_kernel<float>(float*)", 400025, 50)
			s.Step(1, 0, 400100)
			end := 400100.0
			for n := 2; n <= 4; n++ {
				end = s.GPUStep(n, end, end, 40, 1000)
			}
		}), silent: []string{"host.python"}},
	{name: "synthetic_graph_capture", primary: diagnose.Undetermined, detail: "graph capture",
		trace: synth(func(s *scenario.Trace) {
			// both steps capture CUDA graphs: hundreds of launches, no kernels run
			for n := 1; n <= 2; n++ {
				ts := float64(n-1) * 20000
				s.Runtime("cudaStreamBeginCapture", ts+10, 5)
				for i := range 300 {
					s.Op("aten::add", ts+20+float64(i)*50, 40)
					s.Runtime("cudaLaunchKernel", ts+25+float64(i)*50, 30)
				}
				s.Runtime("cudaStreamEndCapture", ts+15100, 50)
				s.Runtime("cudaGraphInstantiate", ts+15200, 4000)
				s.Kernel(mm, ts+19300, ts+19310, 100)
				s.Step(n, ts, 19500)
			}
		})},
	{name: "synthetic_profiler_overhead", primary: diagnose.GPUCompute,
		trace: synth(func(s *scenario.Trace) {
			// buffer requests take ~10% of every step: the window is not steady state
			end := 0.0
			for n := 1; n <= 3; n++ {
				start := end
				end = s.GPUStep(n, start, start, 40, 1000)
				s.Add(map[string]any{"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": 100, "tid": 2, "ts": start + 100, "dur": 4000.0})
			}
		})},
	{name: "synthetic_input_bound_busy_gpu", primary: diagnose.Input, first: "input.loader",
		trace: synth(func(s *scenario.Trace) {
			// each step: 33 ms waiting for the DataLoader with the device
			// idle, then 56 ms of kernels, 11 ms of other host work
			for n := 1; n <= 4; n++ {
				ts := float64(n-1) * 100000
				s.Host("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts+100, 33000, nil)
				for i := range 56 {
					lt := ts + 33200 + float64(i)*10
					s.Op("aten::mm", lt-1, 8)
					s.Kernel(mm, lt, ts+33300+float64(i)*1000, 1000)
				}
				s.Op("aten::zero_", ts+90000, 9000)
				s.Step(n, ts, 99900)
			}
		})},
	{name: "synthetic_gpu_bound_small_loader", primary: diagnose.GPUCompute, silent: []string{"sync.blocking"},
		trace: synth(func(s *scenario.Trace) {
			for n := 1; n <= 4; n++ {
				ts := float64(n-1) * 100000
				s.Host("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ts+100, 8000, nil)
				for i := range 90 {
					lt := ts + 8200 + float64(i)*10
					s.Op("aten::mm", lt-1, 8)
					s.Kernel(mm, lt, ts+8300+float64(i)*1000, 1000)
				}
				s.Step(n, ts, 99900)
			}
		})},
	{name: "synthetic_outlier_step", primary: diagnose.GPUCompute,
		trace: synth(func(s *scenario.Trace) {
			// step 3 holds a 200 ms checkpoint: left out as an outlier
			end := 0.0
			for n := 1; n <= 5; n++ {
				end = s.GPUStep(n, end, end, 40, 1000)
				if n == 3 {
					s.Op("aten::save", end, 200000)
					end += 200000
				}
			}
		}), silent: []string{"host.python"}},
	{name: "synthetic_final_sync_only", primary: diagnose.GPUCompute, silent: []string{"sync.blocking"},
		trace: synth(func(s *scenario.Trace) {
			// one cudaDeviceSynchronize at the very end: not a sync problem
			end := 0.0
			for n := 1; n <= 3; n++ {
				end = s.GPUStep(n, end, end, 40, 1000)
			}
			s.Runtime("cudaDeviceSynchronize", end-30000, 30000)
		})},
	{name: "synthetic_item_sync", primary: diagnose.Sync, first: "sync.blocking", change: ".item()",
		trace: synth(func(s *scenario.Trace) {
			// every 10 kernels the host reads a value (.item()) and then
			// spends 2 ms before launching more: the device idles
			ts := 0.0
			for n := 1; n <= 3; n++ {
				start := ts
				for round := range 5 {
					dev := ts + 20
					for i := range 10 {
						s.Op("aten::mm", ts+float64(i)*8, 7)
						s.Kernel(mm, ts+1+float64(i)*8, dev, 200)
						dev += 200
					}
					_ = round
					s.Op("aten::_local_scalar_dense", ts+90, dev-ts-90+10)
					s.Launch("cudaMemcpyAsync", "gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", ts+95, dev-ts-95+5, dev, 3)
					ts = dev + 2000
				}
				s.Step(n, start, ts-start)
			}
		})},
	{name: "synthetic_unfused_attention", primary: diagnose.GPUCompute, rules: []string{"gpu.attention"},
		trace: synth(func(s *scenario.Trace) {
			s.Rounds(3, 30, scenario.Of("aten::bmm", gemm, 600), scenario.Of("aten::_softmax", softmax, 400), scenario.Of("aten::bmm", gemm, 600))
		})},
	{name: "synthetic_sdpa", primary: diagnose.GPUCompute, silent: []string{"gpu.attention"},
		trace: synth(func(s *scenario.Trace) {
			s.Rounds(3, 30, scenario.Of("aten::_scaled_dot_product_flash_attention", flash, 900),
				scenario.Of("aten::_softmax", softmax, 50), scenario.Of("aten::bmm", gemm, 300))
		})},
	{name: "synthetic_nchw_convs", primary: diagnose.GPUCompute, rules: []string{"gpu.channels-last"},
		trace: synth(func(s *scenario.Trace) {
			s.Rounds(3, 20, scenario.Of("aten::cudnn_convolution", nchwToNhwc, 100), scenario.Of("", fprop, 1000), scenario.Of("", nhwcToNchw, 100))
		})},
	{name: "synthetic_launch_bound", primary: diagnose.Launch, first: "host.launch",
		trace: synth(func(s *scenario.Trace) {
			// 400 kernels of 4 µs per step, each launched in 12 µs of host time
			ts := 0.0
			for n := 1; n <= 3; n++ {
				start := ts
				for i := range 400 {
					lt := ts + float64(i)*20
					s.Op("aten::add", lt, 18)
					s.Launch("cudaLaunchKernel", "kernel", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", lt+2, 12, lt+15, 4)
				}
				ts += 400*20 + 50
				s.Step(n, start, ts-start)
			}
		})},
	{name: "synthetic_launch_bound_decode", primary: diagnose.Host, first: "host.python", change: "CUDA graph",
		trace: synth(func(s *scenario.Trace) { decodeSteps(s, "aten::mm", gemv, "aten::add", add) })},
	{name: "synthetic_launch_bound_vllm", primary: diagnose.Host, first: "host.python", change: "drop enforce_eager=True",
		trace: synth(func(s *scenario.Trace) {
			decodeSteps(s, "vllm::unified_attention_with_output", gemv, "_C::fused_add_rms_norm", "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, c10::BFloat16 const*, float, int, int)")
		})},
	// the trace alone, without the run's Python profile: 145 kernels a
	// token, 99% shorter than their launch call, kernels 3% of the step
	{name: "hf_generate_trace", primary: diagnose.Host, first: "host.python", change: "CUDA graph",
		trace: func(t *testing.T) string {
			return filepath.Join(testutil.RepoRoot(), "testdata", "rundir", "h100", "hf_generate", "trace-rank0.pt.trace.json.gz")
		}},
	{name: "synthetic_unexplained", primary: diagnose.Undetermined, detail: "no recorded activity",
		trace: synth(func(s *scenario.Trace) {
			// a few kernels per 100 ms step and nothing else recorded
			for n := 1; n <= 3; n++ {
				ts := float64(n-1) * 100000
				for i := range 5 {
					s.Op("aten::mm", ts+float64(i)*15000, 10)
					s.Kernel(mm, ts+float64(i)*15000+2, ts+float64(i)*15000+10, 3000)
				}
				s.Step(n, ts, 99000)
			}
		})},
	// GEMM-bound steps on an H100 (the scenario's deviceProperties): FP8
	// GEMMs (torch._scaled_mm's cuBLASLt kernel) are never told to lower
	// their precision; the bf16 control is offered FP8, as an experiment
	{name: "synthetic_fp8_gemm_bound", primary: diagnose.GPUCompute, first: "gpu.kernels", change: "the model's own work",
		avoid: []string{"lower precision", "FP8", "autocast"}, silent: []string{"gpu.precision"},
		trace: synth(func(s *scenario.Trace) {
			s.Rounds(3, 30, scenario.Of("aten::_scaled_mm", "nvjet_qqtst_128x256_128x6_2x1_2cta_v_bz_TNT", 900), scenario.Of("aten::add", add, 100))
		})},
	{name: "synthetic_bf16_gemm_bound", primary: diagnose.GPUCompute, first: "gpu.kernels", change: "FP8 as an experiment",
		silent: []string{"gpu.precision"},
		trace: synth(func(s *scenario.Trace) {
			s.Rounds(3, 30, scenario.Of("aten::mm", mm, 900), scenario.Of("aten::add", add, 100))
		})},
	// a capture started mid-flight: step 1's first kernel, launched at
	// once, starts 300 ms later (held behind a stream wait on an event the
	// trace never records) and the .item() after it waits for all of it;
	// steps 2-4 are GPU-bound: the wait is never called the program's sync
	{name: "synthetic_mid_flight_stream_wait", primary: diagnose.GPUCompute, silent: []string{"sync.blocking"},
		trace: synth(func(s *scenario.Trace) {
			s.Runtime("cudaStreamWaitEvent", 5, 3)
			s.Op("aten::mm", 9, 8)
			s.Kernel(mm, 10, 300000, 1000)
			s.Op("aten::_local_scalar_dense", 30, 300990)
			s.Runtime("cudaStreamSynchronize", 40, 300970)
			s.Step(1, 0, 301020)
			end := 301020.0
			for n := 2; n <= 4; n++ {
				end = s.GPUStep(n, end, end, 40, 1000)
			}
		})},
}

// decodeSteps writes 4 steps of token-by-token decode at batch 1: each
// token's forward issues 320 kernels (op1's of 12 µs, op2's of 7 µs),
// each after 30 µs of host time (the op's dispatch and a 6 µs launch
// call): the kernels outlast their launch calls, yet the device idles
// two thirds of the step waiting for the next launch.
func decodeSteps(s *scenario.Trace, op1, kernel1, op2, kernel2 string) {
	ts := 0.0
	for n := 1; n <= 4; n++ {
		start := ts
		for i := range 320 {
			lt := ts + float64(i)*30
			op, kernel, kdur := op1, kernel1, 12.0
			if i%2 == 1 {
				op, kernel, kdur = op2, kernel2, 7.0
			}
			s.Op(op, lt, 28)
			s.Launch("cudaLaunchKernel", "kernel", kernel, lt+20, 6, lt+28, kdur)
		}
		ts += 320*30 + 40
		s.Step(n, start, ts-start)
	}
}

// The replay of the decode steps predicts what a CUDA graph saves: the
// host's issuing work cut, the kernels then back to back: at most the step
// less its kernels (a graph does not make them faster), and the report's
// verdict and finding quote the same saving.
func TestLaunchBoundDecodePrediction(t *testing.T) {
	var s scenario.Trace
	decodeSteps(&s, "aten::mm", gemv, "aten::add", add)
	res, err := load.Load([]string{s.Write(t)}, load.Options{})
	if err != nil || len(res.Traces) != 1 {
		t.Fatalf("load: %v", err)
	}
	d := Build(res, 0, Options{Rank: -1}).Traces[0].Diagnosis
	if len(d.Findings) == 0 || d.Findings[0].Rule != "host.python" {
		t.Fatalf("findings %+v", d.Findings)
	}
	f := d.Findings[0]
	// 160 x 12 + 160 x 7 µs of kernels in a step of 320 x 30 + 40 µs
	kernels, step := 160*12.0+160*7.0, 320*30.0+40
	ceiling := 100 * (1 - kernels/step)
	if f.SavingPct < 0.8*ceiling || f.SavingPct > ceiling+0.5 {
		t.Errorf("predicted saving %.1f%%, want near the host's hold on the step, at most %.1f%%", f.SavingPct, ceiling)
	}
	if want := fmt.Sprintf("its fix saves ~%.0f%%", f.SavingPct); !strings.Contains(d.Verdict.Why, want) {
		t.Errorf("the verdict %q does not quote the finding's %s", d.Verdict.Why, want)
	}
}

// TestVerdictCorpus checks the verdict an expert reading signs on every
// case of docs/verdicts.md, real traces and synthetic ones, and that the
// page lists each case with that verdict.
func TestVerdictCorpus(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "verdicts.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range verdictCases {
		t.Run(c.name, func(t *testing.T) {
			if !regexp.MustCompile(`(?m)^- \*\*` + regexp.QuoteMeta(c.name) + `\b[^\n]*` + regexp.QuoteMeta(string(c.primary))).Match(doc) {
				t.Errorf("docs/verdicts.md has no entry **%s ...** stating %s", c.name, c.primary)
			}
			res, err := load.Load([]string{c.trace(t)}, load.Options{})
			if err != nil || len(res.Traces) != 1 {
				t.Fatalf("load: %v", err)
			}
			r := Build(res, 0, Options{Rank: -1})
			d := r.Traces[0].Diagnosis
			var text strings.Builder
			if err := report.WriteDiagnosis(&text, d); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", text.String())
			if d.Verdict.Primary != c.primary {
				t.Fatalf("verdict %s, want %s", d.Verdict.Primary, c.primary)
			}
			if !strings.Contains(d.Verdict.Detail, c.detail) {
				t.Errorf("verdict detail %q, want it to name %q", d.Verdict.Detail, c.detail)
			}
			if c.steady && (d.Window == nil || !d.Window.SteadyState) {
				t.Errorf("window judged not steady state")
			}
			if d.Window != nil && (d.Window.StepMarks != c.marks || c.marks != "" && len(d.Window.UsedSteps) < 3) {
				t.Errorf("steps found from %q, %d used; want %q", d.Window.StepMarks, len(d.Window.UsedSteps), c.marks)
			}
			if w := r.Traces[0].Window; c.excluded != nil && !slices.Equal(w.ExcludedBy(c.excluded[1]), []string{c.excluded[0]}) {
				t.Errorf("steps left out as %s: %v, want [%s]", c.excluded[1], w.ExcludedBy(c.excluded[1]), c.excluded[0])
			}
			// the operator table covers the steps the verdict does: an
			// outlier inside the range is left out of it too
			if ops, w := r.Traces[0].Ops, r.Traces[0].Window; c.excluded != nil && ops.Steps != len(w.Used) {
				t.Errorf("operator table over %d steps (%d-%d), the window check used %d", ops.Steps, ops.StepsFirst, ops.StepsLast, len(w.Used))
			}
			fired := map[string]bool{}
			for _, f := range d.Findings {
				fired[f.Rule] = true
			}
			if c.first != "" && (len(d.Findings) == 0 || d.Findings[0].Rule != c.first) {
				t.Errorf("top finding is not %s", c.first)
			}
			// the report's first line and its first finding agree: a
			// verdict is never outranked by a finding of another class
			if v := d.Verdict.Primary; v != diagnose.Undetermined && len(d.Findings) > 0 && d.Findings[0].Class != v {
				t.Errorf("verdict %s but the top finding %s is of class %s", v, d.Findings[0].Rule, d.Findings[0].Class)
			}
			if c.change != "" && (len(d.Findings) == 0 || !strings.Contains(d.Findings[0].AllChanges(), c.change)) {
				t.Errorf("top finding's change does not name %q", c.change)
			}
			if sy := r.Traces[0].Syncs; c.name == "synthetic_mid_flight_stream_wait" && (sy.Inherited == nil || sy.Inherited.Count != 1 || sy.Count != 0) {
				t.Errorf("the wait on unrecorded work: inherited %+v, counted %d, want it set apart", sy.Inherited, sy.Count)
			}
			for _, f := range d.Findings {
				for _, a := range c.avoid {
					if strings.Contains(f.AllChanges(), a) {
						t.Errorf("%s's change says %q: %s", f.Rule, a, f.AllChanges())
					}
				}
			}
			for _, r := range c.rules {
				if !fired[r] {
					t.Errorf("rule %s did not fire", r)
				}
			}
			for _, r := range c.silent {
				if fired[r] {
					t.Errorf("rule %s fired where it must stay silent", r)
				}
			}
		})
	}
}
