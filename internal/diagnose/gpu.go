package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/kernels"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
)

// gpuBound: the GPU rules apply (a device, and its kernels hold enough
// of the step).
func (s *state) gpuBound() bool { return s.device && s.big(GPUCompute) }

// kernelsOffPath: the replay says kernels made faster would not shorten
// the step (its kernel fix reaches under KernelReach of what it takes
// out): the host's launching is the path. A change that only speeds
// kernels then saves nothing and can cost: pytorch/examples'
// siamese_network, launch-bound on an H200, ran 18.8 ms a step as it is
// and 18.8-19.6 ms with cudnn.benchmark on (run --verify: 0.74x).
func (s *state) kernelsOffPath() bool {
	w := s.d.WhatIf
	if !w.Trusted(s.p.MaxBaselineErrorPct) || !s.deviceRecorded() {
		return false
	}
	p, ok := w.Find(string(GPUCompute))
	return ok && p.ReachPct < s.p.KernelReach
}

// kernelMix is the kernel table's time by kind, which the GPU rules
// share.
type kernelMix struct {
	kernelUs, gemmUs, nonTC, convUs float64
	nonTCRows                       []Location // the top fp32 GEMMs on CUDA cores
}

// kernelMix reads the kernel table once per diagnosis.
func (s *state) kernelMix() kernelMix {
	if s.mix != nil {
		return *s.mix
	}
	var m kernelMix
	kt := s.in.Kernels
	if kt != nil {
		m.kernelUs = kt.TotalUs
		for _, r := range kt.Ranked() {
			if !isDeviceWork(r.Name) {
				continue
			}
			k := kernels.Classify(r.Name)
			if k.Family == kernels.GEMM || k.Family == kernels.Conv {
				m.gemmUs += r.TotalUs
				if k.FP32OnVectorCores() {
					m.nonTC += r.TotalUs
					if len(m.nonTCRows) < 3 {
						m.nonTCRows = append(m.nonTCRows, Location{Kind: "kernel", Name: r.Name, SharePct: stats.Round1(r.TotalPct), Note: kernelNote(k) + "; launched by " + cmp.Or(r.TopOp, "?")})
					}
				}
			}
			if isConv(r.Name) {
				m.convUs += r.TotalUs
			}
		}
	}
	s.mix = &m
	return m
}

// perStep turns kernel time over the steps into time per step.
func (m kernelMix) perStep(s *state, us float64) float64 {
	if m.kernelUs == 0 {
		return 0
	}
	return us / m.kernelUs * s.avg.KernelUs
}

var _ = addRule(Rule{
	ID: "gpu.precision", Class: GPUCompute, Factor: 0.5,
	When: "fp32 matmul/conv kernels on CUDA cores (kernel table, docs/kernels.md; not GEMV, not FP8/FP4/bf16/fp16) >= NonTensorCoreGEMM of kernel time, kernel share >= MinFinding",
	Change: orTry("run matmuls and convolutions on tensor cores: torch.autocast(\"cuda\", dtype=torch.bfloat16) (fp16 + GradScaler before Ampere)",
		"TF32: torch.set_float32_matmul_precision(\"high\"), one line that keeps float32 storage"),
	detect: (*state).precisionFinding,
	Fires:  "TestPrecisionFiresForFP32OnCUDACores", Silent: "TestPrecisionSilent",
})

