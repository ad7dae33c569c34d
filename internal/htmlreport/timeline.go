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
//
// Launch links (Perfetto's flow arrows): a device box that is one real
// event (kernel, memcpy, memset) is tied to the box of the runtime/driver
// call that launched it when that call is also a real box of the summary
// (a call merged into a density box, nested too deep or outside the
// window has no box, so its kernel has no link). Links never cost detail:
// the resolution is chosen without them, then as many links as fit in the
// rest of the budget are kept (in box order), the others counted in
// LinksDropped.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

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
	// Links ties device boxes to the boxes of their launch calls (nil when
	// there is none); LinksDropped is how many were left out for the byte
	// budget.
	Links        *TLLinks `json:"links,omitempty"`
	LinksDropped int      `json:"links_dropped,omitempty"`
}

// TLLinks are launch links as three parallel arrays, one entry per link.
// A box is named by its id: its index in the concatenation of all rows'
// boxes (density boxes included) in Rows order. K holds the device boxes'
// ids, ascending, and L the launch call boxes' ids, both delta-encoded
// (each relative to the previous link's, the first to 0); O holds the
// name index of the operator that issued the launch (-1 when unknown).
// A launch call that launched several device boxes (a CUDA graph) appears
// in several links.
type TLLinks struct {
	K []int32 `json:"k"`
	L []int32 `json:"l"`
	O []int32 `json:"o"`
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
	for {
		s := summarise(t, tracks, start, end, pixels)
		s.tl.DroppedDeep = dropped
		b, _ := json.Marshal(s.tl)
		if len(b) <= o.MaxBytes || pixels <= 50 {
			// Links only use what the chosen resolution leaves over.
			if len(s.links) > 0 {
				s.attachLinks(s.fitLinks(o.MaxBytes - len(b)))
				if b2, _ := json.Marshal(s.tl); len(b2) > max(o.MaxBytes, len(b)) {
					// Not expected (fitLinks is exact), but the budget holds.
					s.attachLinks(0)
					s.tl.LinksDropped = 0
				}
			}
			return s.tl
		}
		pixels /= 2
	}
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

// rowState is one row being summarised.
type rowState struct {
	row   TLRow
	last  int64 // absolute start of the last box (for deltas)
	pend  pendingBox
	index int // index in Timeline.Rows once appended
}

// boxRef names a real box while rows are still being built.
type boxRef struct {
	row *rowState
	i   int32
}

// linkCand is a launch link before encoding: box ids and the operator.
type linkCand struct {
	k, l int32
	op   int32 // event index of the operator, or trace.None
}

// summary is a Timeline being built, with what attaching links needs.
type summary struct {
	t     *trace.Trace
	tl    *Timeline
	names map[trace.StrID]int32
	// nNames is len(tl.Names) before links added operator names.
	nNames int
	links  []linkCand
}

func (s *summary) nameIdx(id trace.StrID) int32 {
	if i, ok := s.names[id]; ok {
		return i
	}
	i := int32(len(s.tl.Names))
	s.tl.Names = append(s.tl.Names, s.t.Str(id))
	s.names[id] = i
	return i
}

func summarise(t *trace.Trace, tracks []timelineTrack, start, end int64, pixels int) *summary {
	ev := &t.Events
	thr := max((end-start)/int64(pixels), 1)
	tl := &Timeline{Start: start, End: end, Pixel: thr, Names: []string{}, Tracks: []TLTrack{}, Rows: []TLRow{}}
	sm := &summary{t: t, tl: tl, names: map[trace.StrID]int32{}}
	// Real boxes of launch calls, and device boxes whose event has one.
	launches := map[int32]boxRef{}
	type devBox struct {
		e   int32
		ref boxRef
	}
	var devs []devBox
	for ti, tt := range tracks {
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
				rows = append(rows, &rowState{row: TLRow{Track: ti, Depth: len(rows)}, last: start, index: -1})
			}
			rs := rows[dep]
			// Clip to the window so boxes stay drawable.
			cs, ce := max(s, start), min(s+d, end)
			w := ce - cs
			if w >= thr {
				flush(rs)
				emit(rs, cs, w, sm.nameIdx(ev.Name[e]))
				if tt.kind != "steps" {
					ref := boxRef{rs, int32(len(rs.row.S) - 1)}
					if kind := ev.Kind[e]; kind.IsLaunch() {
						launches[e] = ref
					} else if kind.IsDeviceWork() && ev.Launch(int(e)) != trace.None {
						devs = append(devs, devBox{e, ref})
					}
				}
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
				rs.index = len(tl.Rows)
				tl.Rows = append(tl.Rows, rs.row)
				used = rs.row.Depth + 1
			}
		}
		tl.Tracks = append(tl.Tracks, TLTrack{Label: tt.label, Kind: tt.kind, Rows: used})
	}
	sm.nNames = len(tl.Names)
	if len(devs) == 0 || len(launches) == 0 {
		return sm
	}
	offset := make([]int32, len(tl.Rows))
	var n int32
	for i := range tl.Rows {
		offset[i] = n
		n += int32(len(tl.Rows[i].S))
	}
	id := func(r boxRef) int32 { return offset[r.row.index] + r.i }
	for _, d := range devs {
		l := ev.Launch(int(d.e))
		lr, ok := launches[l]
		if !ok {
			continue
		}
		op := ev.Op(int(d.e))
		if op == trace.None {
			op = ev.Op(int(l))
		}
		sm.links = append(sm.links, linkCand{k: id(d.ref), l: id(lr), op: op})
	}
	sort.Slice(sm.links, func(a, b int) bool { return sm.links[a].k < sm.links[b].k })
	return sm
}

