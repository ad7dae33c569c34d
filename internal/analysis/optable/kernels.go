package optable

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// KernelRow is one kernel table row. Times are µs.
type KernelRow struct {
	Name    string  `json:"name"`
	Calls   int     `json:"calls"`
	TotalUs float64 `json:"total_us"`
	MeanUs  float64 `json:"mean_us"`
	MinUs   float64 `json:"min_us"`
	MaxUs   float64 `json:"max_us"`
	// Duration-weighted means over the calls that report them; -1 when
	// none does.
	BlocksPerSM  float64 `json:"blocks_per_sm"`
	OccupancyPct float64 `json:"est_achieved_occupancy_pct"`
	TotalPct     float64 `json:"total_pct"`
	// TopOp launched most of this kernel's time.
	TopOp    string  `json:"top_op,omitempty"`
	TopOpPct float64 `json:"top_op_pct,omitempty"`
}

// KernelTable is the kernel table of one trace.
type KernelTable struct {
	Rows      []KernelRow `json:"rows"`
	TotalRows int         `json:"total_rows"`
	TotalUs   float64     `json:"total_us"`
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
		if op := ev.Op[i]; op != trace.None {
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
	if o.Top > 0 && len(res.Rows) > o.Top {
		res.Rows = res.Rows[:o.Top]
	}
	return res
}
