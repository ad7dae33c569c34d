// Package idle measures when each GPU stream sat idle and why, and who
// kept it waiting.
//
// Definition (HTA's idle-time breakdown, DefinitionVersion): on each
// stream, device work (kernels, memcpy, memset) is sorted by start; the
// gap before each event is its start minus the previous event's end
// (negative when they overlap, as HTA sums it). The gap is
//   - host wait when the event's launch call started after the previous
//     event ended: the CPU had not even asked for the work yet;
//   - kernel wait when not host wait and the gap is below
//     Options.KernelWaitThreshold (30 µs, HTA's default; its docs say ns
//     but its traces are in µs): back-to-back launch overhead;
//   - other otherwise (waiting on another stream, an event, a sync).
//
// DropLastStep (HTA's default, include_last_profiler_step=False) keeps
// only device work launched before the last ProfilerStep begins on the
// host; work whose launch call is not in the trace is dropped, as HTA's
// correlation join drops it.
//
// HTARounding reproduces HTA's µs rounding of ns-decimal traces (start
// rounded up, end rounded down to whole µs), which shrinks every event by
// up to 2 µs and so inflates idle time; by default times are exact ns.
//
// Culprits: for the largest host-wait gaps, the CPU ops (innermost
// cpu_op, with enclosing python_function frames when the trace has
// stacks) running on the launching thread during the gap, by time.
package idle

