package htmlreport

// Design note: a trace of hundreds of MB holds millions of events; shipping
// them to a browser hangs it (the TensorBoard plugin blanks above ~500 MB).
// The timeline is therefore summarised here, as Go's trace viewer does: each
// row (one nesting depth of one track) keeps the events at least one
// "pixel" wide, where a pixel is the window divided by Pixels, and merges
// runs of narrower events into density boxes (count and busy fraction).
// A row then holds at most ~2*Pixels boxes whatever the trace size. If the
// encoded result still exceeds the byte budget, Pixels is halved and the
// summary redone, so the output is bounded by the budget, never by the trace.
// `bottleneck serve` re-summarises a narrower window on demand, so zooming
// in reveals the real events again.

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// TimelineOptions bound the summary.
type TimelineOptions struct {
	// Start and End select the window in ns since the trace origin (both 0:
	// the whole trace).
	Start, End int64
	// Pixels is the horizontal resolution to summarise for (default 3000).
	Pixels int
	// MaxBytes is the budget for the encoded timeline (default 4 MB).
	MaxBytes int
	// MaxDepth is the number of nesting levels kept per track (default 12).
	MaxDepth int
}

func (o *TimelineOptions) defaults() {
	if o.Pixels <= 0 {
		o.Pixels = 3000
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 4 << 20
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = 12
	}
}

// Timeline is the drawable summary of a trace window. Times are ns since
// the trace origin; in rows they are relative to Start and delta-encoded.
type Timeline struct {
	Start  int64     `json:"start"`
	End    int64     `json:"end"`
	Pixel  int64     `json:"pixel_ns"` // merge threshold actually used
	Names  []string  `json:"names"`
	Tracks []TLTrack `json:"tracks"`
	Rows   []TLRow   `json:"rows"`
	// Events is how many events fell in the window; Boxes how many boxes
	// were drawn for them; DroppedDeep how many were deeper than MaxDepth.
	Events      int `json:"events"`
	Boxes       int `json:"boxes"`
	DroppedDeep int `json:"dropped_deep,omitempty"`
}

// TLTrack is one track of the timeline.
type TLTrack struct {
	Label string `json:"label"`
	Kind  string `json:"kind"` // steps, cpu, gpu
	Rows  int    `json:"rows"` // depth levels used
}

// TLRow is one depth level of one track. S holds start deltas (the first
// relative to Timeline.Start), W durations, N name indexes (-1 for a
// density box); C and F hold, for density boxes in order, the number of
// events merged and the busy fraction in thousandths.
type TLRow struct {
	Track int     `json:"t"`
	Depth int     `json:"d"`
	S     []int64 `json:"s"`
	W     []int64 `json:"w"`
	N     []int32 `json:"n"`
	C     []int32 `json:"c,omitempty"`
	F     []int16 `json:"f,omitempty"`
}

// timelineTrack describes one source track before summarising.
type timelineTrack struct {
	label, kind string
	events      []int32 // sorted by start
	depth       []uint8 // per entry of events
}

// BuildTimeline summarises t over the window in o.
func BuildTimeline(t *trace.Trace, o TimelineOptions) *Timeline {
	o.defaults()
	start, end := o.Start, o.End
	if start == 0 && end == 0 {
		start, end = t.Span()
	}
	if end <= start {
		end = start + 1
	}
	tracks, dropped := timelineTracks(t, o.MaxDepth)
	pixels := o.Pixels
	var tl *Timeline
	for {
		tl = summarise(t, tracks, start, end, pixels)
		tl.DroppedDeep = dropped
		b, _ := json.Marshal(tl)
		if len(b) <= o.MaxBytes || pixels <= 50 {
			break
		}
		pixels /= 2
	}
	return tl
}

