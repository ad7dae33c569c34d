// Package optable computes the operator table and the kernel table: the
// trace-file equivalents of prof.key_averages().table() and of a per-kernel
// summary.
package optable

import (
	"cmp"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/stats"
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
	// Exclude, indexed like trace.Steps, leaves steps out too (those the
	// window check left out); only with StepFilter.
	Exclude []bool
}

// Sort keys for Options.SortBy.
var SortKeys = []string{"host_total", "host_self", "device_total", "device_self", "calls", "name"}

// OpRow is one operator table row: the calls of one op name (and input
// dims or stack when grouped by them) in the steps the table covers.
// Times are µs.
type OpRow struct {
	// Name is the op's name: a cpu_op, user_annotation (record_function range), runtime or driver call.
	Name string `json:"name"`
	// InputDims is the calls' "Input Dims" argument (with --group-by-shape; absent otherwise or when the trace lacks it).
	InputDims string `json:"input_dims,omitempty"`
	// Stack is the innermost Python frames of the calls, innermost first, joined by " <- " (with --group-by-stack; absent otherwise).
	Stack string `json:"stack,omitempty"`
	// Annotation: the row is a record_function range (user_annotation), the program's or torch's, not an op.
	Annotation bool `json:"annotation,omitempty"`
	// Calls is the number of calls.
	Calls int `json:"calls"`
	// HostSelfUs is the calls' summed duration minus that of the table rows called directly inside them (Python frames in between skipped).
	HostSelfUs float64 `json:"host_self_us"`
	// HostTotalUs is the calls' summed duration.
	HostTotalUs float64 `json:"host_total_us"`
	// DeviceSelfUs is the device time (kernels, copies, memsets) the calls launched directly.
	DeviceSelfUs float64 `json:"device_self_us"`
	// DeviceTotalUs is the device time the calls and every op inside them launched (a nested call of the same op counts it twice, as key_averages does).
	DeviceTotalUs float64 `json:"device_total_us"`
	// HostSelfPct is HostSelfUs as a percentage of the table's summed host self time.
	HostSelfPct float64 `json:"host_self_pct"`
	// DeviceSelfPct is DeviceSelfUs as a percentage of the table's summed device self time.
	DeviceSelfPct float64 `json:"device_self_pct"`
	// HostTotalPct is HostTotalUs as a percentage of the table's summed host self time (nested rows make the column add up to more than 100).
	HostTotalPct float64 `json:"host_total_pct"`
	// DeviceTotalPct is DeviceTotalUs as a percentage of the table's summed device self time.
	DeviceTotalPct float64 `json:"device_total_pct"`
}

// OpTable is the operator table of one trace.
type OpTable struct {
	// Rows are the table's rows in SortBy order, the first --top of them.
	Rows []OpRow `json:"rows"`
	// TotalRows is the number of rows before --top kept the first ones.
	TotalRows int `json:"total_rows"`
	// Calls is the summed calls of every row, before --top.
	Calls int `json:"calls"`
	// SortBy is the column the rows are sorted by: host_total, host_self, device_total, device_self, calls or name.
	SortBy string `json:"sort_by"`
	// HostSelfUs is the summed host self time of every row, before --top: the base of the host percentages.
	HostSelfUs float64 `json:"host_self_sum_us"`
	// DevSelfUs is the summed device self time of every row, before --top: the base of the device percentages.
	DevSelfUs float64 `json:"device_self_sum_us"`
	// HasStacks: the trace has Python stacks ("Call stack" args or python_function events) to group rows by.
	HasStacks bool `json:"has_stacks"`
	// StepsFirst is the first ProfilerStep number of the range the table is restricted to (absent: not restricted).
	StepsFirst int `json:"first_step,omitempty"`
	// StepsLast is the last ProfilerStep number of the range the table is restricted to (absent: not restricted).
	StepsLast int `json:"last_step,omitempty"`
	// Steps is how many steps of that range the table covers: fewer than the range holds when steps inside it were left out (absent: not restricted).
	Steps int `json:"steps,omitempty"`
	// BackwardCalls is the calls of autograd's backward ops (autograd::engine::evaluate_function, *Backward0 nodes) in the table's steps: 0 when no backward ran there, as in inference.
	BackwardCalls int `json:"backward_calls"`
	// Dtypes is the ops' time by the precision they compute in, most first (absent when the trace recorded no input types).
	Dtypes []DtypeTime `json:"dtypes,omitempty"`
	// ranked: see Ranked (nil: Rows begin with those rows).
	ranked []OpRow
	// Recompute is the layers' forward ops that ran inside a backward op, as activation checkpointing runs them again, in the table's steps (absent: none).
	Recompute *Recompute `json:"recompute,omitempty"`
	// Scores is what made the scores of the trace's softmax calls (attention's: ScoreSources).
	Scores ScoreSources `json:"softmax_scores"`
}