import (
	"cmp"
	"slices"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/classify"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/htatime"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// DefinitionVersion names the definition in JSON output.
const DefinitionVersion = "idle/hta-1"

// DefaultKernelWaitNs is HTA's consecutive-kernel delay: 30 µs.
const DefaultKernelWaitNs = 30_000

// Options tune the analysis.
type Options struct {
	// KernelWaitThresholdNs: gaps below it (not host wait) are kernel
	// wait. 0 means DefaultKernelWaitNs.
	KernelWaitThresholdNs int64
	// DropLastStep keeps only device work whose launch call started
	// before the last ProfilerStep (work with no launch call in the trace
	// is dropped), like HTA by default.
	DropLastStep bool
	// TopGaps is how many host-wait gaps get culprits (default 5).
	TopGaps int
	// HTARounding reproduces HTA's arithmetic on traces with ns decimals:
	// its parser (trace_parser.round_down_time_stamps) reads ts and dur as
	// float64 µs and rounds every start up and every end (ts+dur) down to
	// a whole µs, before the last-step filter and the breakdown. Without
	// it times are the trace's exact ns. No effect on integer-µs traces.
	HTARounding bool
}

// Stream is one stream's idle breakdown.
type Stream struct {
	// Device is the stream's device index.
	Device int `json:"device"`
	// Stream is the stream id.
	Stream int64 `json:"stream"`
	// Events is the number of kernels, copies and memsets on the stream that count (with the last step dropped: those launched before it).
	Events int `json:"events"`
	// IdleUs is the sum of the gaps between consecutive events on the stream (overlaps count negative, as in HTA): host + kernel + other wait.
	IdleUs float64 `json:"idle_us"`
	// HostWaitUs is the summed gaps whose event's launch call started after the previous event ended: the host had not asked for the work yet.
	HostWaitUs float64 `json:"host_wait_us"`
	// KernelWaitUs is the summed other gaps shorter than kernel_wait_threshold_us: back-to-back launch overhead.
	KernelWaitUs float64 `json:"kernel_wait_us"`
	// OtherUs is the summed remaining gaps (waiting on another stream, an event, a sync).
	OtherUs float64 `json:"other_us"`
	// HostWaitPct is HostWaitUs as a percentage of IdleUs (0 when IdleUs is 0).
	HostWaitPct float64 `json:"host_wait_pct"`
	// KernelWaitPct is KernelWaitUs as a percentage of IdleUs (0 when IdleUs is 0).
	KernelWaitPct float64 `json:"kernel_wait_pct"`
	// OtherPct is OtherUs as a percentage of IdleUs (0 when IdleUs is 0).
	OtherPct float64 `json:"other_pct"`
}

// Frame is one CPU op or Python frame active during a gap.
type Frame struct {
	// Name is the event's name.
	Name string `json:"name"`
	// Kind is the event's kind: cpu_op, user_annotation, python_function, runtime or driver.
	Kind string `json:"kind"`
	// Us is the time events of this name and kind ran on the launching thread between the gap's start and the launch call's start.
	Us float64 `json:"overlap_us"`
}

// Gap is one host-wait gap and what the launching thread did meanwhile.
type Gap struct {
	// Device is the gap's device index.
	Device int `json:"device"`
	// Stream is the gap's stream id.
	Stream int64 `json:"stream"`
	// StartUs is the gap's start on the trace's clock: the end of the previous event on the stream.
	StartUs float64 `json:"start_us"`
	// Us is the gap's length.
	Us float64 `json:"gap_us"`
	// Step is the ProfilerStep number of the kernel that ended the gap (absent without steps).
	Step string `json:"step,omitempty"`
	// Kernel is the device event that ended the gap.
	Kernel string `json:"kernel"`
	// Launch is the name of the kernel's launch call ("" when it is not in the trace).
	Launch string `json:"launch"`
	// Ops are the events the launching thread ran from the gap's start to the launch call, by time, at most 8 (ProfilerStep itself left out).
	Ops []Frame `json:"ops"`
}

// Result is the idle analysis of one trace.
type Result struct {
	// Definition names the version of the definition (docs/metrics.md, "GPU idle time").
	Definition string `json:"definition"`
	// KernelWaitThresholdUs is the gap below which a gap that is not host wait is kernel wait (30, HTA's default).
	KernelWaitThresholdUs float64 `json:"kernel_wait_threshold_us"`
	// DroppedLastStep: only device work launched before the last ProfilerStep counts, as HTA does (--definition hta).
	DroppedLastStep bool `json:"dropped_last_step"`
	// HTARounding: event times were rounded to whole µs as HTA's parser does (--definition hta).
	HTARounding bool `json:"hta_rounding,omitempty"`
	// Streams are the device streams with kernels, copies or memsets.
	Streams []Stream `json:"streams"`
	// TopHostWaits are the largest host-wait gaps, at most 5, largest first (gaps ended by a communication kernel left out).
	TopHostWaits []Gap `json:"top_host_waits"`
}

type gapRec struct {
	ns     int64
	prevE  int64
	ev     int32
	stream int
}

// Compute breaks down t's GPU idle time.
func Compute(t *trace.Trace, opts Options) *Result {
	thr := opts.KernelWaitThresholdNs
	if thr <= 0 {
		thr = DefaultKernelWaitNs
	}
	top := opts.TopGaps
	if top <= 0 {
		top = 5
	}
	ev := &t.Events
	cl := classify.For(t)
	cutoff := int64(1<<63 - 1)
	dropped := false
	if opts.DropLastStep && !t.SyntheticStep && len(t.Steps) > 1 {
		cutoff = t.Steps[len(t.Steps)-1].Start
		dropped = true
	}
	r := &Result{Definition: DefinitionVersion, KernelWaitThresholdUs: float64(thr) / 1000, DroppedLastStep: dropped,
		HTARounding: opts.HTARounding}
	var gaps []gapRec
	for ti := range t.Tracks {
		tr := &t.Tracks[ti]
		if !tr.IsDevice() {
			continue
		}
		st := Stream{Device: tr.Device, Stream: tr.Stream}
		var host, kern, other int64
		first := true
		var prevEnd int64
		for _, e := range tr.Events {
			k := ev.Kind[e]
			if k != trace.KindKernel && k != trace.KindMemcpy && k != trace.KindMemset {
				continue
			}
			l := ev.Launch(int(e))
			if dropped {
				// HTA keeps device work whose correlated host call started
				// before the last step (rounded times under HTARounding);
				// unlinked work matches no host call and goes too.
				if l == trace.None {
					continue
				}
				if ls := ev.Start[l]; opts.HTARounding && htatime.Start(ls) >= htatime.Start(cutoff) || !opts.HTARounding && ls >= cutoff {
					continue
				}
			}
			st.Events++
			s, end := ev.Start[e], ev.Start[e]+ev.Dur[e]
			ls := int64(0)
			if l != trace.None {
				ls = ev.Start[l]
			}
			if opts.HTARounding {
				s, end = htatime.Span(ev.Start[e], ev.Dur[e])
				if l != trace.None {
					ls = htatime.Start(ls)
				}
			}
			if !first {
				gap := s - prevEnd
				switch {
				case l != trace.None && ls > prevEnd:
					host += gap
					// a communication kernel's stream idles until compute
					// hands it data: not a gap the host could fill
					if gap > 0 && !cl.Has(ev.Name[e], classify.CommKernel) {
						gaps = append(gaps, gapRec{gap, prevEnd, e, len(r.Streams)})
					}
				case gap < thr:
					kern += gap
				default:
					other += gap
				}
			}
			first = false
			prevEnd = end
		}
		if st.Events == 0 {
			continue
		}
		st.HostWaitUs, st.KernelWaitUs, st.OtherUs = float64(host)/1000, float64(kern)/1000, float64(other)/1000
		total := host + kern + other
		st.IdleUs = float64(total) / 1000
		if total != 0 {
			st.HostWaitPct = 100 * float64(host) / float64(total)
			st.KernelWaitPct = 100 * float64(kern) / float64(total)
			st.OtherPct = 100 * float64(other) / float64(total)
		}
		r.Streams = append(r.Streams, st)
	}
	slices.SortFunc(gaps, func(a, b gapRec) int { return cmp.Or(cmp.Compare(b.ns, a.ns), cmp.Compare(a.ev, b.ev)) })
	if len(gaps) > top {
		gaps = gaps[:top]
	}
	for _, g := range gaps {
		r.TopHostWaits = append(r.TopHostWaits, culprits(t, g, r.Streams[g.stream]))
	}
	return r
}

// culprits lists what the launching thread ran during the gap
// [prevEnd, launch start): the innermost events active there, by overlap.
func culprits(t *trace.Trace, g gapRec, st Stream) Gap {
	ev := &t.Events
	e := int(g.ev)
	out := Gap{Device: st.Device, Stream: st.Stream, StartUs: float64(g.prevE) / 1000, Us: float64(g.ns) / 1000,
		Kernel: t.Name(e)}
	if s := ev.Step[e]; s != trace.None && !t.SyntheticStep {
		out.Step = itoa(t.Steps[s].Num)
	}
	l := ev.Launch(e)
	if l == trace.None {
		return out
	}
	out.Launch = t.Name(int(l))
	lo, hi := g.prevE, ev.Start[l]
	evs := t.Tracks[ev.Track[l]].Events
	// First event that may overlap: binary search on start, then walk
	// forward; long enclosing events are found through Parent chains.
	j, _ := slices.BinarySearchFunc(evs, lo, func(x int32, ts int64) int { return cmp.Compare(ev.Start[x], ts) })
	type acc struct {
		id   trace.StrID
		kind trace.Kind
		ns   int64
	}
	var accs []acc
	add := func(x int32, ns int64) {
		for i := range accs {
			if accs[i].id == ev.Name[x] && accs[i].kind == ev.Kind[x] {
				accs[i].ns += ns
				return
			}
		}
		accs = append(accs, acc{ev.Name[x], ev.Kind[x], ns})
	}
	interesting := func(k trace.Kind) bool {
		return k == trace.KindCPUOp || k == trace.KindPythonFunction || k == trace.KindUserAnnotation || k.IsLaunch()
	}
	// Enclosing events active at lo (ancestors of the event before j).
	if j > 0 {
		for p := evs[j-1]; p != trace.None; p = ev.Parent[p] {
			if ev.Start[p]+ev.Dur[p] > lo && interesting(ev.Kind[p]) && !isStep(t, p) {
				add(p, min(ev.Start[p]+ev.Dur[p], hi)-lo)
			}
		}
	}
	const maxScan = 4096
	for n := 0; j < len(evs) && ev.Start[evs[j]] < hi && n < maxScan; j, n = j+1, n+1 {
		x := evs[j]
		if interesting(ev.Kind[x]) && !isStep(t, x) {
			add(x, min(ev.Start[x]+ev.Dur[x], hi)-ev.Start[x])
		}
	}
	slices.SortFunc(accs, func(a, b acc) int { return cmp.Or(cmp.Compare(b.ns, a.ns), cmp.Compare(a.id, b.id)) })
	for i, a := range accs {
		if i == 8 {
			break
		}
		out.Ops = append(out.Ops, Frame{Name: t.Str(a.id), Kind: a.kind.String(), Us: float64(a.ns) / 1000})
	}
	return out
}

func isStep(t *trace.Trace, x int32) bool {
	s := t.Events.Step[x]
	return s != trace.None && t.Steps[s].Event == x
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	p := len(b)
	for n > 0 {
		p--
		b[p] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		p--
		b[p] = '-'
	}
	return string(b[p:])
}
