package optable

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// KernelRow is one kernel table row: the kernels of one name in the steps
// the table covers. Times are µs.
type KernelRow struct {
	// Name is the kernel's name.
	Name string `json:"name"`
	// Calls is the number of kernels of this name.
	Calls int `json:"calls"`
	// TotalUs is their summed duration.
	TotalUs float64 `json:"total_us"`
	// MeanUs is their mean duration.
	MeanUs float64 `json:"mean_us"`
	// MinUs is the shortest one's duration.
	MinUs float64 `json:"min_us"`
	// MaxUs is the longest one's duration.
	MaxUs float64 `json:"max_us"`
	// BlocksPerSM is the duration-weighted mean "blocks per SM" over the calls that report it; -1 when none does.
	BlocksPerSM float64 `json:"blocks_per_sm"`
	// OccupancyPct is the duration-weighted mean "est. achieved occupancy %" over the calls that report it; -1 when none does.
	OccupancyPct float64 `json:"est_achieved_occupancy_pct"`
	// TotalPct is TotalUs as a percentage of the table's total kernel time.
	TotalPct float64 `json:"total_pct"`
	// TopOp is the op that launched most of this kernel's time (absent when none of its calls is linked to an op).
	TopOp string `json:"top_op,omitempty"`
	// TopOpPct is the share of this kernel's time TopOp launched, in percent (absent with TopOp).
	TopOpPct float64 `json:"top_op_pct,omitempty"`
}

// KernelTable is the kernel table of one trace.
type KernelTable struct {
	// Rows are the kernel names by total time, largest first, the first --top of them.
	Rows []KernelRow `json:"rows"`
	// TotalRows is the number of kernel names before --top kept the first ones.
	TotalRows int `json:"total_rows"`
	// TotalUs is the summed duration of every kernel the table covers, before --top.
	TotalUs float64 `json:"total_us"`
	// ranked: see Ranked.
	ranked []KernelRow
}

type kernAcc struct {
	row             KernelRow
	min, max, total int64
	bpsW, occW      float64
	bpsDur, occDur  int64
	byOp            map[trace.StrID]int64
}

// Kernels computes the kernel table, sorted by total time.
func Kernels(t *trace.Trace, o Options) *KernelTable {
	ev := &t.Events
	acc := map[trace.StrID]*kernAcc{}
	var order []trace.StrID
	res := &KernelTable{}
	var total int64
	for i, k := range ev.Kind {
		if k != trace.KindKernel || !stepOK(t, i, &o) {
			continue
		}
		name := ev.Name[i]
		a := acc[name]
		if a == nil {
			a = &kernAcc{min: ev.Dur[i], byOp: map[trace.StrID]int64{}}
			acc[name] = a
			order = append(order, name)
		}
		d := ev.Dur[i]
		a.row.Calls++
		a.total += d
		total += d
		a.min, a.max = min(a.min, d), max(a.max, d)
		if v, ok := t.ArgFloat(i, trace.KeyBlocksPerSM); ok {
			a.bpsW += v * float64(d)
			a.bpsDur += d
		}
		if v, ok := t.ArgFloat(i, trace.KeyOccupancy); ok {
			a.occW += v * float64(d)
			a.occDur += d
		}
		if op := ev.Op(i); op != trace.None {
			a.byOp[ev.Name[op]] += d
		}
	}
	for _, name := range order {
		a := acc[name]
		r := a.row
		r.Name = t.Str(name)
		r.TotalUs, r.MinUs, r.MaxUs = us(a.total), us(a.min), us(a.max)
		r.MeanUs = r.TotalUs / float64(r.Calls)
		r.BlocksPerSM, r.OccupancyPct = -1, -1
		if a.bpsDur > 0 {
			r.BlocksPerSM = a.bpsW / float64(a.bpsDur)
		}
		if a.occDur > 0 {
			r.OccupancyPct = a.occW / float64(a.occDur)
		}
		var best trace.StrID
		var bestDur int64 = -1
		for op, d := range a.byOp {
			if d > bestDur || d == bestDur && t.Str(op) < t.Str(best) {
				best, bestDur = op, d
			}
		}
		if bestDur > 0 {
			r.TopOp = t.Str(best)
			r.TopOpPct = pct(float64(bestDur), float64(a.total))
		}
		r.TotalPct = pct(float64(a.total), float64(total))
		res.Rows = append(res.Rows, r)
	}
	res.TotalUs = us(total)
	slices.SortStableFunc(res.Rows, func(a, b KernelRow) int {
		if c := cmp.Compare(b.TotalUs, a.TotalUs); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	res.TotalRows = len(res.Rows)
	res.ranked = res.Rows[:min(len(res.Rows), RankedRows)]
	if o.Top > 0 && len(res.Rows) > o.Top {
		res.Rows = res.Rows[:o.Top]
	}
	return res
}

// Ranked returns the first RankedRows rows by total time, whatever --top
// kept: what the diagnosis reads (the rows alone for a table built by
// hand).
func (k *KernelTable) Ranked() []KernelRow {
	if k.ranked == nil {
		return k.Rows
	}
	return k.ranked
}