// precisionFinding: gpu.precision.
func (s *state) precisionFinding() {
	m := s.kernelMix()
	if !s.gpuBound() || m.kernelUs == 0 || m.nonTC/m.kernelUs < s.p.NonTensorCoreGEMM {
		return
	}
	kernelUs, gemmUs, nonTC, nonTCRows := m.kernelUs, m.gemmUs, m.nonTC, m.nonTCRows
	change := ""
	d := s.hardware()
	vector, matrix := d.units()
	switch {
	case d.vendor == "amd":
		change = "run matmuls and convolutions on the matrix cores: " + s.halfPrecisionChange(d)
	case d.major >= 0 && !d.atLeast(8, 0):
		change = fmt.Sprintf("compute capability %d.%d has no bf16/TF32 tensor cores: %s", d.major, d.minor, s.halfPrecisionChange(d))
	case d.major >= 0:
		// TF32 first: one line, float32 storage, and a change run
		// --verify=numerics can try (an H200 GPT in fp32: 2.51x measured)
		change = orTry("run the fp32 matmuls and convolutions on tensor cores in TF32: torch.set_float32_matmul_precision(\"high\") (cuDNN's convolutions use TF32 by default), one line that keeps float32 storage",
			"bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16)): twice TF32's tensor-core rate and half the bytes, with more change to the numerics")
	}
	ms := []Evidence{{"fp32 matmul/conv kernel time on CUDA cores", 100 * nonTC / kernelUs, "% of kernel time", "kernels"},
		{"matmul/conv kernel time", 100 * gemmUs / kernelUs, "% of kernel time", "kernels"}}
	if r := s.in.Run; r != nil && r.Env != nil {
		if v, ok := r.Env.Flags["float32_matmul_precision"]; ok {
			ms = append(ms, Evidence{"float32_matmul_precision=" + fmt.Sprint(v), 0, "", "env"})
		}
	}
	f := s.finding("gpu.precision", fmt.Sprintf("FP32 matmuls/convolutions run on %s, not %s (%.0f%% of kernel time)", vector, matrix, 100*nonTC/kernelUs), m.perStep(s, nonTC), ms, nonTCRows, change)
	if d.vendor != "amd" && d.atLeast(8, 0) {
		f.Try = map[string]string{"tf32": "true"}
	}
	s.emit(f)

}

var _ = addRule(Rule{
	ID: "gpu.cudnn-benchmark", Class: GPUCompute, Factor: 0.1,
	When:   "convolution kernels >= ConvShare of kernel time and cudnn.benchmark off (run evidence), unless the replay's kernel fix reaches under KernelReach of the step (the host is the path)",
	Change: "torch.backends.cudnn.benchmark = True when input shapes are fixed",
	detect: (*state).cudnnBenchmarkFinding,
	Fires:  "TestCudnnBenchmarkFinding", Silent: "TestCudnnBenchmarkFinding",
})

// cudnnBenchmarkFinding: gpu.cudnn-benchmark.
func (s *state) cudnnBenchmarkFinding() {
	m := s.kernelMix()
	r := s.in.Run
	if !s.gpuBound() || r == nil || r.Env == nil || m.kernelUs == 0 || m.convUs/m.kernelUs < s.p.ConvShare || s.kernelsOffPath() {
		return
	}
	kernelUs, convUs := m.kernelUs, m.convUs
	if v, ok := r.Env.Flags["cudnn_benchmark"].(bool); ok && !v {
		f := s.finding("gpu.cudnn-benchmark", fmt.Sprintf("Convolutions (%.0f%% of kernel time) with cudnn.benchmark off", 100*convUs/kernelUs), m.perStep(s, convUs),
			[]Evidence{{"convolution kernel time", 100 * convUs / kernelUs, "% of kernel time", "kernels"}}, nil, "")
		f.Try = map[string]string{"cudnn_benchmark": "true"}
		s.emit(f)
	}

}

var _ = addRule(Rule{
	ID: "gpu.kernels", Class: GPUCompute, Factor: 0.5,
	When: "computation kernels >= MinFinding of the step; saving: kernels made 2x faster",
	Change: orTry(orTry("the device is the limit: reduce or fuse the top kernels (torch.compile)",
		"lower precision (bf16 autocast): tensor cores run it several times faster"),
		"with low SM efficiency, a larger batch; else a larger device"),
	detect: (*state).kernelsFinding,
	Fires:  "driver.TestVerdictCorpus/synthetic_fp8_gemm_bound", Silent: "TestShareRulesFireFromMinFinding",
})

// kernelsFinding: gpu.kernels.
func (s *state) kernelsFinding() {
	if !s.gpuBound() {
		return
	}
	kt := s.in.Kernels
	var where []Location
	if kt != nil {
		for _, r := range kt.Ranked() {
			if len(where) == 3 {
				break
			}
			if !isDeviceWork(r.Name) {
				continue
			}
			where = append(where, Location{Kind: "kernel", Name: r.Name, SharePct: stats.Round1(r.TotalPct), Note: kernelNote(kernels.Classify(r.Name)) + "; launched by " + cmp.Or(r.TopOp, "?")})
		}
	}
	change, fam := s.kernelsChange()
	if change == "" {
		change = s.generalKernelsChange()
	}
	if c, ev, loc := s.float64Change(true); c != "" {
		change, fam, where = c, append(fam, ev...), append(loc, where...)
	}
	s.emit(s.finding("gpu.kernels", fmt.Sprintf("Device kernels take %.0f%% of the step", s.findingPct(s.share[GPUCompute])), s.share[GPUCompute]*s.step,
		slices.Concat(s.ev[GPUCompute], fam), where, change))
}

