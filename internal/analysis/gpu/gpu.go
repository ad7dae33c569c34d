// Package gpu measures how well each device was used: utilization,
// estimated SM efficiency, estimated achieved occupancy, tensor-core share
// of kernel time, and memory copies by direction.
//
// Definitions (DefinitionVersion), per device (kernel events grouped by
// their track's device):
//   - Window: the steps' time, from the first step's start to the end of
//     the last complete step in device time (breakdown's step windows);
//     the whole trace when it has no ProfilerStep.
//   - Utilization: time with at least one kernel running on the device
//     (memcpy/memset excluded) inside the window / window.
//   - Est. SM efficiency: ∫ min(Σ "blocks per SM" of the running kernels,
//     1) dt over the window / window. Kernels without the arg (or ≤ 0) are
//     left out; nil when no kernel has it.
//   - Est. achieved occupancy: mean of "est. achieved occupancy %" over
//     kernels, weighted by each kernel's time inside the window; nil when
//     no kernel has it.
//   - Tensor cores: share of the device's kernel time (all kernels, whole
//     trace) in kernels classify.UsesTensorCores recognises; the plugin's
//     narrower list is reported beside it (TBTensorCorePct).
//   - Kernel families: the device's kernel time (whole trace) by family,
//     math unit and precision of the kernel-semantics table
//     (internal/analysis/kernels, docs/kernels.md); unknown kernels form
//     their own row.
//   - Memcpy: per direction (HtoD, DtoH, DtoD, HtoH, PtoP) and host memory
//     kind (pinned, pageable, managed), count, bytes (arg "bytes"), time
//     and bandwidth = bytes / time. Pageable copies block the host and are
//     staged by the driver; pinned ones can overlap.
//
// Definition "tb" uses the TensorBoard plugin's window (its device-time
// step boundaries and tail-step dropping), so utilization, SM efficiency
// and occupancy match its GPU panel.
package gpu

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/kernels"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// DefinitionVersion names the definition in JSON output.
const DefinitionVersion = "gpu/1"

// Options select the definition of the window.
type Options struct {
	Definition breakdown.Def
	// Exclude, indexed like trace.Steps, leaves steps out of the window
	// (breakdown.Options.Exclude); ignored by "tb".
	Exclude []bool
	// Breakdown, when set, is the step breakdown of the same trace with
	// the same definition and exclusions, whose steps make the window:
	// computed once for both (it is most of this analysis's work).
	Breakdown *breakdown.Result
}

// Memcpy is the copies of one direction and host memory kind.
type Memcpy struct {
	// Direction is HtoD, DtoH, DtoD, HtoH or PtoP, from the copy's name.
	Direction string `json:"direction"`
	// HostMemory is the host memory kind, pinned, pageable or managed (absent when the name does not say).
	HostMemory string `json:"host_memory,omitempty"`
	// Count is the number of copies, over the whole trace.
	Count int `json:"count"`
	// Bytes is the sum of the copies' "bytes" arguments.
	Bytes int64 `json:"bytes"`
	// TimeUs is the copies' summed duration.
	TimeUs float64 `json:"time_us"`
	// BandwidthGBps is Bytes over TimeUs, in GB/s (10^9 bytes per second); 0 when TimeUs is 0.
	BandwidthGBps float64 `json:"bandwidth_gbps"`
}

// FamilyTime is the kernel time of one family/unit/precision.
type FamilyTime struct {
	// Family is the kernel family of the kernel-semantics table (gemm, conv, attention, ...; docs/kernels.md); "unknown" for kernels no rule matches.
	Family string `json:"family"`
	// Unit is the math unit: "tensor" (tensor/matrix cores), "simt" (CUDA cores), absent when unknown.
	Unit string `json:"unit,omitempty"`
	// Precision is the kernels' precision, fp64 down to fp4 or int8 (absent when the kernel names do not say).
	Precision string `json:"precision,omitempty"`
	// Kernels is the number of kernel launches in the row.
	Kernels int `json:"kernels"`
	// TimeUs is the row's summed kernel duration, over the whole trace.
	TimeUs float64 `json:"time_us"`
	// Pct is TimeUs as a percentage of the device's kernel time.
	Pct float64 `json:"pct"`
}

