// Package flops reports achieved throughput when the trace records FLOPs
// (with_flops=True puts a "flops" argument on matmul/conv ops).
//
// Definitions (version "flops/1"):
//
//   - An op's device time: the kernels, memcpys and memsets it launched,
//     directly or through child ops (device work is charged to the nearest
//     enclosing op, on the launching thread, that carries "flops").
//   - Achieved TFLOP/s: flops / device time, per op name (summed over
//     calls) and in total over every op with flops and device time. Ops
//     without device work (CPU execution) are counted in CPUOnlyFlops.
//   - Peak: dense (no sparsity) TFLOP/s of the device named in
//     deviceProperties, for the op's input dtype ("Input type": float ->
//     fp32, c10::Half -> fp16, c10::BFloat16 -> bf16, fp8 types -> fp8);
//     see peaks.go for the table and its sources. fp32 matmuls may run on
//     TF32 tensor cores when allowed; the fp32 peak is the CUDA-core one.
package flops

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Definition names the version of the definitions above.
const Definition = "flops/1"

// Op is one op name's throughput.
type Op struct {
	Name       string  `json:"name"`
	Dtype      string  `json:"dtype"`
	Calls      int     `json:"calls"`
	Flops      float64 `json:"flops"`
	DeviceUs   float64 `json:"device_us"`
	TFLOPS     float64 `json:"tflops"`
	PeakTFLOPS float64 `json:"peak_tflops"` // 0 when unknown
	PeakPct    float64 `json:"peak_pct"`
	FlopsShare float64 `json:"flops_pct"` // of all flops
}

// Result is the FLOPs analysis.
type Result struct {
	Definition string `json:"definition"`
	// Available is false when no op carries "flops".
	Available    bool    `json:"available"`
	Device       string  `json:"device"`
	Flops        float64 `json:"flops"`
	CPUOnlyFlops float64 `json:"cpu_only_flops"`
	DeviceUs     float64 `json:"device_us"`
	TFLOPS       float64 `json:"tflops"`
	// PeakTFLOPS is the peak for the dtype with the most flops.
	PeakTFLOPS float64 `json:"peak_tflops"`
	PeakDtype  string  `json:"peak_dtype"`
	PeakPct    float64 `json:"peak_pct"`
	Ops        []Op    `json:"ops"`
}

// DtypeOf maps a PyTorch "Input type" string to a peak-table dtype.
func DtypeOf(s string) string {
	l := strings.ToLower(s)
	switch {
	case strings.Contains(l, "bfloat16"):
		return "bf16"
	case strings.Contains(l, "half") || l == "float16":
		return "fp16"
	case strings.Contains(l, "float8"):
		return "fp8"
	case l == "double":
		return "fp64"
	case l == "float" || l == "float32":
		return "fp32"
	}
	return ""
}

// Compute measures achieved FLOP/s.
func Compute(t *trace.Trace) *Result {
	ev := &t.Events
	r := &Result{Definition: Definition, Ops: []Op{}}
	flops := map[int32]float64{}
	for i, k := range ev.Kind {
		if k != trace.KindCPUOp {
			continue
		}
		if f, ok := t.ArgFloat(i, trace.KeyFlops); ok && f > 0 {
			flops[int32(i)] = f
		}
	}
	if len(flops) == 0 {
		return r
	}
	r.Available = true
	dev := map[int32]int64{}
	devCount := map[int]int{}
	for i, k := range ev.Kind {
		if !k.IsDeviceWork() {
			continue
		}
		for o := ev.Op[i]; o != trace.None; o = ev.Parent[o] {
			if _, ok := flops[o]; ok {
				dev[o] += ev.Dur[i]
				devCount[t.Tracks[ev.Track[i]].Device]++
				break
			}
		}
	}
	// The device: the one running most of this work.
	devID, best := -1, 0
	for d, c := range devCount {
		if c > best || c == best && d < devID {
			devID, best = d, c
		}
	}
	var peaks Peak
	if d := t.Meta.Device(devID); d != nil {
		r.Device = d.Name
		peaks, _ = PeakFor(d.Name)
	}
	type key struct {
		name  trace.StrID
		dtype string
	}
	rows := map[key]*Op{}
	dtypeFlops := map[string]float64{}
	var totalDev int64
	var devFlops float64
	for o, f := range flops {
		dt := ""
		if s, ok := t.ArgStr(int(o), trace.KeyInputType); ok {
			// Input type is a list: take the first named dtype.
			for _, part := range strings.Split(strings.Trim(s, "[]"), ",") {
				if dt = DtypeOf(strings.Trim(strings.TrimSpace(part), `"`)); dt != "" {
					break
				}
			}
		}
		k := key{ev.Name[o], dt}
		row := rows[k]
		if row == nil {
			row = &Op{Name: t.Str(ev.Name[o]), Dtype: dt}
			rows[k] = row
		}
		row.Calls++
		row.Flops += f
		r.Flops += f
		d, ok := dev[o]
		if !ok {
			r.CPUOnlyFlops += f
			continue
		}
		row.DeviceUs += float64(d) / 1e3
		totalDev += d
		devFlops += f
		dtypeFlops[dt] += f
	}
	for _, row := range rows {
		if row.DeviceUs > 0 {
			row.TFLOPS = row.Flops / (row.DeviceUs * 1e-6) / 1e12
		}
		row.PeakTFLOPS = peaks.For(row.Dtype)
		if row.PeakTFLOPS > 0 {
			row.PeakPct = row.TFLOPS * 100 / row.PeakTFLOPS
		}
		row.FlopsShare = row.Flops * 100 / r.Flops
		r.Ops = append(r.Ops, *row)
	}
	slices.SortFunc(r.Ops, func(a, b Op) int {
		if c := cmp.Compare(b.Flops, a.Flops); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return cmp.Compare(a.Dtype, b.Dtype)
	})
	r.DeviceUs = float64(totalDev) / 1e3
	if totalDev > 0 {
		r.TFLOPS = devFlops / (float64(totalDev) * 1e-9) / 1e12
	}
	var top float64
	for dt, f := range dtypeFlops {
		if f > top || f == top && dt < r.PeakDtype {
			top, r.PeakDtype = f, dt
		}
	}
	r.PeakTFLOPS = peaks.For(r.PeakDtype)
	if r.PeakTFLOPS > 0 {
		r.PeakPct = r.TFLOPS * 100 / r.PeakTFLOPS
	}
	return r
}