var _ = addRule(Rule{
	ID: "gpu.attention", Class: GPUCompute, Factor: 0.5,
	When:   "softmax + bmm/baddbmm ops >= AttentionShare of device time, no fused attention op (scaled_dot_product_attention, flash, efficient attention), and the softmax's scores made by a matmul at least as often as by a nonlinearity (graph or additive attention)",
	Change: "compute attention with " + sdpaChange + ": one fused flash/memory-efficient kernel",
	detect: (*state).attentionFinding,
	Fires:  "driver.TestVerdictCorpus/synthetic_unfused_attention", Silent: "driver.TestVerdictCorpus/synthetic_sdpa",
})

// attentionFinding: attention computed as softmax(q @ k.T) @ v, unfused:
// softmax and batched-matmul ops take device time and no fused attention
// op runs.
func (s *state) attentionFinding() {
	t := s.in.Ops
	if !s.gpuBound() || t == nil || t.DevSelfUs <= 0 {
		return
	}
	us, where := s.unfusedAttention(false)
	if us/t.DevSelfUs < s.p.AttentionShare {
		return
	}
	kt := s.in.Kernels
	if kt == nil || kt.TotalUs <= 0 {
		return
	}
	share := us / t.DevSelfUs
	change := ""
	if fix, loc := s.attentionFix(false); fix != sdpaChange {
		change, where = fix, append(loc, where...)
	}
	s.emit(s.finding("gpu.attention", fmt.Sprintf("Attention runs unfused: softmax and batched matmuls take %.0f%% of device time", 100*share),
		s.kernelMix().perStep(s, share*kt.TotalUs), []Evidence{{"softmax + bmm device time", 100 * share, "% of device time", "operators"}}, where, change))
}

var _ = addRule(Rule{
	ID: "gpu.channels-last", Class: GPUCompute, Factor: 1.0,
	When:   "convolution kernels >= ConvShare of kernel time and NCHW<->NHWC conversion kernels >= LayoutShare",
	Change: "keep convolutions in channels_last: model.to(memory_format=torch.channels_last) and input.to(memory_format=torch.channels_last), so cuDNN runs without layout conversions",
	detect: (*state).layoutFinding,
	Fires:  "driver.TestVerdictCorpus/synthetic_nchw_convs", Silent: "driver.TestVerdictCorpus/ns_resolution",
})

// layoutFinding: convolutions on NCHW tensors make cuDNN convert layouts
// around its tensor-core kernels; channels_last removes the conversions.
func (s *state) layoutFinding() {
	kt := s.in.Kernels
	m := s.kernelMix()
	kernelUs, convUs := m.kernelUs, m.convUs
	if !s.gpuBound() || kt == nil || kernelUs <= 0 || convUs/kernelUs < s.p.ConvShare {
		return
	}
	var conv float64
	var where []Location
	for _, r := range kt.Ranked() {
		if classify.ContainsAny(strings.ToLower(r.Name), layoutConversions) {
			conv += r.TotalUs
			if len(where) < 3 {
				where = append(where, Location{Kind: "kernel", Name: r.Name, SharePct: stats.Round1(r.TotalPct), Note: "launched by " + cmp.Or(r.TopOp, "?")})
			}
		}
	}
	if conv/kernelUs < s.p.LayoutShare {
		return
	}
	s.emit(s.finding("gpu.channels-last", fmt.Sprintf("Layout conversions around convolutions take %.0f%% of kernel time", 100*conv/kernelUs), m.perStep(s, conv),
		[]Evidence{{"NCHW<->NHWC conversion kernels", 100 * conv / kernelUs, "% of kernel time", "kernels"},
			{"convolution kernels", 100 * convUs / kernelUs, "% of kernel time", "kernels"}}, where, ""))
}