// Recompute is the forward work run again inside the backward: the
// outermost calls of ops a layer's forward enters by (aten::linear,
// aten::conv2d, aten::layer_norm, ...: classify.LayerForward) that have a
// backward op (classify.Backward) among their ancestors.
type Recompute struct {
	// Calls is the number of such calls.
	Calls int `json:"calls"`
	// HostUs is their summed host duration (their children included).
	HostUs float64 `json:"host_us"`
	// DeviceUs is the device time of the kernels, memcpys and memsets they and their children launched.
	DeviceUs float64 `json:"device_us"`
	// Ops is the calls' host time by op name, most first.
	Ops []RecomputeOp `json:"ops"`
}

// RecomputeOp is one op's share of the recomputed forward.
type RecomputeOp struct {
	// Name is the op's name (aten::linear, ...).
	Name string `json:"name"`
	// Calls is its recomputed calls.
	Calls int `json:"calls"`
	// HostUs is their summed host duration.
	HostUs float64 `json:"host_us"`
}

// DtypeTime is the time of the ops (cpu_op events) that compute in one
// dtype: those whose first floating input has it (classify.InputDtype).
type DtypeTime struct {
	// Dtype is the precision, one of fp64, fp32, fp16, bf16 and fp8; "none" for ops without a floating input (integer indexing, factories, ops recorded without types).
	Dtype string `json:"dtype"`
	// Calls is the number of op calls.
	Calls int `json:"calls"`
	// HostSelfUs is the calls' host self time, as in the table's rows.
	HostSelfUs float64 `json:"host_self_us"`
	// DeviceSelfUs is the device time the calls launched directly.
	DeviceSelfUs float64 `json:"device_self_us"`
}

// inTable reports whether events of kind k are rows of the operator table:
// what key_averages lists on the host side (ops, record_function ranges,
// runtime and driver calls), not Python frames.
func inTable(k trace.Kind) bool {
	return k == trace.KindCPUOp || k == trace.KindUserAnnotation || k == trace.KindRuntime || k == trace.KindDriver
}

// recomputeSums gathers OpTable.Recompute.
type recomputeSums struct {
	events   map[int32]bool // the calls, by table number
	byName   map[trace.StrID]*RecomputeOp
	calls    int
	hostNs   int64
	deviceNs int64
}

// add counts event e (table number j), a layer's forward op, when a
// backward op encloses it and no other layer's forward op does (that one
// is counted instead: aten::linear inside a recomputed aten::lstm).
func (r *recomputeSums) add(t *trace.Trace, names *classify.Table, e, j int32) {
	ev := &t.Events
	backward := false
	for p := ev.Parent[e]; p != trace.None; p = ev.Parent[p] {
		switch f := names.Flags(ev.Name[p]); {
		case f&classify.LayerForward != 0:
			return
		case f&classify.Backward != 0:
			backward = true
		}
	}
	if !backward {
		return
	}
	if r.events == nil {
		r.events, r.byName = map[int32]bool{}, map[trace.StrID]*RecomputeOp{}
	}
	r.events[j] = true
	r.calls++
	r.hostNs += ev.Dur[e]
	op := r.byName[ev.Name[e]]
	if op == nil {
		op = &RecomputeOp{Name: t.Str(ev.Name[e])}
		r.byName[ev.Name[e]] = op
	}
	op.Calls++
	op.HostUs += us(ev.Dur[e])
}

