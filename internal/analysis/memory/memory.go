// Package memory summarises the allocator's [memory] events
// (profile_memory=True): peaks per device, a bounded timeline and the
// operators that allocate most.
//
// Definitions (version "memory/1"):
//
//   - Allocated / reserved: the allocator's "Total Allocated" / "Total
//     Reserved" reported with each [memory] event, per device (CPU, and
//     each GPU by Device Id). Peaks are the largest values reported; the
//     step of a peak is the ProfilerStep whose host span holds its
//     timestamp (-1 outside every step).
//   - Peak %: peak over deviceProperties totalGlobalMem (GPUs only).
//   - Timeline: the allocated/reserved series downsampled to at most
//     MaxPoints points per device: the time range is cut into MaxPoints/2
//     equal buckets and each keeps its lowest and highest allocated sample,
//     so every peak survives.
//   - Allocating ops: each allocation (Bytes > 0) is charged to the
//     innermost cpu_op enclosing the [memory] event on its thread; frees
//     are not charged. Allocations outside any op are "(no op)".
package memory

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/stats"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Definition names the version of the definitions above.
const Definition = "memory/1"

// MaxPoints bounds the timeline of each device.
const MaxPoints = 500

// TopOps is how many allocating ops are listed.
const TopOps = 20

// Point is one timeline sample.
type Point struct {
	// TsUs is the sample's time since the trace's first event.
	TsUs float64 `json:"ts_us"`
	// AllocatedBytes is the allocator's "Total Allocated" after the event.
	AllocatedBytes int64 `json:"allocated_bytes"`
	// ReservedBytes is the allocator's "Total Reserved" after the event.
	ReservedBytes int64 `json:"reserved_bytes"`
}

// Device is one device's memory figures.
type Device struct {
	// Device names the device: "CPU", "cuda:0", ..., "deviceT:N" for other Kineto device types.
	Device string `json:"device"`
	// DeviceType is Kineto's "Device Type": 0 CPU, 1 CUDA, others as Kineto numbers them.
	DeviceType int `json:"device_type"`
	// DeviceID is Kineto's "Device Id".
	DeviceID int `json:"device_id"`
	// Events is the number of [memory] events on the device.
	Events int `json:"events"`
	// Allocs is the number of allocations (events with Bytes > 0).
	Allocs int `json:"allocs"`
	// Frees is the number of frees (events with Bytes < 0).
	Frees int `json:"frees"`
	// AllocBytes is the sum of allocation sizes (turnover).
	AllocBytes int64 `json:"alloc_bytes"`
	// PeakAllocatedBytes is the largest "Total Allocated" the allocator reported.
	PeakAllocatedBytes int64 `json:"peak_allocated_bytes"`
	// PeakAllocatedUs is when the allocated peak was first reached, since the trace's first event.
	PeakAllocatedUs float64 `json:"peak_allocated_ts_us"`
	// PeakAllocatedStep is the ProfilerStep whose host span holds the allocated peak; -1: outside every step, or no steps.
	PeakAllocatedStep int `json:"peak_allocated_step"`
	// PeakReservedBytes is the largest "Total Reserved" the allocator reported.
	PeakReservedBytes int64 `json:"peak_reserved_bytes"`
	// PeakReservedUs is when the reserved peak was first reached, since the trace's first event.
	PeakReservedUs float64 `json:"peak_reserved_ts_us"`
	// PeakReservedStep is the ProfilerStep whose host span holds the reserved peak; -1: outside every step, or no steps.
	PeakReservedStep int `json:"peak_reserved_step"`
	// FinalAllocated is the "Total Allocated" of the device's last [memory] event.
	FinalAllocated int64 `json:"final_allocated_bytes"`
	// TotalBytes is the device memory (0 when unknown); the percentages
	// are 0 then.
	TotalBytes int64 `json:"total_bytes"`
	// PeakAllocatedPct is PeakAllocatedBytes as a percentage of TotalBytes (GPUs only; 0 when unknown).
	PeakAllocatedPct float64 `json:"peak_allocated_pct"`
	// PeakReservedPct is PeakReservedBytes as a percentage of TotalBytes (GPUs only; 0 when unknown).
	PeakReservedPct float64 `json:"peak_reserved_pct"`
	// Timeline is the allocated and reserved series in time order, at most 500 points: 250 equal time buckets keep their lowest and highest allocated sample.
	Timeline []Point `json:"timeline"`
}