// timelineTracks lists the steps track, then host threads, then device
// streams, each with its events' nesting depth.
func timelineTracks(t *trace.Trace, maxDepth int) ([]timelineTrack, int) {
	var out []timelineTrack
	if !t.SyntheticStep && len(t.Steps) > 0 {
		st := timelineTrack{label: "Steps", kind: "steps"}
		for _, s := range t.Steps {
			if s.Event != trace.None {
				st.events = append(st.events, s.Event)
				st.depth = append(st.depth, 0)
			}
		}
		out = append(out, st)
	}
	ev := &t.Events
	depth := make(map[int32]uint8)
	dropped := 0
	var host, dev []timelineTrack
	for ti := range t.Tracks {
		tr := &t.Tracks[ti]
		tt := timelineTrack{label: trackLabel(tr), kind: "cpu"}
		if tr.IsDevice() {
			tt.kind = "gpu"
		}
		clear(depth)
		for _, e := range tr.Events {
			k := ev.Kind[e]
			if k == trace.KindTraceSpan || k == trace.KindCounter || k == trace.KindMemory {
				continue
			}
			d := uint8(0)
			if p := ev.Parent[e]; p != trace.None {
				if pd, ok := depth[p]; ok {
					d = pd + 1
				}
			}
			if int(d) >= maxDepth {
				dropped++
				continue
			}
			depth[e] = d
			tt.events = append(tt.events, e)
			tt.depth = append(tt.depth, d)
		}
		if len(tt.events) == 0 {
			continue
		}
		if tt.kind == "gpu" {
			dev = append(dev, tt)
		} else {
			host = append(host, tt)
		}
	}
	return append(append(out, host...), dev...), dropped
}

func trackLabel(tr *trace.Track) string {
	if tr.IsDevice() {
		s := fmt.Sprintf("GPU %d stream %d", tr.Device, tr.Stream)
		if tr.Stream < 0 && tr.TidLabel != "" {
			s = fmt.Sprintf("GPU %d %s", tr.Device, tr.TidLabel)
		}
		return s
	}
	name := tr.ThreadName
	if name == "" {
		name = tr.TidLabel
	}
	if name == "" {
		name = fmt.Sprintf("thread %d", tr.Tid)
	}
	proc := tr.ProcessName
	if proc == "" {
		proc = tr.PidLabel
	}
	if proc == "" {
		proc = fmt.Sprintf("pid %d", tr.Pid)
	}
	return proc + " / " + name
}

type pendingBox struct {
	start, end, busy int64
	count            int32
	open             bool
}

func summarise(t *trace.Trace, tracks []timelineTrack, start, end int64, pixels int) *Timeline {
	ev := &t.Events
	thr := max((end-start)/int64(pixels), 1)
	tl := &Timeline{Start: start, End: end, Pixel: thr, Names: []string{}, Tracks: []TLTrack{}, Rows: []TLRow{}}
	names := map[trace.StrID]int32{}
	nameIdx := func(id trace.StrID) int32 {
		if i, ok := names[id]; ok {
			return i
		}
		i := int32(len(tl.Names))
		tl.Names = append(tl.Names, t.Strings[id])
		names[id] = i
		return i
	}
	for ti, tt := range tracks {
		type rowState struct {
			row  TLRow
			last int64 // absolute start of the last box (for deltas)
			pend pendingBox
		}
		var rows []*rowState
		emit := func(rs *rowState, s, w int64, n int32) {
			rs.row.S = append(rs.row.S, s-rs.last)
			rs.row.W = append(rs.row.W, w)
			rs.row.N = append(rs.row.N, n)
			rs.last = s
			tl.Boxes++
		}
		flush := func(rs *rowState) {
			p := &rs.pend
			if !p.open {
				return
			}
			w := max(p.end-p.start, 1)
			emit(rs, p.start, w, -1)
			rs.row.C = append(rs.row.C, p.count)
			rs.row.F = append(rs.row.F, int16(min(p.busy*1000/w, 1000)))
			p.open = false
		}
		for k, e := range tt.events {
			s, d := ev.Start[e], ev.Dur[e]
			if s+d < start || s > end {
				continue
			}
			tl.Events++
			dep := int(tt.depth[k])
			for len(rows) <= dep {
				rows = append(rows, &rowState{row: TLRow{Track: ti, Depth: len(rows)}, last: start})
			}
			rs := rows[dep]
			// Clip to the window so boxes stay drawable.
			cs, ce := max(s, start), min(s+d, end)
			w := ce - cs
			if w >= thr {
				flush(rs)
				emit(rs, cs, w, nameIdx(ev.Name[e]))
				continue
			}
			p := &rs.pend
			if p.open && cs <= p.end+thr {
				p.end = max(p.end, ce)
				p.busy += w
				p.count++
				continue
			}
			flush(rs)
			*p = pendingBox{start: cs, end: ce, busy: w, count: 1, open: true}
		}
		used := 0
		for _, rs := range rows {
			flush(rs)
			if len(rs.row.S) > 0 {
				tl.Rows = append(tl.Rows, rs.row)
				used = rs.row.Depth + 1
			}
		}
		tl.Tracks = append(tl.Tracks, TLTrack{Label: tt.label, Kind: tt.kind, Rows: used})
	}
	return tl
}

