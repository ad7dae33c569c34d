package diagnose

import (
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/gpu"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/runevidence"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/whatif"
)

// gpu.cudnn-benchmark fires on convolutions with cudnn.benchmark off, as
// the run read the flag; it stays silent with the flag on, without the
// run's flags (a trace alone cannot tell), with few convolutions, and
// where the replay finds faster kernels would not shorten the step.
func TestCudnnBenchmarkFinding(t *testing.T) {
	conv := optable.KernelRow{Name: "cudnn::cnn::conv2d_grouped_direct_kernel", TotalUs: 500}
	gemm := optable.KernelRow{Name: "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", TotalUs: 500}
	for _, c := range []struct {
		name  string
		flags map[string]any
		rows  []optable.KernelRow
		fires bool
		reach float64 // the replay's kernel fix reach, percent (0: not replayed)
	}{
		{"benchmark off", map[string]any{"cudnn_benchmark": false}, []optable.KernelRow{conv, gemm}, true, 0},
		{"benchmark off, kernels on the path", map[string]any{"cudnn_benchmark": false}, []optable.KernelRow{conv, gemm}, true, 60},
		// launch-bound: faster kernels do not shorten the step (a
		// ResNet-18 on an H200: 18.8 ms a step, 18.8-19.6 with it on)
		{"benchmark off, kernels hidden behind the host", map[string]any{"cudnn_benchmark": false}, []optable.KernelRow{conv, gemm}, false, 2},
		{"benchmark on", map[string]any{"cudnn_benchmark": true}, []optable.KernelRow{conv, gemm}, false, 0},
		{"no flags", nil, []optable.KernelRow{conv, gemm}, false, 0},
		{"few convolutions", map[string]any{"cudnn_benchmark": false}, []optable.KernelRow{{Name: conv.Name, TotalUs: 50}, {Name: gemm.Name, TotalUs: 950}}, false, 0},
	} {
		var total float64
		for i := range c.rows {
			total += c.rows[i].TotalUs
		}
		s := &state{p: Default, device: true, step: total, steps: 1, share: map[Class]float64{GPUCompute: 0.9}, ev: map[Class][]Evidence{},
			avg: breakdown.Costs{KernelUs: total, TotalUs: total},
			in:  Analyses{Kernels: &optable.KernelTable{Rows: c.rows, TotalRows: len(c.rows), TotalUs: total}, GPU: &gpu.Result{Devices: []gpu.Device{{KernelCount: 2}}}},
			d:   &Diagnosis{}}
		if c.reach > 0 {
			s.d.WhatIf = &whatif.Result{BaselineUs: total, MeasuredUs: total, Predictions: []whatif.Prediction{{Fix: string(GPUCompute), SavingPct: c.reach / 2, RemovedPct: 50, ReachPct: c.reach}}}
		}
		if c.flags != nil {
			s.in.Run = &runevidence.RunEvidence{Env: &runevidence.Env{Flags: c.flags}}
		}
		s.cudnnBenchmarkFinding()
		f := findRule(s.d.Findings, "gpu.cudnn-benchmark")
		if (f != nil) != c.fires {
			t.Errorf("%s: finding %+v, want fired %v", c.name, f, c.fires)
		}
		if f != nil && f.Try["cudnn_benchmark"] != "true" {
			t.Errorf("%s: try %v, want cudnn_benchmark=true", c.name, f.Try)
		}
	}
}