// Op is one operator's allocations on one device.
type Op struct {
	// Name is the innermost cpu_op enclosing the allocations, "(no op)" for allocations outside every op.
	Name string `json:"name"`
	// Device is the device, as devices[].device.
	Device string `json:"device"`
	// Allocs is the number of allocations charged to the op on the device.
	Allocs int `json:"allocs"`
	// AllocBytes is the sum of their sizes (turnover, not residency).
	AllocBytes int64 `json:"alloc_bytes"`
	// LargestBytes is the largest single allocation.
	LargestBytes int64 `json:"largest_bytes"`
}

// Result is the memory analysis of one trace.
type Result struct {
	// Definition names the version of the definition (docs/metrics.md, "Memory").
	Definition string `json:"definition"`
	// Events is the number of [memory] events in the trace.
	Events int `json:"events"`
	// Devices are the devices with [memory] events, by device type and id.
	Devices []Device `json:"devices"`
	// TopOps are the op and device pairs that allocated the most bytes, most first, at most 20.
	TopOps []Op `json:"top_ops"`
}

// DeviceLabel names a Kineto device type and id.
func DeviceLabel(typ, id int) string {
	switch typ {
	case 0:
		return "CPU"
	case 1:
		return fmt.Sprintf("cuda:%d", id)
	}
	return fmt.Sprintf("device%d:%d", typ, id)
}

// Compute summarises t.Memory.
func Compute(t *trace.Trace) *Result {
	r := &Result{Definition: Definition, Events: len(t.Memory), Devices: []Device{}, TopOps: []Op{}}
	if len(t.Memory) == 0 {
		return r
	}
	origin, _ := t.Span()
	mem := t.Memory
	order := byDeviceAndTime(mem, t.Events.Start)
	stepNum := func(ts int64) int {
		if t.SyntheticStep {
			return -1
		}
		if s := t.StepAt(ts); s != trace.None {
			return t.Steps[s].Num
		}
		return -1
	}
	us := func(ts int64) float64 { return float64(ts-origin) / 1e3 }

	// An op's sums are kept in the map by value: a trace with an op name
	// per call has as many ops as allocations, and an *Op each, with its
	// strings, cost twice as much.
	type opKey struct {
		op  trace.StrID
		dev devKey
	}
	type opSums struct {
		bytes, largest int64
		allocs         int
	}
	ops := map[opKey]opSums{}
	noOp := trace.StrID(0)
	opName := func(op trace.StrID) string {
		if op == noOp {
			return "(no op)"
		}
		return t.Str(op)
	}
	labels := map[devKey]string{}
	ev := &t.Events
	for len(order) > 0 {
		k := deviceOf(&mem[order[0]])
		n := 1
		for n < len(order) && deviceOf(&mem[order[n]]) == k {
			n++
		}
		idx := order[:n] // the device's records in time order
		order = order[n:]
		labels[k] = DeviceLabel(int(k.typ), int(k.id))
		d := Device{Device: labels[k], DeviceType: int(k.typ), DeviceID: int(k.id), Events: len(idx),
			PeakAllocatedBytes: -1, PeakReservedBytes: -1}
		for _, i := range idx {
			m := &mem[i]
			if m.Bytes > 0 {
				d.Allocs++
				d.AllocBytes += m.Bytes
				op := noOp
				for p := ev.Parent[m.Event]; p != trace.None; p = ev.Parent[p] {
					if ev.Kind[p] == trace.KindCPUOp {
						op = ev.Name[p]
						break
					}
				}
				key := opKey{op, k}
				o := ops[key]
				o.allocs++
				o.bytes += m.Bytes
				o.largest = max(o.largest, m.Bytes)
				ops[key] = o
			} else if m.Bytes < 0 {
				d.Frees++
			}
			ts := ev.Start[m.Event]
			if m.TotalAllocated > d.PeakAllocatedBytes {
				d.PeakAllocatedBytes, d.PeakAllocatedUs, d.PeakAllocatedStep = m.TotalAllocated, us(ts), stepNum(ts)
			}
			if m.TotalReserved > d.PeakReservedBytes {
				d.PeakReservedBytes, d.PeakReservedUs, d.PeakReservedStep = m.TotalReserved, us(ts), stepNum(ts)
			}
		}
		d.FinalAllocated = mem[idx[len(idx)-1]].TotalAllocated
		if k.typ == 1 {
			if dp := t.Meta.Device(int(k.id)); dp != nil && dp.TotalGlobalMem > 0 {
				d.TotalBytes = dp.TotalGlobalMem
				d.PeakAllocatedPct = float64(d.PeakAllocatedBytes) * 100 / float64(dp.TotalGlobalMem)
				d.PeakReservedPct = float64(d.PeakReservedBytes) * 100 / float64(dp.TotalGlobalMem)
			}
		}
		d.Timeline = downsample(mem, ev.Start, idx, origin)
		r.Devices = append(r.Devices, d)
	}
	// Only the top found and named.
	type entry struct {
		key opKey
		opSums
	}
	all := func(yield func(entry) bool) {
		for k, o := range ops {
			if !yield(entry{k, o}) {
				return
			}
		}
	}
	top := stats.Top(all, TopOps, func(a, b entry) int {
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		if c := cmp.Compare(opName(a.key.op), opName(b.key.op)); c != 0 {
			return c
		}
		return cmp.Compare(labels[a.key.dev], labels[b.key.dev])
	})
	for _, o := range top {
		r.TopOps = append(r.TopOps, Op{Name: opName(o.key.op), Device: labels[o.key.dev], Allocs: o.allocs,
			AllocBytes: o.bytes, LargestBytes: o.largest})
	}
	return r
}