// Utilization is the share of each time bin during which at least one
// kernel ran, per device.
type Utilization struct {
	Start   int64     `json:"start"` // ns since the trace origin
	BinNs   int64     `json:"bin_ns"`
	Devices []DevUtil `json:"devices"`
}

// DevUtil is one device's utilization series (percent per bin).
type DevUtil struct {
	Device int       `json:"device"`
	Pct    []float64 `json:"pct"`
	Mean   float64   `json:"mean_pct"`
}

// BuildUtilization bins the union of kernel intervals per device over the
// trace span.
func BuildUtilization(t *trace.Trace, bins int) *Utilization {
	if bins <= 0 {
		bins = 300
	}
	start, end := t.Span()
	if end <= start {
		return nil
	}
	bin := max((end-start+int64(bins)-1)/int64(bins), 1)
	type iv struct{ s, e int64 }
	per := map[int][]iv{}
	ev := &t.Events
	for i, k := range ev.Kind {
		if k != trace.KindKernel {
			continue
		}
		d := t.Tracks[ev.Track[i]].Device
		per[d] = append(per[d], iv{ev.Start[i], ev.Start[i] + ev.Dur[i]})
	}
	if len(per) == 0 {
		return nil
	}
	u := &Utilization{Start: start, BinNs: bin}
	var devs []int
	for d := range per {
		devs = append(devs, d)
	}
	sort.Ints(devs)
	for _, d := range devs {
		ivs := per[d]
		sort.Slice(ivs, func(a, b int) bool { return ivs[a].s < ivs[b].s })
		busy := make([]int64, bins)
		var total int64
		add := func(s, e int64) {
			total += e - s
			for s < e {
				b := min((s-start)/bin, int64(bins-1))
				be := min(start+(b+1)*bin, e)
				if b == int64(bins-1) {
					be = e
				}
				busy[b] += be - s
				s = be
			}
		}
		cs, ce := ivs[0].s, ivs[0].e
		for _, x := range ivs[1:] {
			if x.s > ce {
				add(cs, ce)
				cs, ce = x.s, x.e
			} else if x.e > ce {
				ce = x.e
			}
		}
		add(cs, ce)
		du := DevUtil{Device: d, Pct: make([]float64, bins), Mean: round1(100 * float64(total) / float64(end-start))}
		for b := range busy {
			w := bin
			if b == bins-1 {
				w = end - (start + int64(b)*bin)
			}
			if w > 0 {
				du.Pct[b] = round1(min(100*float64(busy[b])/float64(w), 100))
			}
		}
		u.Devices = append(u.Devices, du)
	}
	return u
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