func (r *recomputeSums) result() *Recompute {
	if r.calls == 0 {
		return nil
	}
	res := &Recompute{Calls: r.calls, HostUs: us(r.hostNs), DeviceUs: us(r.deviceNs)}
	for _, op := range r.byName {
		res.Ops = append(res.Ops, *op)
	}
	slices.SortFunc(res.Ops, func(a, b RecomputeOp) int {
		return cmp.Or(cmp.Compare(b.HostUs, a.HostUs), cmp.Compare(a.Name, b.Name))
	})
	return res
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
	return s != trace.None && stepKept(t, int(s), o)
}

// stepKept reports whether the step filter keeps step s (an index of
// t.Steps).
func stepKept(t *trace.Trace, s int, o *Options) bool {
	n := t.Steps[s].Num
	return (o.FirstStep == 0 || n >= o.FirstStep) && (o.LastStep == 0 || n <= o.LastStep) &&
		(s >= len(o.Exclude) || !o.Exclude[s])
}

// stepRange is the first and last step of the trace that the step filter
// keeps and how many it keeps (zeros without a filter or when it keeps
// none).
func stepRange(t *trace.Trace, o *Options) (first, last, n int) {
	if !o.StepFilter || t.SyntheticStep {
		return 0, 0, 0
	}
	for i, st := range t.Steps {
		if stepKept(t, i, o) {
			if n == 0 {
				first = st.Num
			}
			last = st.Num
			n++
		}
	}
	return first, last, n
}

type opKey struct {
	name, dims trace.StrID
	stack      int32
}