// Device is one device's metrics.
type Device struct {
	// Device is the device index of the trace's GPU rows.
	Device int `json:"device"`
	// Name is the device's name from deviceProperties (absent when the trace has none).
	Name string `json:"name,omitempty"`
	// ComputeCapability is "major.minor" from deviceProperties (absent when unknown).
	ComputeCapability string `json:"compute_capability,omitempty"`
	// MemoryBytes is the device's memory (totalGlobalMem; absent when unknown).
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// NumSMs is the device's number of streaming multiprocessors (absent when unknown).
	NumSMs int `json:"num_sms,omitempty"`
	// Streams are the streams with kernels, copies or memsets on the device, in ascending order.
	Streams []int64 `json:"streams"`
	// KernelCount is the number of kernels on the device, over the whole trace.
	KernelCount int `json:"kernel_count"`
	// KernelTimeUs is the kernels' summed duration, over the whole trace (overlapping kernels add up).
	KernelTimeUs float64 `json:"kernel_time_us"`
	// BusyUs is the time inside the window with at least one kernel running on the device.
	BusyUs float64 `json:"busy_us"`
	// UtilizationPct is BusyUs as a percentage of the window (0 when the window is empty).
	UtilizationPct float64 `json:"utilization_pct"`
	// SMEfficiencyPct is the estimated SM efficiency: ∫ min(Σ blocks per SM of the running kernels, 1) dt over the window, as a percentage of the window; null when no kernel has "blocks per SM".
	SMEfficiencyPct *float64 `json:"sm_efficiency_pct"`
	// OccupancyPct is the estimated achieved occupancy: the mean of the kernels' "est. achieved occupancy %" weighted by their time inside the window; null when no kernel has it.
	OccupancyPct *float64 `json:"occupancy_pct"`
	// TensorCoreTimeUs is the summed duration of the kernels that use tensor cores (math unit "tensor" in docs/kernels.md), over the whole trace.
	TensorCoreTimeUs float64 `json:"tensor_core_time_us"`
	// TensorCorePct is TensorCoreTimeUs as a percentage of the device's kernel time, a lower bound (unknown kernels count as no tensor core).
	TensorCorePct float64 `json:"tensor_core_pct"`
	// TBTensorCorePct is the tensor-core share by the TensorBoard plugin's 18-name list, as a percentage of the device's kernel time.
	TBTensorCorePct float64 `json:"tb_tensor_core_pct"`
	// Families: kernel time by family, largest first.
	Families []FamilyTime `json:"families"`
	// MemcpyCount is the number of memory copies on the device, over the whole trace.
	MemcpyCount int `json:"memcpy_count"`
	// MemcpyBytes is the copies' summed "bytes" arguments.
	MemcpyBytes int64 `json:"memcpy_bytes"`
	// MemcpyTimeUs is the copies' summed duration.
	MemcpyTimeUs float64 `json:"memcpy_time_us"`
	// Memcpy is the copies by direction and host memory kind, by time, largest first.
	Memcpy []Memcpy `json:"memcpy"`
	// MemsetCount is the number of memsets on the device, over the whole trace.
	MemsetCount int `json:"memset_count"`
	// MemsetTimeUs is the memsets' summed duration.
	MemsetTimeUs float64 `json:"memset_time_us"`
}

// Result is the per-device metrics of one trace.
type Result struct {
	// Definition names the version of the definition: "gpu/1", or "gpu/tb/0.4.3" with --definition tb (docs/metrics.md, "GPU per device").
	Definition string `json:"definition"`
	// WindowStartUs is the window's start on the trace's clock: the start of the first step the step breakdown averages (the first step when it averages none).
	WindowStartUs float64 `json:"window_start_us"`
	// WindowEndUs is the window's end on the trace's clock: the end, in device time, of the last step averaged.
	WindowEndUs float64 `json:"window_end_us"`
	// WindowUs is the window's length, the time utilization and SM efficiency are measured over.
	WindowUs float64 `json:"window_us"`
	// Devices are the devices with kernels, copies or memsets, by device index.
	Devices []Device `json:"devices"`
}