// jsonLen is the length of v encoded by encoding/json.
func jsonLen(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

func intLen(v int32) int { return len(strconv.FormatInt(int64(v), 10)) }

// fitLinks is how many links, taken in order, fit in room bytes on top of
// the timeline encoded without links. It mirrors encoding/json exactly:
// the "links" and "links_dropped" fields, each link's three numbers and
// separators, and the operator names the links add to Names.
func (s *summary) fitLinks(room int) int {
	total := len(s.links)
	if total == 0 {
		return 0
	}
	// ,"links":{"k":[],"l":[],"o":[]}
	fixed := len(`,"links":`) + jsonLen(TLLinks{K: []int32{}, L: []int32{}, O: []int32{}})
	dropped := func(n int) int {
		if n == total {
			return 0
		}
		return len(`,"links_dropped":`) + intLen(int32(total-n))
	}
	names := len(s.tl.Names)
	added := map[trace.StrID]int32{}
	used := fixed
	var pk, pl int32
	n := 0
	for i, c := range s.links {
		cost := intLen(c.k-pk) + intLen(c.l-pl)
		if i > 0 {
			cost += 3 // a comma in each array
		}
		o := int32(-1)
		if c.op != trace.None {
			nm := s.t.Events.Name[c.op]
			if idx, ok := s.names[nm]; ok {
				o = idx
			} else if idx, ok := added[nm]; ok {
				o = idx
			} else {
				o = int32(names)
				added[nm] = o
				if names > 0 {
					cost++
				}
				cost += jsonLen(s.t.Str(nm))
				names++
			}
		}
		cost += intLen(o)
		used += cost
		if used > room {
			break
		}
		// Keeping every link also saves the links_dropped field.
		if used+dropped(i+1) <= room {
			n = i + 1
		}
		pk, pl = c.k, c.l
	}
	return n
}

// attachLinks sets the first n links (and the operator names they need)
// on the timeline, replacing any attached before.
func (s *summary) attachLinks(n int) {
	tl := s.tl
	for id, i := range s.names {
		if int(i) >= s.nNames {
			delete(s.names, id)
		}
	}
	tl.Names = tl.Names[:s.nNames]
	tl.Links, tl.LinksDropped = nil, len(s.links)-n
	if n == 0 {
		return
	}
	ln := &TLLinks{K: make([]int32, n), L: make([]int32, n), O: make([]int32, n)}
	var pk, pl int32
	for i, c := range s.links[:n] {
		ln.K[i], ln.L[i] = c.k-pk, c.l-pl
		pk, pl = c.k, c.l
		ln.O[i] = -1
		if c.op != trace.None {
			ln.O[i] = s.nameIdx(s.t.Events.Name[c.op])
		}
	}
	tl.Links = ln
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
