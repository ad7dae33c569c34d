// Package optable computes the operator table and the kernel table: the
// trace-file equivalents of prof.key_averages().table() and of a per-kernel
// summary.
package optable

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Options select and group the operator rows.
type Options struct {
	GroupByShape bool // split rows by Input Dims
	StackDepth   int  // >0: split rows by the innermost N Python frames
	SortBy       string
	Top          int // 0: all rows
	// FirstStep/LastStep restrict to steps with these numbers (inclusive);
	// zero values mean no bound. Ignored for traces without steps.
	FirstStep, LastStep int
	StepFilter          bool
}

// Sort keys for Options.SortBy.
var SortKeys = []string{"host_total", "host_self", "device_total", "device_self", "calls", "name"}

// OpRow is one operator table row. Times are µs.
type OpRow struct {
	Name           string  `json:"name"`
	InputDims      string  `json:"input_dims,omitempty"`
	Stack          string  `json:"stack,omitempty"`
	Calls          int     `json:"calls"`
	HostSelfUs     float64 `json:"host_self_us"`
	HostTotalUs    float64 `json:"host_total_us"`
	DeviceSelfUs   float64 `json:"device_self_us"`
	DeviceTotalUs  float64 `json:"device_total_us"`
	HostSelfPct    float64 `json:"host_self_pct"`
	DeviceSelfPct  float64 `json:"device_self_pct"`
	HostTotalPct   float64 `json:"host_total_pct"`
	DeviceTotalPct float64 `json:"device_total_pct"`
}

// OpTable is the operator table of one trace.
type OpTable struct {
	Rows       []OpRow `json:"rows"`
	TotalRows  int     `json:"total_rows"` // before Top
	Calls      int     `json:"calls"`      // of every row, before Top
	SortBy     string  `json:"sort_by"`
	HostSelfUs float64 `json:"host_self_sum_us"`
	DevSelfUs  float64 `json:"device_self_sum_us"`
	HasStacks  bool    `json:"has_stacks"`
	StepsFirst int     `json:"first_step,omitempty"`
	StepsLast  int     `json:"last_step,omitempty"`
}

// inTable reports whether events of kind k are rows of the operator table:
// what key_averages lists on the host side (ops, record_function ranges,
// runtime and driver calls), not Python frames.
func inTable(k trace.Kind) bool {
	return k == trace.KindCPUOp || k == trace.KindUserAnnotation || k == trace.KindRuntime || k == trace.KindDriver
}

// tableParent is the nearest ancestor that is itself a table row (Python
// frames in between are skipped).
func tableParent(t *trace.Trace, e int32) int32 {
	ev := &t.Events
	for p := ev.Parent[e]; p != trace.None; p = ev.Parent[p] {
		if inTable(ev.Kind[p]) {
			return p
		}
	}
	return trace.None
}

// stepOK reports whether event e lies in the selected steps.
func stepOK(t *trace.Trace, e int, o *Options) bool {
	if !o.StepFilter || t.SyntheticStep {
		return true
	}
	s := t.Events.Step[e]
	if s == trace.None {
		return false
	}
	n := t.Steps[s].Num
	return (o.FirstStep == 0 || n >= o.FirstStep) && (o.LastStep == 0 || n <= o.LastStep)
}

type opKey struct {
	name, dims trace.StrID
	stack      int
}