// Compute measures every device of t.
func Compute(t *trace.Trace, opts Options) (*Result, error) {
	def := DefinitionVersion
	bopts := breakdown.Options{}
	switch opts.Definition {
	case breakdown.Default, "default":
		bopts.Exclude = opts.Exclude
	case breakdown.TB:
		def = "gpu/" + breakdown.TBVersion
		bopts.Definition = breakdown.TB
	default:
		return nil, fmt.Errorf("gpu: unknown definition %q (want default or tb)", opts.Definition)
	}
	br := opts.Breakdown
	if br == nil {
		var err error
		if br, err = breakdown.Compute(t, bopts); err != nil {
			return nil, err
		}
	}
	// the window runs from the first to the last averaged step
	var w interval.Span
	first, last := -1, -1
	for i, st := range br.Steps {
		if !st.Incomplete && !st.Excluded {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 && len(br.Steps) > 0 {
		first, last = 0, 0
	}
	if first >= 0 {
		w = interval.Span{Start: usToNs(br.Steps[first].StartUs), End: usToNs(br.Steps[last].EndUs)}
	}
	return compute(t, w, def, bopts.Definition == breakdown.TB), nil
}

func usToNs(us float64) int64 { return int64(math.Round(us * 1000)) }

type devAcc struct {
	kernels    []interval.Span
	blocks     []point
	occW, occT float64
	hasOcc     bool
	d          Device
	streams    map[int64]bool
	memcpy     map[[2]uint8]*Memcpy
}

type point struct {
	t int64
	v float64 // +value at start, -value at end
}

func compute(t *trace.Trace, w interval.Span, def string, tb bool) *Result {
	ev := &t.Events
	cl := classify.For(t)
	// Kernels are counted per device first, so that their spans and
	// block points take one allocation each (grown by appends they
	// allocated three times their size).
	kernelsOn := map[int]int{}
	for i, k := range ev.Kind {
		if k != trace.KindKernel {
			continue
		}
		if tr := &t.Tracks[ev.Track[i]]; tr.IsDevice() {
			kernelsOn[tr.Device]++
		}
	}
	devs := map[int]*devAcc{}
	get := func(d int) *devAcc {
		a := devs[d]
		if a == nil {
			a = &devAcc{streams: map[int64]bool{}, memcpy: map[[2]uint8]*Memcpy{}, kernels: make([]interval.Span, 0, kernelsOn[d])}
			a.d.Device = d
			devs[d] = a
		}
		return a
	}
	var tcT, tbT = map[int]float64{}, map[int]float64{}
	kinds := map[trace.StrID]kernels.Kind{} // classified once per name
	famT := map[int]map[kernels.Kind]*FamilyTime{}
	for i, k := range ev.Kind {
		if k != trace.KindKernel && k != trace.KindMemcpy && k != trace.KindMemset {
			continue
		}
		tr := &t.Tracks[ev.Track[i]]
		if !tr.IsDevice() {
			continue
		}
		a := get(tr.Device)
		a.streams[tr.Stream] = true
		s, e := ev.Start[i], ev.Start[i]+ev.Dur[i]
		if tb {
			s, e = breakdown.TBSpan(ev.Start[i], ev.Dur[i])
		}
		dur := float64(ev.Dur[i]) / 1000
		switch k {
		case trace.KindKernel:
			a.d.KernelCount++
			a.d.KernelTimeUs += dur
			a.kernels = append(a.kernels, interval.Span{Start: s, End: e})
			if cl.Has(ev.Name[i], classify.TensorCore) {
				tcT[tr.Device] += dur
			}
			if cl.Has(ev.Name[i], classify.TBTensorCore) {
				tbT[tr.Device] += dur
			}
			kd, ok := kinds[ev.Name[i]]
			if !ok {
				kd = kernels.Classify(t.Str(ev.Name[i]))
				kd.Rule = ""
				kinds[ev.Name[i]] = kd
			}
			if famT[tr.Device] == nil {
				famT[tr.Device] = map[kernels.Kind]*FamilyTime{}
			}
			ft := famT[tr.Device][kd]
			if ft == nil {
				ft = &FamilyTime{Family: cmp.Or(string(kd.Family), "unknown"), Unit: string(kd.Unit), Precision: kd.Precision}
				famT[tr.Device][kd] = ft
			}
			ft.Kernels++
			ft.TimeUs += dur
			if b, ok := t.ArgFloat(i, trace.KeyBlocksPerSM); ok && b > 0 {
				if a.blocks == nil { // two points a kernel: Kineto gives every kernel its blocks
					a.blocks = make([]point, 0, 2*kernelsOn[tr.Device])
				}
				a.blocks = append(a.blocks, point{s, b}, point{e, -b})
			}
			if o, ok := t.ArgFloat(i, trace.KeyOccupancy); ok && o >= 0 {
				a.hasOcc = true
				if lo, hi := max(s, w.Start), min(e, w.End); lo < hi {
					a.occW += o * float64(hi-lo)
					a.occT += float64(hi - lo)
				}
			}
		case trace.KindMemcpy:
			dir, host := classify.Memcpy(t.Str(ev.Name[i]))
			key := [2]uint8{uint8(dir), uint8(host)}
			m := a.memcpy[key]
			if m == nil {
				m = &Memcpy{Direction: dir.String(), HostMemory: host.String()}
				a.memcpy[key] = m
			}
			m.Count++
			m.TimeUs += dur
			if b, ok := t.ArgInt(i, trace.KeyBytes); ok {
				m.Bytes += b
			}
		case trace.KindMemset:
			a.d.MemsetCount++
			a.d.MemsetTimeUs += dur
		}
	}
	r := &Result{Definition: def, WindowStartUs: float64(w.Start) / 1000, WindowEndUs: float64(w.End) / 1000,
		WindowUs: float64(w.Len()) / 1000}
	ids := make([]int, 0, len(devs))
	for d := range devs {
		ids = append(ids, d)
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := devs[id]
		d := a.d
		if p := t.Meta.Device(id); p != nil {
			d.Name = p.Name
			if p.ComputeMajor > 0 {
				d.ComputeCapability = fmt.Sprintf("%d.%d", p.ComputeMajor, p.ComputeMinor)
			}
			d.MemoryBytes = p.TotalGlobalMem
			d.NumSMs = p.NumSMs
		}
		for s := range a.streams {
			d.Streams = append(d.Streams, s)
		}
		slices.Sort(d.Streams)
		busy := interval.Of(a.kernels).OverlapLen(w)
		d.BusyUs = float64(busy) / 1000
		if w.Len() > 0 {
			d.UtilizationPct = 100 * float64(busy) / float64(w.Len())
			if len(a.blocks) > 0 {
				v := 100 * smEfficiency(a.blocks, w) / float64(w.Len())
				d.SMEfficiencyPct = &v
			}
		}
		if a.hasOcc && a.occT > 0 {
			v := a.occW / a.occT
			d.OccupancyPct = &v
		}
		d.TensorCoreTimeUs = tcT[id]
		if d.KernelTimeUs > 0 {
			d.TensorCorePct = 100 * tcT[id] / d.KernelTimeUs
			d.TBTensorCorePct = 100 * tbT[id] / d.KernelTimeUs
		}
		d.Families = []FamilyTime{}
		for _, ft := range famT[id] {
			if d.KernelTimeUs > 0 {
				ft.Pct = 100 * ft.TimeUs / d.KernelTimeUs
			}
			d.Families = append(d.Families, *ft)
		}
		slices.SortFunc(d.Families, func(x, y FamilyTime) int {
			return cmp.Or(cmp.Compare(y.TimeUs, x.TimeUs), cmp.Compare(x.Family, y.Family), cmp.Compare(x.Unit, y.Unit), cmp.Compare(x.Precision, y.Precision))
		})
		for _, m := range a.memcpy {
			if m.TimeUs > 0 {
				m.BandwidthGBps = float64(m.Bytes) / (m.TimeUs * 1000)
			}
			d.MemcpyCount += m.Count
			d.MemcpyBytes += m.Bytes
			d.MemcpyTimeUs += m.TimeUs
			d.Memcpy = append(d.Memcpy, *m)
		}
		slices.SortFunc(d.Memcpy, func(x, y Memcpy) int {
			return cmp.Or(cmp.Compare(y.TimeUs, x.TimeUs), cmp.Compare(x.Direction, y.Direction), cmp.Compare(x.HostMemory, y.HostMemory))
		})
		r.Devices = append(r.Devices, d)
	}
	return r
}

// smEfficiency integrates min(Σ blocks per SM, 1) over w (ns).
func smEfficiency(pts []point, w interval.Span) float64 {
	slices.SortFunc(pts, func(a, b point) int { return cmp.Compare(a.t, b.t) })
	var total, level float64
	last := pts[0].t
	for _, p := range pts {
		if p.t > last && level > 1e-12 {
			lo, hi := max(last, w.Start), min(p.t, w.End)
			if lo < hi {
				total += min(level, 1) * float64(hi-lo)
			}
		}
		last = p.t
		level += p.v
	}
	return total
}
