// Package flops reports achieved throughput of matmul, convolution and
// attention ops: from the trace's "flops" argument (with_flops=True on
// older torch) or, where an op lacks it (torch 2.15 writes none), from its
// recorded input shapes (record_shapes=True; see FromShapes).
//
// Definitions (version "flops/2"):
//
//   - An op's FLOPs: its "flops" argument; else FromShapes of its "Input
//     Dims"/"Concrete Inputs", for the ops FromShapes covers, unless an
//     enclosing op already has FLOPs (counted once).
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
//     TF32 tensor cores when allowed; the fp32 peak is the CUDA-core one,
//     unless the achieved rate exceeds it: then the work ran on TF32
//     tensor cores and the TF32 peak applies (Op.TF32).
//   - Roofline, per op row whose calls all have input shapes: minimum
//     bytes (Cost.Bytes), arithmetic intensity = FLOPs / bytes, ridge
//     point = peak FLOP/s / memory bandwidth; below the ridge the op is
//     memory bound and its roof is intensity x bandwidth, above it the
//     roof is the peak. RoofPct is achieved TFLOP/s over the roof.
//   - Step MFU (SetStep): the FLOPs of ops with device work launched in
//     the steps the step breakdown averages (by the op's host step),
//     divided by those steps' count, over the mean step time: achieved
//     model FLOP/s of a step, against the peak of PeakDtype.
package flops

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Definition names the version of the definitions above.
const Definition = "flops/2"

// Op is one op name's throughput.
type Op struct {
	// Name is the op's name (aten::mm, aten::convolution, ...).
	Name string `json:"name"`
	// Dtype is the op's first input dtype: fp64, fp32, fp16, bf16 or fp8 ("" when unknown).
	Dtype string `json:"dtype"`
	// Calls is the number of calls with FLOPs.
	Calls int `json:"calls"`
	// Flops is the calls' summed FLOPs (a multiply-add is 2).
	Flops float64 `json:"flops"`
	// DeviceUs is the device time charged to the calls: the kernels, copies and memsets they launched, directly or through child ops.
	DeviceUs float64 `json:"device_us"`
	// TFLOPS is the achieved rate, Flops over DeviceUs, in 10^12 FLOP/s (0 without device time).
	TFLOPS float64 `json:"tflops"`
	// PeakTFLOPS is the device's dense peak for Dtype, in 10^12 FLOP/s; 0 when unknown.
	PeakTFLOPS float64 `json:"peak_tflops"`
	// PeakPct is TFLOPS as a percentage of PeakTFLOPS (0 when the peak is unknown).
	PeakPct float64 `json:"peak_pct"`
	// FlopsShare is Flops as a percentage of all the trace's FLOPs.
	FlopsShare float64 `json:"flops_pct"`
	// Bytes is the minimum bytes the calls with input shapes move (each input read once, the output written once).
	Bytes float64 `json:"bytes"`
	// Intensity is the arithmetic intensity, Flops over Bytes, in FLOP per byte (0 when a call lacks shapes).
	Intensity float64 `json:"flop_per_byte"`
	// Bound is "compute" or "memory": which roof limits the row ("" when a call lacks shapes or the device's peak or bandwidth is unknown).
	Bound string `json:"bound"`
	// RoofTFLOPS is the roofline's limit for the row: min(peak, intensity x bandwidth), in 10^12 FLOP/s (0 when Bound is "").
	RoofTFLOPS float64 `json:"roof_tflops"`
	// RoofPct is TFLOPS as a percentage of RoofTFLOPS (0 when Bound is "").
	RoofPct float64 `json:"roof_pct"`
	// TF32: an fp32 row faster than the CUDA-core fp32 peak, which only
	// tensor cores in tf32 mode make possible; its peak is the tf32 one.
	TF32 bool `json:"tf32,omitempty"`

	shapeless int // calls without bytes
}