// Ops computes the operator table.
func Ops(t *trace.Trace, o Options) *OpTable {
	ev := &t.Events
	// The sums below are kept for the table's events only, numbered
	// in event order (tix): a trace of mostly Python frames has few.
	table := trace.NewSubset(ev.Kind, inTable)
	tix := func(e int32) int32 { return int32(table.Index(int(e))) } // None (-1) when not in the table
	m := table.Len()
	names := classify.For(t)
	// dur is an event's duration, an optimizer step's cut at the end of its
	// ProfilerStep (trace.EndInStep): `bottleneck run` steps the profiler
	// in the optimizer's hook, and the window's last optimizer step stays
	// open while the profiler stops (74 ms of a 1 ms update, a fifth of the
	// table's self time, in a small policy network's trace).
	dur := func(i int) int64 {
		if names.Has(ev.Name[i], classify.OptimizerStep) {
			return t.EndInStep(int32(i)) - ev.Start[i]
		}
		return ev.Dur[i]
	}
	stacks := newStackKeys(t, o.StackDepth)
	// rowOf is each table event's row, None where the step filter leaves
	// it out: the sums below are added to rows through it (per-event
	// device sums took 16 bytes an event, it takes 4).
	rowOf, rows, keys := numberRows(t, &table, &o, stacks)
	// Host self time: own duration minus direct table children. Allocated
	// after the rows are numbered, whose scratch (an index by name) is
	// gone by then: on 100 MB of distinct op names the rows, this and
	// rowOf are the analysis's peak.
	childSum := make([]int64, m)
	for i, k := range ev.Kind {
		if !inTable(k) {
			continue
		}
		if p := tableParent(t, int32(i)); p != trace.None {
			d := dur(i)
			if names.Has(ev.Name[p], classify.OptimizerStep) { // only what ran before the parent's cut
				d = max(0, min(ev.Start[i]+d, t.EndInStep(p))-ev.Start[i])
			}
			childSum[tix(p)] += d
		}
	}
	res := &OpTable{HasStacks: stacks.available, Scores: scoreSources(t, names)}
	res.StepsFirst, res.StepsLast, res.Steps = stepRange(t, &o)
	var rec recomputeSums
	dtypes := newDtypeSums(t)
	for i, k := range ev.Kind {
		if !inTable(k) {
			continue
		}
		j := tix(int32(i))
		r := rowOf[j]
		if r == trace.None {
			continue
		}
		if k == trace.KindCPUOp {
			dtypes.addHost(i, ev.Dur[i]-childSum[j])
		}
		if names.Has(ev.Name[i], classify.LayerForward) {
			rec.add(t, names, int32(i), j)
		}
		s := &rows[r]
		d := dur(i)
		self := d - childSum[j]
		s.calls++
		s.annotation = k == trace.KindUserAnnotation
		s.hostTotal += us(d)
		s.hostSelf += us(max(self, 0))
	}
	// Device time: self for the op that launched it, total for it and
	// every table ancestor (found by walking up: a column of table parents
	// cost 4 bytes a table event). A nested call of the same op counts it
	// twice in a flat sum; key_averages does the same, so do we.
	for i, k := range ev.Kind {
		if !k.IsDeviceWork() {
			continue
		}
		op := ev.Op(i) // the op, not the runtime call, owns the device time
		if op == trace.None || tix(op) == trace.None {
			continue
		}
		d := ev.Dur[i]
		if r := rowOf[tix(op)]; r != trace.None {
			rows[r].devSelf += d
			if ev.Kind[op] == trace.KindCPUOp {
				dtypes.addDevice(int(op), d)
			}
		}
		for a := op; a != trace.None; a = tableParent(t, a) {
			ja := tix(a)
			if r := rowOf[ja]; r != trace.None {
				rows[r].devTotal += d
			}
			if rec.events[ja] {
				rec.deviceNs += d
			}
		}
	}
	res.Recompute = rec.result()
	for i := range rows {
		r := &rows[i]
		res.HostSelfUs += r.hostSelf
		res.DevSelfUs += us(r.devSelf)
		res.Calls += int(r.calls)
		if classify.IsBackward(t.Str(r.name)) {
			res.BackwardCalls += int(r.calls)
		}
	}
	res.Dtypes = dtypes.rows()
	res.SortBy = o.SortBy
	if res.SortBy == "" {
		res.SortBy = "host_total"
		if res.DevSelfUs > 0 {
			res.SortBy = "device_total"
		}
	}
	res.TotalRows = len(rows)
	// Only the rows shown, and those the diagnosis reads, become OpRows
	// with their strings.
	row := func(ri int32) OpRow {
		r := &rows[ri]
		var key opKey
		if keys != nil {
			key = keys[ri]
		}
		return OpRow{
			Name: t.Str(r.name), InputDims: t.Str(key.dims), Stack: stacks.text(int(key.stack)),
			Annotation: r.annotation, Calls: int(r.calls), HostSelfUs: r.hostSelf, HostTotalUs: r.hostTotal, DeviceSelfUs: us(r.devSelf), DeviceTotalUs: us(r.devTotal),
			HostSelfPct: pct(r.hostSelf, res.HostSelfUs), HostTotalPct: pct(r.hostTotal, res.HostSelfUs),
			DeviceSelfPct: pct(us(r.devSelf), res.DevSelfUs), DeviceTotalPct: pct(us(r.devTotal), res.DevSelfUs),
		}
	}
	rankBy := "host_total"
	if res.DevSelfUs > 0 {
		rankBy = "device_total"
	}
	ranked := func() []OpRow {
		out := []OpRow{}
		for _, ri := range sortOps(t, rows, rankBy, RankedRows) {
			out = append(out, row(ri))
		}
		return out
	}
	if res.SortBy == rankBy && o.Top > 0 && o.Top < min(len(rows), RankedRows) {
		// The rows shown are the first of those ranked: one pass finds both.
		res.ranked = ranked()
		res.Rows = slices.Clone(res.ranked[:o.Top])
		return res
	}
	for _, ri := range sortOps(t, rows, res.SortBy, o.Top) {
		res.Rows = append(res.Rows, row(ri))
	}
	if res.SortBy != rankBy {
		res.ranked = ranked()
	}
	return res
}

