package export

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/interval"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
	"github.com/bottleneck-dev/bottleneck/internal/units"
)

// chrome / perfetto: the recorded window as Chrome trace JSON, trimmed to
// a budget of MaxEvents events (trace events plus analysis events; flow
// arrows are extra and capped at the same number), with the analysis
// added as a process "bottleneck analysis" (pid AnalysisPid) of named
// tracks:
//
//   - "steps": each ProfilerStep from its host start to its device end,
//     with its step-time breakdown as args;
//   - "GPU idle dev D stream S": gaps between device work on each stream,
//     named "host wait" (the launch came after the stream went idle),
//     "kernel wait" (shorter than 30 µs) or "other idle", largest first
//     within a tenth of the budget;
//   - "blocking syncs": host calls that block until the device is done
//     (cudaStreamSynchronize, cudaDeviceSynchronize, blocking memcpy, ...)
//     with the op that issued them;
//   - "findings": the verdict and findings when given, and the largest
//     host-wait gaps of the idle analysis, as instants or slices.
//
// Trimming: when the trace holds more events than the budget, whole steps
// are kept, slowest first, while they fit (events outside every step go
// first); then the shortest events of the kept steps are dropped until
// the rest fits (ProfilerStep ranges are always kept). What was dropped
// is written under the top-level key "bottleneckExport" and reported
// through Options.Notes.

// DefaultMaxEvents is a size Perfetto and chrome://tracing open
// comfortably (roughly 60-100 MB of JSON).
const DefaultMaxEvents = 300_000

// AnalysisPid is the pid of the analysis tracks.
const AnalysisPid = 1 << 30

// AnalysisCat is the category of analysis events.
const AnalysisCat = "bottleneck"

// kernelWaitNs is HTA's threshold between kernel wait and other idle.
const kernelWaitNs = 30_000

// ChromeSummary says what the Chrome export kept and dropped.
type ChromeSummary struct {
	Trace             string `json:"trace"`
	Budget            int    `json:"max_events"`
	SourceEvents      int    `json:"source_events"`
	KeptEvents        int    `json:"kept_trace_events"`
	AnalysisEvents    int    `json:"analysis_events"`
	Flows             int    `json:"flow_events"`
	DroppedOutside    int    `json:"dropped_outside_kept_steps"`
	DroppedShort      int    `json:"dropped_short_events"`
	ShortBelowNs      int64  `json:"dropped_events_shorter_than_ns,omitempty"`
	KeptSteps         []int  `json:"kept_steps,omitempty"`
	DroppedSteps      []int  `json:"dropped_steps,omitempty"`
	DroppedIdleGaps   int    `json:"dropped_idle_gaps,omitempty"`
	DroppedFlows      int    `json:"dropped_flows,omitempty"`
	DroppedUnderMinNs int    `json:"dropped_under_min_duration,omitempty"`
}

type chromeWriter struct {
	w     *bufio.Writer
	first bool
	n     int
	err   error
}

func (c *chromeWriter) event(obj map[string]any) {
	if c.err != nil {
		return
	}
	b, err := json.Marshal(obj)
	if err != nil {
		c.err = err
		return
	}
	if !c.first {
		c.w.WriteString(",\n")
	}
	c.first = false
	c.w.Write(b)
	c.n++
}

// usTime formats ns as µs with exactly three decimals (no float rounding
// of large absolute times).
func usTime(ns int64) json.Number {
	neg := ns < 0
	if neg {
		ns = -ns
	}
	s := strconv.FormatInt(ns/1000, 10) + "." + fmt.Sprintf("%03d", ns%1000)
	if neg {
		s = "-" + s
	}
	return json.Number(s)
}

type gapEv struct {
	track      int
	start, dur int64
	kind       string
	kernel     int32
}