// Result is the FLOPs analysis.
type Result struct {
	// Definition names the version of the definition (docs/metrics.md, "FLOPs and roofline").
	Definition string `json:"definition"`
	// Available is false when no op has FLOPs.
	Available bool `json:"available"`
	// ShapeCalls counts the calls whose FLOPs come from input shapes
	// rather than the trace's "flops" argument.
	ShapeCalls int `json:"shape_calls"`
	// Device is the name (from deviceProperties) of the device that ran most of the work charged to ops with FLOPs ("" when unknown).
	Device string `json:"device"`
	// Flops is the summed FLOPs of every op call with FLOPs.
	Flops float64 `json:"flops"`
	// CPUOnlyFlops is the part of Flops in calls with no device work (CPU execution), left out of the rate.
	CPUOnlyFlops float64 `json:"cpu_only_flops"`
	// DeviceUs is the device time charged to the calls with FLOPs.
	DeviceUs float64 `json:"device_us"`
	// TFLOPS is the achieved rate over the calls with device work: their FLOPs over DeviceUs, in 10^12 FLOP/s.
	TFLOPS float64 `json:"tflops"`
	// PeakTFLOPS is the peak for the dtype with the most flops.
	PeakTFLOPS float64 `json:"peak_tflops"`
	// PeakDtype is the dtype with the most FLOPs run on the device, whose peak PeakTFLOPS is.
	PeakDtype string `json:"peak_dtype"`
	// TF32: as ops[].tf32, for the total: the fp32 rate exceeds the CUDA-core peak, so the tf32 peak applies.
	TF32 bool `json:"tf32,omitempty"`
	// PeakPct is TFLOPS as a percentage of PeakTFLOPS (0 when the peak is unknown).
	PeakPct float64 `json:"peak_pct"`
	// BandwidthGBs is the device's memory bandwidth in GB/s (0: unknown).
	BandwidthGBs float64 `json:"bandwidth_gbs"`
	// Ops are the op name and dtype rows, by FLOPs, most first.
	Ops []Op `json:"ops"`
	// Step is the step MFU (absent when no step is averaged or no op with device work has FLOPs in them).
	Step *Step `json:"step,omitempty"`

	stepFlops map[int]float64 // device FLOPs per trace.Step Num
}

// Step is the achieved model FLOP/s of the mean step.
type Step struct {
	// Steps is the number of steps averaged (those the step breakdown averages).
	Steps int `json:"steps"`
	// Flops is the FLOPs per step of the ops with device work whose host op lies in those steps.
	Flops float64 `json:"flops"`
	// StepUs is the step breakdown's mean step time.
	StepUs float64 `json:"step_us"`
	// TFLOPS is Flops over StepUs, in 10^12 FLOP/s: the achieved model rate, a lower bound (only matmul, convolution and attention FLOPs count).
	TFLOPS float64 `json:"tflops"`
	// MFUPct is TFLOPS as a percentage of the peak (flops.peak_tflops); 0: peak unknown.
	MFUPct float64 `json:"mfu_pct"`
}