// Ops computes the operator table.
func Ops(t *trace.Trace, o Options) *OpTable {
	ev := &t.Events
	n := ev.Len()
	// Host self time: own duration minus direct table children.
	childSum := make([]int64, n)
	parent := make([]int32, n)
	for i := range n {
		parent[i] = trace.None
		if !inTable(ev.Kind[i]) {
			continue
		}
		p := tableParent(t, int32(i))
		parent[i] = p
		if p != trace.None {
			childSum[p] += ev.Dur[i]
		}
	}
	// Device time: self for the op that launched it, total for it and
	// every table ancestor.
	devSelf := make([]int64, n)
	devTotal := make([]int64, n)
	for i, k := range ev.Kind {
		if !k.IsDeviceWork() {
			continue
		}
		op := ev.Op[i] // the op, not the runtime call, owns the device time
		if op == trace.None {
			continue
		}
		d := ev.Dur[i]
		devSelf[op] += d
		for a := op; a != trace.None; a = parent[a] {
			devTotal[a] += d
		}
	}

	stacks := newStackKeys(t, o.StackDepth)
	rows := map[opKey]*OpRow{}
	var order []opKey
	res := &OpTable{HasStacks: stacks.available}
	for i, k := range ev.Kind {
		if !inTable(k) || !stepOK(t, i, &o) {
			continue
		}
		key := opKey{name: ev.Name[i]}
		if o.GroupByShape {
			if v, ok := t.Arg(i, trace.KeyInputDims); ok {
				key.dims, _ = v.StrID()
			}
		}
		if o.StackDepth > 0 {
			key.stack = stacks.key(int32(i))
		}
		r := rows[key]
		if r == nil {
			r = &OpRow{Name: t.Str(key.name), InputDims: t.Str(key.dims), Stack: stacks.text(key.stack)}
			rows[key] = r
			order = append(order, key)
		}
		self := ev.Dur[i] - childSum[i]
		r.Calls++
		r.HostTotalUs += us(ev.Dur[i])
		r.HostSelfUs += us(max(self, 0))
		r.DeviceSelfUs += us(devSelf[i])
		// A nested call of the same op would count its device time twice
		// in a flat sum; key_averages does the same, so do we.
		r.DeviceTotalUs += us(devTotal[i])
	}
	for _, key := range order {
		r := rows[key]
		res.HostSelfUs += r.HostSelfUs
		res.DevSelfUs += r.DeviceSelfUs
		res.Calls += r.Calls
		res.Rows = append(res.Rows, *r)
	}
	for i := range res.Rows {
		r := &res.Rows[i]
		r.HostSelfPct = pct(r.HostSelfUs, res.HostSelfUs)
		r.HostTotalPct = pct(r.HostTotalUs, res.HostSelfUs)
		r.DeviceSelfPct = pct(r.DeviceSelfUs, res.DevSelfUs)
		r.DeviceTotalPct = pct(r.DeviceTotalUs, res.DevSelfUs)
	}
	res.SortBy = o.SortBy
	if res.SortBy == "" {
		res.SortBy = "host_total"
		if res.DevSelfUs > 0 {
			res.SortBy = "device_total"
		}
	}
	sortOps(res.Rows, res.SortBy)
	res.TotalRows = len(res.Rows)
	if o.Top > 0 && len(res.Rows) > o.Top {
		res.Rows = res.Rows[:o.Top]
	}
	return res
}

// sortOps sorts rows by the column by, descending (names ascending), ties
// by name and then in their first order. It sorts indices, not the rows:
// a stable sort of a million wide rows (a trace with generated op names)
// spent most of its time moving them.
func sortOps(rows []OpRow, by string) {
	val := func(r *OpRow) float64 {
		switch by {
		case "name":
			return 0
		case "host_self":
			return r.HostSelfUs
		case "device_total":
			return r.DeviceTotalUs
		case "device_self":
			return r.DeviceSelfUs
		case "calls":
			return float64(r.Calls)
		}
		return r.HostTotalUs
	}
	vals := make([]float64, len(rows))
	order := make([]int32, len(rows))
	for i := range rows {
		vals[i], order[i] = val(&rows[i]), int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(vals[b], vals[a]); c != 0 {
			return c
		}
		if c := strings.Compare(rows[a].Name, rows[b].Name); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	sorted := make([]OpRow, len(rows))
	for i, o := range order {
		sorted[i] = rows[o]
	}
	copy(rows, sorted)
}

func us(ns int64) float64 { return float64(ns) / 1000 }

func pct(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}