type devKey struct{ typ, id int8 }

func deviceOf(m *trace.MemoryRecord) devKey { return devKey{m.DeviceType, m.DeviceID} }

// byDeviceAndTime returns the positions of the records by device (type,
// then id), each device's in time order (stable): one list, each
// device's a stretch of it, not a sorted copy (48 bytes a record) nor a
// list per device.
func byDeviceAndTime(mem []trace.MemoryRecord, start []int64) []int32 {
	order := make([]int32, len(mem))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int {
		x, y := &mem[a], &mem[b]
		return cmp.Or(cmp.Compare(x.DeviceType, y.DeviceType), cmp.Compare(x.DeviceID, y.DeviceID), cmp.Compare(start[x.Event], start[y.Event]))
	})
	return order
}

// downsample keeps each bucket's lowest and highest allocated sample of
// one device's records (idx, in time order).
func downsample(mem []trace.MemoryRecord, start []int64, idx []int32, origin int64) []Point {
	at := func(p int) *trace.MemoryRecord { return &mem[idx[p]] }
	ts := func(p int) int64 { return start[at(p).Event] }
	pt := func(p int) Point {
		m := at(p)
		return Point{TsUs: float64(ts(p)-origin) / 1e3, AllocatedBytes: m.TotalAllocated, ReservedBytes: m.TotalReserved}
	}
	out := make([]Point, 0, min(len(idx), MaxPoints))
	if len(idx) <= MaxPoints {
		for p := range idx {
			out = append(out, pt(p))
		}
		return out
	}
	buckets := MaxPoints / 2
	first, last := ts(0), ts(len(idx)-1)
	span := max(last-first, 1)
	lo, hi, cur := -1, -1, -1
	flush := func() {
		if lo < 0 {
			return
		}
		a, b := lo, hi
		if a > b {
			a, b = b, a
		}
		out = append(out, pt(a))
		if b != a {
			out = append(out, pt(b))
		}
	}
	for p := range idx {
		bk := int(float64(ts(p)-first) / float64(span) * float64(buckets))
		bk = min(bk, buckets-1)
		if bk != cur {
			flush()
			cur, lo, hi = bk, p, p
			continue
		}
		if at(p).TotalAllocated < at(lo).TotalAllocated {
			lo = p
		}
		if at(p).TotalAllocated > at(hi).TotalAllocated {
			hi = p
		}
	}
	flush()
	return out
}