// WriteChrome writes the Chrome trace and returns what it kept.
func WriteChrome(w io.Writer, in *Input, o Options) (*ChromeSummary, error) {
	t, ti, err := pickTrace(in, &o)
	if err != nil {
		return nil, err
	}
	budget := o.MaxEvents
	if budget <= 0 {
		budget = DefaultMaxEvents
	}
	ev := &t.Events
	n := ev.Len()
	sum := &ChromeSummary{Trace: t.Path, Budget: budget, SourceEvents: n}

	// The analysis events come first in the budget: at most a tenth.
	anaBudget := max(budget/10, 1)
	steps := t.Steps
	if t.SyntheticStep {
		steps = nil
	}
	keep := make([]bool, n)
	for i := range keep {
		keep[i] = true
		if o.MinDurationNs > 0 && ev.Dur[i] > 0 && ev.Dur[i] < o.MinDurationNs {
			keep[i] = false
			sum.DroppedUnderMinNs++
		}
	}
	count := func() int {
		c := 0
		for _, k := range keep {
			if k {
				c++
			}
		}
		return c
	}
	kept := count()
	// The analysis events' count depends on the kept window; estimate
	// with the whole trace and trim the trace to the rest.
	traceBudget := budget - min(anaBudget, estimateAnalysis(t, in, steps))
	protected := func(i int) bool {
		return ev.Kind[i] == trace.KindTraceSpan || (ev.Kind[i] == trace.KindUserAnnotation && strings.HasPrefix(t.Name(i), "ProfilerStep#"))
	}
	keptStep := make([]bool, len(t.Steps))
	for i := range keptStep {
		keptStep[i] = true
	}
	if kept > traceBudget && len(steps) > 1 {
		per := make([]int, len(t.Steps))
		for i := range n {
			if keep[i] && ev.Step[i] != trace.None {
				per[ev.Step[i]]++
			}
		}
		order := make([]int, len(t.Steps))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			da, db := t.Steps[a].DeviceEnd-t.Steps[a].Start, t.Steps[b].DeviceEnd-t.Steps[b].Start
			return cmp.Compare(db, da)
		})
		clear(keptStep)
		total := 0
		for j, s := range order {
			if j > 0 && total+per[s] > traceBudget {
				continue
			}
			keptStep[s] = true
			total += per[s]
		}
		for i := range n {
			if keep[i] && !protected(i) && (ev.Step[i] == trace.None || !keptStep[ev.Step[i]]) {
				keep[i] = false
				sum.DroppedOutside++
			}
		}
		kept = count()
	}
	for i, s := range t.Steps {
		if t.SyntheticStep {
			break
		}
		if keptStep[i] {
			sum.KeptSteps = append(sum.KeptSteps, s.Num)
		} else {
			sum.DroppedSteps = append(sum.DroppedSteps, s.Num)
		}
	}
	if kept > traceBudget {
		var cand []int32
		for i := range n {
			if keep[i] && !protected(i) {
				cand = append(cand, int32(i))
			}
		}
		slices.SortStableFunc(cand, func(a, b int32) int { return cmp.Compare(ev.Dur[a], ev.Dur[b]) })
		excess := min(kept-traceBudget, len(cand))
		for _, e := range cand[:excess] {
			keep[e] = false
		}
		sum.DroppedShort = excess
		if excess > 0 {
			sum.ShortBelowNs = ev.Dur[cand[excess-1]] + 1
		}
		kept = count()
	}
	sum.KeptEvents = kept

	// The window the kept steps cover, for the analysis tracks.
	inWindow := func(ts int64) bool { return true }
	if len(sum.DroppedSteps) > 0 {
		var kept []interval.Span
		for i, s := range t.Steps {
			if keptStep[i] {
				kept = append(kept, interval.Span{Start: s.Start, End: max(s.DeviceEnd, s.End)})
			}
		}
		// by binary search: it runs for every blocking sync (a scan of
		// the steps each was steps²)
		index, ok := interval.NewIndex(kept)
		inWindow = func(ts int64) bool {
			if ok {
				return index.First(ts) >= 0
			}
			for _, sp := range kept {
				if ts >= sp.Start && ts < sp.End {
					return true
				}
			}
			return false
		}
	}

	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &chromeWriter{w: bw, first: true}
	bw.WriteString("{\n")
	writeMeta(bw, t)
	bw.WriteString("\"traceEvents\": [\n")

	// Track names.
	usedTrack := make([]bool, len(t.Tracks))
	for i := range n {
		if keep[i] {
			usedTrack[ev.Track[i]] = true
		}
	}
	namedPid := map[string]bool{}
	for i, tr := range t.Tracks {
		if !usedTrack[i] {
			continue
		}
		pid, tid := trackID(&tr)
		if tr.ProcessName != "" && !namedPid[fmt.Sprint(pid)] {
			namedPid[fmt.Sprint(pid)] = true
			cw.event(map[string]any{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": map[string]any{"name": tr.ProcessName}})
		}
		if tr.ThreadName != "" {
			cw.event(map[string]any{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": map[string]any{"name": tr.ThreadName}})
		}
	}
	meta := cw.n
	memOf := map[int32]int{}
	for i, m := range t.Memory {
		memOf[m.Event] = i
	}
	for i := range n {
		if !keep[i] {
			continue
		}
		cw.event(chromeEvent(t, i, memOf))
	}
	// Flows whose both ends were kept.
	type flowKey struct {
		id  int64
		cat trace.StrID
	}
	ends := map[flowKey][2]int{}
	for fi, f := range t.Flows {
		if f.Event == trace.None || !keep[f.Event] || (f.Phase != 's' && f.Phase != 'f') {
			continue
		}
		k := flowKey{f.ID, f.Cat}
		e := ends[k]
		if f.Phase == 's' {
			e[0] = fi + 1
		} else {
			e[1] = fi + 1
		}
		ends[k] = e
	}
	var flowIdx []int
	for _, e := range ends {
		if e[0] > 0 && e[1] > 0 {
			flowIdx = append(flowIdx, e[0]-1, e[1]-1)
		}
	}
	slices.Sort(flowIdx)
	if len(flowIdx) > budget {
		sum.DroppedFlows = len(flowIdx) - budget
		flowIdx = flowIdx[:0] // a partial set would leave dangling arrows
	}
	for _, fi := range flowIdx {
		f := t.Flows[fi]
		tr := t.Tracks[f.Track]
		pid, tid := trackID(&tr)
		obj := map[string]any{"ph": string(f.Phase), "id": f.ID, "cat": t.Str(f.Cat), "name": t.Str(f.Cat), "pid": pid, "tid": tid, "ts": usTime(f.Ts)}
		if f.Phase == 'f' {
			obj["bp"] = "e"
		}
		cw.event(obj)
	}
	sum.Flows = len(flowIdx)
	before := cw.n
	writeAnalysis(cw, t, ti, in, steps, keptStep, inWindow, anaBudget, sum)
	sum.AnalysisEvents = cw.n - before
	_ = meta
	if cw.err != nil {
		return nil, cw.err
	}
	bw.WriteString("\n],\n\"bottleneckExport\": ")
	b, _ := json.Marshal(sum)
	bw.Write(b)
	bw.WriteString("\n}\n")
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	if sum.DroppedOutside > 0 {
		o.note("chrome: kept steps %v of %d (slowest first), dropped %d events outside them", sum.KeptSteps, len(t.Steps), sum.DroppedOutside)
	}
	if sum.DroppedShort > 0 {
		o.note("chrome: dropped the %d shortest events (under %s µs) to fit --max-events %d", sum.DroppedShort, usTime(sum.ShortBelowNs), budget)
	}
	if sum.DroppedUnderMinNs > 0 {
		o.note("chrome: dropped %d events shorter than --min-duration", sum.DroppedUnderMinNs)
	}
	if sum.DroppedIdleGaps > 0 {
		o.note("chrome: left out the %d smallest GPU idle gaps", sum.DroppedIdleGaps)
	}
	if sum.DroppedFlows > 0 {
		o.note("chrome: left out %d flow arrows", sum.DroppedFlows)
	}
	return sum, nil
}

func trackID(tr *trace.Track) (pid, tid any) {
	pid, tid = tr.Pid, tr.Tid
	if tr.PidLabel != "" {
		pid = tr.PidLabel
	}
	if tr.TidLabel != "" {
		tid = tr.TidLabel
	}
	return pid, tid
}

func writeMeta(bw *bufio.Writer, t *trace.Trace) {
	write := func(k string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		fmt.Fprintf(bw, "%q: %s,\n", k, b)
	}
	skip := map[string]bool{"traceEvents": true, "deviceProperties": true, "distributedInfo": true, "baseTimeNanoseconds": true, "bottleneckExport": true}
	for _, kv := range t.Meta.Other {
		if !skip[kv.Key] && json.Valid(kv.Value) {
			write(kv.Key, kv.Value)
		}
	}
	if t.Meta.BaseTimeNs != 0 {
		write("baseTimeNanoseconds", t.Meta.BaseTimeNs)
	}
	if len(t.Meta.Devices) > 0 {
		write("deviceProperties", t.Meta.Devices)
	}
	if d := t.Meta.Distributed; d != nil {
		m := map[string]any{"backend": d.Backend, "world_size": d.WorldSize, "pg_count": d.PGCount, "nccl_version": d.NCCLVersion}
		if d.HasRank {
			m["rank"] = d.Rank
		}
		if len(d.PGConfig) > 0 {
			m["pg_config"] = d.PGConfig
		}
		write("distributedInfo", m)
	}
}

// chromeEvent renders event i as it was read, the lifted ids put back.
func chromeEvent(t *trace.Trace, i int, memOf map[int32]int) map[string]any {
	ev := &t.Events
	tr := &t.Tracks[ev.Track[i]]
	pid, tid := trackID(tr)
	obj := map[string]any{"name": t.Name(i), "cat": t.Str(ev.Cat(i)), "pid": pid, "tid": tid, "ts": usTime(ev.Start[i])}
	args := map[string]any{}
	for _, a := range t.Args(i) {
		args[t.Str(a.Key)] = json.RawMessage(t.Format(a.Val))
	}
	if v, ok := ev.ExternalID.At(i); ok {
		args["External id"] = v
	}
	if v, ok := ev.Correlation.At(i); ok {
		args["correlation"] = v
	}
	if v, ok := ev.SeqNum.At(i); ok && v >= 0 {
		args["Sequence number"] = v
	}
	if py, ok := ev.Py.At(i); ok {
		if py.ID != 0 {
			args["Python id"] = py.ID
		}
		if py.Parent != 0 {
			args["Python parent id"] = py.Parent
		}
	}
	switch ev.Kind[i] {
	case trace.KindCounter:
		obj["ph"] = "C"
	case trace.KindMemory:
		obj["ph"], obj["s"] = "i", "t"
		if mi, ok := memOf[int32(i)]; ok {
			m := t.Memory[mi]
			args["Device Type"], args["Device Id"], args["Addr"] = m.DeviceType, m.DeviceID, m.Addr
			args["Bytes"], args["Total Allocated"], args["Total Reserved"] = m.Bytes, m.TotalAllocated, m.TotalReserved
		}
	case trace.KindInstant:
		obj["ph"], obj["s"] = "i", "t"
	default:
		obj["ph"] = "X"
		obj["dur"] = usTime(ev.Dur[i])
	}
	if len(args) > 0 {
		obj["args"] = args
	}
	return obj
}

// idleGaps lists the gaps between device work on each device stream.
func idleGaps(t *trace.Trace) []gapEv {
	ev := &t.Events
	var out []gapEv
	for ti := range t.Tracks {
		tr := &t.Tracks[ti]
		if !tr.IsDevice() {
			continue
		}
		var busyEnd int64
		started := false
		for _, e := range tr.Events {
			if !ev.Kind[e].IsDeviceWork() {
				continue
			}
			if started && ev.Start[e] > busyEnd {
				g := gapEv{track: ti, start: busyEnd, dur: ev.Start[e] - busyEnd, kernel: e}
				switch l := ev.Launch(int(e)); {
				case l != trace.None && ev.Start[l] >= busyEnd:
					g.kind = "host wait"
				case g.dur < kernelWaitNs:
					g.kind = "kernel wait"
				default:
					g.kind = "other idle"
				}
				out = append(out, g)
			}
			busyEnd = max(busyEnd, ev.End(int(e)))
			started = true
		}
	}
	return out
}

func isBlockingSync(name string) bool {
	c := classify.RuntimeClassOf(name)
	return c == classify.RuntimeSync || c == classify.RuntimeMemcpyBlocking
}

func estimateAnalysis(t *trace.Trace, in *Input, steps []trace.Step) int {
	n := len(steps) + len(idleGaps(t)) + len(in.Findings) + 16
	ev := &t.Events
	for i, k := range ev.Kind {
		if k.IsLaunch() && isBlockingSync(t.Name(i)) {
			n++
		}
	}
	return n
}

func writeAnalysis(cw *chromeWriter, t *trace.Trace, ti int, in *Input, steps []trace.Step, keptStep []bool,
	inWindow func(int64) bool, budget int, sum *ChromeSummary) {
	const (
		tidSteps    = 1
		tidFindings = 2
		tidSyncs    = 3
		tidIdle     = 10
	)
	ev := &t.Events
	thread := func(tid int, name string) {
		cw.event(map[string]any{"ph": "M", "name": "thread_name", "pid": AnalysisPid, "tid": tid, "args": map[string]any{"name": name}})
		cw.event(map[string]any{"ph": "M", "name": "thread_sort_index", "pid": AnalysisPid, "tid": tid, "args": map[string]any{"sort_index": tid}})
	}
	cw.event(map[string]any{"ph": "M", "name": "process_name", "pid": AnalysisPid, "tid": 0, "args": map[string]any{"name": "bottleneck analysis"}})
	cw.event(map[string]any{"ph": "M", "name": "process_sort_index", "pid": AnalysisPid, "tid": 0, "args": map[string]any{"sort_index": -1}})
	left := budget - 2
	slice := func(tid int, name string, start, dur int64, args map[string]any) {
		obj := map[string]any{"ph": "X", "cat": AnalysisCat, "name": name, "pid": AnalysisPid, "tid": tid, "ts": usTime(start), "dur": usTime(max(dur, 0))}
		if len(args) > 0 {
			obj["args"] = args
		}
		cw.event(obj)
		left--
	}
	instant := func(tid int, name string, ts int64, args map[string]any) {
		obj := map[string]any{"ph": "i", "s": "t", "cat": AnalysisCat, "name": name, "pid": AnalysisPid, "tid": tid, "ts": usTime(ts)}
		if len(args) > 0 {
			obj["args"] = args
		}
		cw.event(obj)
		left--
	}
	var tr *reportTrace
	if in.Report != nil && ti < len(in.Report.Traces) {
		tr = &reportTrace{in.Report.Traces[ti]}
	}
	// Steps.
	if len(steps) > 0 && left > 2 {
		thread(tidSteps, "steps")
		left -= 2
		for i, s := range steps {
			if !keptStep[i] || left <= 0 {
				continue
			}
			args := map[string]any{"host_end_us": usTime(s.End)}
			if c := tr.stepCosts(s.Num); c != nil {
				args["breakdown_us"] = c
			}
			slice(tidSteps, fmt.Sprintf("step %d", s.Num), s.Start, max(s.DeviceEnd, s.End)-s.Start, args)
		}
	}
	// Findings.
	var idleTop []map[string]any
	if tr != nil && tr.Idle != nil {
		for _, g := range tr.Idle.TopHostWaits {
			idleTop = append(idleTop, map[string]any{"start": int64(g.StartUs * 1000), "dur": int64(g.Us * 1000),
				"name": fmt.Sprintf("host wait %s before %s", units.Duration(g.Us), g.Kernel), "launch": g.Launch, "step": g.Step})
		}
	}
	if (in.Verdict != "" || len(in.Findings) > 0 || len(idleTop) > 0) && left > 2 {
		thread(tidFindings, "findings")
		left -= 2
		start, _ := t.Span()
		if in.Verdict != "" {
			instant(tidFindings, "verdict: "+in.Verdict, start, nil)
		}
		for _, f := range in.Findings {
			if left <= 0 {
				break
			}
			args := map[string]any{"severity": f.Severity, "detail": f.Detail}
			switch {
			case f.StartNs < 0:
				instant(tidFindings, f.Title, start, args)
			case f.DurNs > 0:
				slice(tidFindings, f.Title, f.StartNs, f.DurNs, args)
			default:
				instant(tidFindings, f.Title, f.StartNs, args)
			}
		}
		for _, g := range idleTop {
			if left <= 0 || !inWindow(g["start"].(int64)) {
				continue
			}
			slice(tidFindings, g["name"].(string), g["start"].(int64), g["dur"].(int64), map[string]any{"launch": g["launch"], "step": g["step"]})
		}
	}
	// Blocking syncs.
	var syncEv []int
	for i, k := range ev.Kind {
		if k.IsLaunch() && isBlockingSync(t.Name(i)) && inWindow(ev.Start[i]) {
			syncEv = append(syncEv, i)
		}
	}
	if len(syncEv) > 0 && left > 2 {
		thread(tidSyncs, "blocking syncs")
		left -= 2
		slices.SortStableFunc(syncEv, func(a, b int) int { return cmp.Compare(ev.Dur[b], ev.Dur[a]) })
		syncEv = syncEv[:min(len(syncEv), max(left/2, 0))]
		slices.Sort(syncEv)
		for _, i := range syncEv {
			args := map[string]any{}
			if op := ev.Op(i); op != trace.None {
				args["op"] = t.Name(int(op))
			}
			if s := ev.Step[i]; s != trace.None && !t.SyntheticStep {
				args["step"] = t.Steps[s].Num
			}
			slice(tidSyncs, t.Name(i), ev.Start[i], ev.Dur[i], args)
		}
	}
	// GPU idle gaps, largest first within what is left.
	var gaps []gapEv
	for _, g := range idleGaps(t) {
		if inWindow(g.start) {
			gaps = append(gaps, g)
		}
	}
	if len(gaps) == 0 {
		return
	}
	idleTid := map[int]int{}
	for _, g := range gaps {
		if _, ok := idleTid[g.track]; !ok {
			idleTid[g.track] = tidIdle + len(idleTid)
		}
	}
	left -= 2 * len(idleTid)
	slices.SortStableFunc(gaps, func(a, b gapEv) int { return cmp.Compare(b.dur, a.dur) })
	if room := max(left, 0); len(gaps) > room {
		sum.DroppedIdleGaps = len(gaps) - room
		gaps = gaps[:room]
	}
	slices.SortStableFunc(gaps, func(a, b gapEv) int { return cmp.Compare(a.start, b.start) })
	named := map[int]bool{}
	for _, g := range gaps {
		tid := idleTid[g.track]
		if !named[tid] {
			named[tid] = true
			trk := &t.Tracks[g.track]
			thread(tid, fmt.Sprintf("GPU idle dev %d stream %d", trk.Device, trk.Stream))
		}
		args := map[string]any{"next": t.Name(int(g.kernel))}
		if l := ev.Launch(int(g.kernel)); l != trace.None {
			args["launch"] = t.Name(int(l))
		}
		slice(tid, g.kind, g.start, g.dur, args)
	}
}