// Compute measures achieved FLOP/s.
func Compute(t *trace.Trace) *Result {
	ev := &t.Events
	r := &Result{Definition: Definition, Ops: []Op{}, stepFlops: map[int]float64{}}
	flops := map[int32]float64{}
	for i, k := range ev.Kind {
		if k != trace.KindCPUOp {
			continue
		}
		if f, ok := t.ArgFloat(i, trace.KeyFlops); ok && f > 0 {
			flops[int32(i)] = f
		}
	}
	costs := newShapeCosts(t)
	r.ShapeCalls = addShapeFlops(t, costs, flops)
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
		for o := ev.Op(i); o != trace.None; o = ev.Parent[o] {
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
	order := make([]int32, 0, len(flops))
	for o := range flops {
		order = append(order, o)
	}
	slices.Sort(order) // sums in a fixed order: the same figures every run
	for _, o := range order {
		f := flops[o]
		dt := classify.InputDtype(t, int(o))
		k := key{ev.Name[o], dt}
		row := rows[k]
		if row == nil {
			row = &Op{Name: t.Str(ev.Name[o]), Dtype: dt}
			rows[k] = row
		}
		row.Calls++
		row.Flops += f
		r.Flops += f
		if b := costs.shapeBytes(int(o)); b > 0 {
			row.Bytes += b
		} else {
			row.shapeless++
		}
		d, ok := dev[o]
		if !ok {
			r.CPUOnlyFlops += f
			continue
		}
		row.DeviceUs += float64(d) / 1e3
		if st := ev.Step[o]; st != trace.None {
			r.stepFlops[t.Steps[st].Num] += f
		}
		totalDev += d
		devFlops += f
		dtypeFlops[dt] += f
	}
	for _, row := range rows {
		if row.DeviceUs > 0 {
			row.TFLOPS = row.Flops / (row.DeviceUs * 1e-6) / 1e12
		}
		row.PeakTFLOPS, row.TF32 = peaks.forRate(row.Dtype, row.TFLOPS)
		if row.PeakTFLOPS > 0 {
			row.PeakPct = row.TFLOPS * 100 / row.PeakTFLOPS
		}
		row.FlopsShare = row.Flops * 100 / r.Flops
		if row.shapeless == 0 && row.Bytes > 0 {
			row.Intensity = row.Flops / row.Bytes
			if row.PeakTFLOPS > 0 && peaks.BandwidthGBs > 0 && row.DeviceUs > 0 {
				row.Bound, row.RoofTFLOPS = "compute", row.PeakTFLOPS
				if mem := row.Intensity * peaks.BandwidthGBs / 1e3; mem < row.PeakTFLOPS {
					row.Bound, row.RoofTFLOPS = "memory", mem
				}
				row.RoofPct = row.TFLOPS * 100 / row.RoofTFLOPS
			}
		}
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
	r.PeakTFLOPS, r.TF32 = peaks.forRate(r.PeakDtype, r.TFLOPS)
	r.BandwidthGBs = peaks.BandwidthGBs
	if r.PeakTFLOPS > 0 {
		r.PeakPct = r.TFLOPS * 100 / r.PeakTFLOPS
	}
	return r
}

// SetStep sets the step MFU from the step breakdown's averaged steps.
func (r *Result) SetStep(b *breakdown.Result) {
	if !r.Available || b == nil || b.AveragedSteps == 0 || b.Average.TotalUs <= 0 {
		return
	}
	var f float64
	for _, st := range b.Steps {
		if st.Incomplete || st.Excluded {
			continue
		}
		num, err := strconv.Atoi(st.Name)
		if err != nil {
			continue
		}
		f += r.stepFlops[num]
	}
	if f == 0 {
		return
	}
	s := &Step{Steps: b.AveragedSteps, Flops: f / float64(b.AveragedSteps), StepUs: b.Average.TotalUs}
	s.TFLOPS = s.Flops / (s.StepUs * 1e-6) / 1e12
	if r.PeakTFLOPS > 0 {
		s.MFUPct = s.TFLOPS * 100 / r.PeakTFLOPS
	}
	r.Step = s
}

// shapeCosts memoises FromShapes per distinct op name and shape
// arguments: the same shapes recur on every step, and parsing their JSON
// is most of this analysis.
type shapeCosts struct {
	t    *trace.Trace
	memo map[shapeKey]shapeCost
}

type shapeKey struct {
	name              trace.StrID
	dims, types, conc trace.Value
	hasTypes, hasConc bool
}

type shapeCost struct {
	c  Cost
	ok bool
}

func newShapeCosts(t *trace.Trace) *shapeCosts {
	return &shapeCosts{t: t, memo: map[shapeKey]shapeCost{}}
}

// of is FromShapes of op i's input shapes; false when it has no Input
// Dims.
func (s *shapeCosts) of(i int) (Cost, bool) {
	t := s.t
	k := shapeKey{name: t.Events.Name[i]}
	var ok bool
	if k.dims, ok = t.Arg(i, trace.KeyInputDims); !ok {
		return Cost{}, false
	}
	k.types, k.hasTypes = t.Arg(i, trace.KeyInputType)
	k.conc, k.hasConc = t.Arg(i, trace.KeyConcreteInputs)
	if c, ok := s.memo[k]; ok {
		return c.c, c.ok
	}
	dims, _ := t.ArgStr(i, trace.KeyInputDims)
	types, _ := t.ArgStr(i, trace.KeyInputType)
	conc, _ := t.ArgStr(i, trace.KeyConcreteInputs)
	c, ok := FromShapes(t.Str(k.name), ParseShapes(dims, types, conc))
	s.memo[k] = shapeCost{c, ok}
	return c, ok
}

// shapeBytes is the minimum bytes op i moves by its input shapes (0 when
// unknown).
func (s *shapeCosts) shapeBytes(i int) float64 {
	if !coveredOps[s.t.Str(s.t.Events.Name[i])] {
		return 0
	}
	c, _ := s.of(i)
	return c.Bytes
}

// addShapeFlops adds to flops the FLOPs, from input shapes, of the ops
// FromShapes covers that have no "flops" argument and no enclosing op
// with FLOPs; it returns how many it added.
func addShapeFlops(t *trace.Trace, costs *shapeCosts, flops map[int32]float64) int {
	ev := &t.Events
	covered := map[trace.StrID]bool{}
	for id, s := range t.AllStrings() {
		if coveredOps[s] {
			covered[id] = true
		}
	}
	found := map[int32]float64{}
	for i, k := range ev.Kind {
		if k != trace.KindCPUOp || !covered[ev.Name[i]] {
			continue
		}
		if _, ok := flops[int32(i)]; ok {
			continue
		}
		if c, ok := costs.of(i); ok && c.Flops > 0 {
			found[int32(i)] = c.Flops
		}
	}
	n := 0
	for o, f := range found {
		nested := false
		for p := ev.Parent[o]; p != trace.None; p = ev.Parent[p] {
			if _, ok := flops[p]; ok {
				nested = true
				break
			}
			if _, ok := found[p]; ok {
				nested = true
				break
			}
		}
		if !nested {
			flops[o] = f
			n++
		}
	}
	return n
}