// numberRows gives each table event its row (None where the step filter
// leaves it out) and returns the rows with their names, in order of first
// call, and with --group-by-shape or a stack depth the key of each row.
// Rows are found by name alone unless grouped by shape or stack: a slice
// indexed by StrID, no map (a trace with generated op names has hundreds
// of thousands of rows); they are numbered first, so that they take one
// allocation of their size (a list of them in that order grew to 1.9 MB
// of allocations over 125k distinct names).
func numberRows(t *trace.Trace, table *trace.Subset, o *Options, stacks *stackKeys) (rowOf []int32, rows []opSums, keys []opKey) {
	ev := &t.Events
	rowOf = make([]int32, table.Len())
	if o.GroupByShape || o.StackDepth > 0 {
		byKey := map[opKey]int32{}
		for i, k := range ev.Kind {
			if !inTable(k) {
				continue
			}
			j := table.Index(i)
			rowOf[j] = trace.None
			if !stepOK(t, i, o) {
				continue
			}
			key := opKey{name: ev.Name[i]}
			if o.GroupByShape {
				if v, ok := t.Arg(i, trace.KeyInputDims); ok {
					key.dims, _ = v.StrID()
				}
			}
			if o.StackDepth > 0 {
				key.stack = int32(stacks.key(int32(i)))
			}
			r, ok := byKey[key]
			if !ok {
				r = int32(len(rows))
				byKey[key] = r
				rows = append(rows, opSums{name: key.name})
				keys = append(keys, key)
			}
			rowOf[j] = r
		}
		return rowOf, rows, keys
	}
	byName := make([]int32, t.NumStrings()) // name -> row + 1
	n := int32(0)
	for i, k := range ev.Kind {
		if !inTable(k) {
			continue
		}
		j := table.Index(i)
		rowOf[j] = trace.None
		if !stepOK(t, i, o) {
			continue
		}
		if byName[ev.Name[i]] == 0 {
			n++
			byName[ev.Name[i]] = n
		}
		rowOf[j] = byName[ev.Name[i]] - 1
	}
	rows = make([]opSums, n)
	for name, r := range byName {
		if r > 0 {
			rows[r-1].name = trace.StrID(name)
		}
	}
	return rowOf, rows, nil
}

// RankedRows is how many rows of each table the diagnosis reads, by time
// (Ranked): beyond the --top shown, so that what it says does not depend
// on display options (with 14 steps in the window, 14 of the 20 rows
// shown were ProfilerStep#N, and the tail of small ops decided whether
// the ops were tiny). Rows past it hold little time.
const RankedRows = 2000

// Ranked returns the first RankedRows rows by host total time (device
// total with device time), whatever --sort and --top show: what the
// diagnosis reads (the rows alone for a table built by hand, or when
// they are those).
func (t *OpTable) Ranked() []OpRow {
	if t.ranked == nil {
		return t.Rows[:min(len(t.Rows), RankedRows)]
	}
	return t.ranked
}

// opSums is one row's sums while the table is built: no strings or
// pointers, so the rows are one flat slice the collector never scans; 40
// bytes (generated op names make a row per call), the shape and stack a
// row is grouped by kept apart (numberRows). Device time is summed in ns:
// it is added a kernel at a time.
type opSums struct {
	name                trace.StrID
	calls               int32
	annotation          bool    // a record_function range's row
	hostSelf, hostTotal float64 // µs
	devSelf, devTotal   int64   // ns
}

// sortOps returns the indices of the first top rows (all when top <= 0)
// sorted by the column by, descending (names ascending), ties by name and
// then in their first order. With a top it keeps only the best rows seen
// so far (stats.Top): a table of generated op names is not sorted whole by
// name.
func sortOps(t *trace.Trace, rows []opSums, by string, top int) []int32 {
	val := func(r *opSums) float64 {
		switch by {
		case "name":
			return 0
		case "host_self":
			return r.hostSelf
		case "device_total":
			return us(r.devTotal)
		case "device_self":
			return us(r.devSelf)
		case "calls":
			return float64(r.calls)
		}
		return r.hostTotal
	}
	vals := make([]float64, len(rows))
	for i := range rows {
		vals[i] = val(&rows[i])
	}
	order := func(a, b int32) int {
		if c := cmp.Compare(vals[b], vals[a]); c != 0 {
			return c
		}
		if c := strings.Compare(t.Str(rows[a].name), t.Str(rows[b].name)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	}
	if top <= 0 || top >= len(rows) {
		all := make([]int32, len(rows))
		for i := range all {
			all[i] = int32(i)
		}
		slices.SortFunc(all, order)
		return all
	}
	return stats.Top(func(yield func(int32) bool) {
		for i := range int32(len(rows)) {
			if !yield(i) {
				return
			}
		}
	}, top, order)
}

func us(ns int64) float64 { return float64(ns) / 1000 }

func pct(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}
