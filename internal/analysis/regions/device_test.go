package regions

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/htatime"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Stream 7: "outer" 100-500 holds "inner" 150-250 and "sib" 260-300;
// tieA 700-800 and tieB 750-850 are equally long. Stream 8: "s8" 0-1000.
const deviceFixture = `{"traceEvents":[
{"ph":"X","cat":"gpu_user_annotation","name":"outer","pid":0,"tid":7,"ts":100,"dur":400},
{"ph":"X","cat":"gpu_user_annotation","name":"inner","pid":0,"tid":7,"ts":150,"dur":100},
{"ph":"X","cat":"gpu_user_annotation","name":"sib","pid":0,"tid":7,"ts":260,"dur":40},
{"ph":"X","cat":"gpu_user_annotation","name":"tieA","pid":0,"tid":7,"ts":700,"dur":100},
{"ph":"X","cat":"gpu_user_annotation","name":"tieB","pid":0,"tid":7,"ts":750,"dur":100},
{"ph":"X","cat":"gpu_user_annotation","name":"s8","pid":0,"tid":8,"ts":0,"dur":1000},
{"ph":"X","cat":"kernel","name":"k0","pid":0,"tid":7,"ts":160,"dur":40,"args":{"device":0,"stream":7,"correlation":1}},
{"ph":"X","cat":"kernel","name":"k1","pid":0,"tid":7,"ts":240,"dur":20,"args":{"device":0,"stream":7,"correlation":2}},
{"ph":"X","cat":"gpu_memcpy","name":"k2","pid":0,"tid":7,"ts":245,"dur":25,"args":{"device":0,"stream":7,"correlation":3}},
{"ph":"X","cat":"kernel","name":"k3","pid":0,"tid":7,"ts":400,"dur":50,"args":{"device":0,"stream":7,"correlation":4}},
{"ph":"X","cat":"kernel","name":"k4","pid":0,"tid":7,"ts":600,"dur":50,"args":{"device":0,"stream":7,"correlation":5}},
{"ph":"X","cat":"kernel","name":"k5","pid":0,"tid":7,"ts":50,"dur":60,"args":{"device":0,"stream":7,"correlation":6}},
{"ph":"X","cat":"gpu_memset","name":"k6","pid":0,"tid":7,"ts":420,"dur":0,"args":{"device":0,"stream":7,"correlation":7}},
{"ph":"X","cat":"kernel","name":"k7","pid":0,"tid":7,"ts":780,"dur":10,"args":{"device":0,"stream":7,"correlation":8}},
{"ph":"X","cat":"kernel","name":"k9","pid":0,"tid":7,"ts":500,"dur":20,"args":{"device":0,"stream":7,"correlation":9}},
{"ph":"X","cat":"kernel","name":"k8","pid":0,"tid":8,"ts":170,"dur":20,"args":{"device":0,"stream":8,"correlation":10}}
]}`

func TestDeviceRegionsFixture(t *testing.T) {
	tr := tracetest.ReadString(t, deviceFixture)
	got := map[string]string{}
	attribute(tr, nil, func(int32) {}, func(w, a int32) {
		n := Unannotated
		if a != trace.None {
			n = tr.Name(int(a))
		}
		got[tr.Name(int(w))] = n
	})
	want := map[string]string{
		"k0": "inner",     // inside inner, inside outer: the leaf
		"k1": "inner",     // sticks out of inner, still in outer
		"k2": "sib",       // overlaps inner (100 us), sib (40 us) and outer: the shortest
		"k3": "outer",     // in outer only
		"k4": Unannotated, // outside every annotation
		"k5": "outer",     // starts before outer, ends inside it
		"k6": Unannotated, // zero length: an empty interval overlaps nothing
		"k7": "tieB",      // tieA and tieB equally long: the later one
		"k9": Unannotated, // starts where outer ends ([start, end) intervals)
		"k8": "s8",        // stream 8: stream 7's inner is on another track
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
	rows := Compute(tr).DeviceRegions
	type row struct {
		calls, kernels int
		us             float64
	}
	wantRows := map[string]row{
		"inner": {1, 2, 60}, "sib": {1, 1, 25}, "outer": {1, 2, 110}, "s8": {1, 1, 20},
		"tieA": {1, 0, 0}, "tieB": {1, 1, 10}, Unannotated: {0, 3, 70},
	}
	var pct float64
	for _, r := range rows {
		if w, ok := wantRows[r.Name]; !ok || (row{r.Calls, r.Kernels, r.DeviceUs}) != w {
			t.Errorf("row %+v, want %+v", r, w)
		}
		pct += r.DevicePct
	}
	if len(rows) != len(wantRows) || rows[0].Name != "outer" || rows[len(rows)-1].Name != Unannotated || math.Abs(pct-100) > 1e-9 {
		t.Errorf("rows %+v", rows)
	}
}

// TestDeviceRegionsRandom checks the sweep against the definition, pair by
// pair, on random annotations and work on two streams.
func TestDeviceRegionsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 50 {
		var b strings.Builder
		b.WriteString(`{"traceEvents":[`)
		for i := range 300 {
			if i > 0 {
				b.WriteByte(',')
			}
			tid := 7 + r.IntN(2)
			ts, dur := r.IntN(2000), r.IntN(100)
			if r.IntN(10) == 0 {
				dur = 0
			}
			if r.IntN(3) == 0 {
				if r.IntN(4) == 0 {
					dur = 50 * (1 + r.IntN(4)) // ties
				} else {
					dur = r.IntN(800)
				}
				fmt.Fprintf(&b, `{"ph":"X","cat":"gpu_user_annotation","name":"a%d","pid":0,"tid":%d,"ts":%d,"dur":%d}`, i, tid, ts, dur)
			} else {
				fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":%d,"ts":%d,"dur":%d,"args":{"device":0,"stream":%d}}`, i, tid, ts, dur, tid)
			}
		}
		b.WriteString(`]}`)
		tr := tracetest.ReadString(t, b.String())
		ev := &tr.Events
		var anns []int32
		for i, k := range ev.Kind {
			if k == trace.KindGPUAnnotation {
				anns = append(anns, int32(i))
			}
		}
		n := 0
		attribute(tr, nil, func(int32) {}, func(w, a int32) {
			n++
			want := trace.None
			s, e := ev.Start[w], ev.End(int(w))
			for _, c := range anns {
				cs, ce := ev.Start[c], ev.End(int(c))
				if ev.Track[c] != ev.Track[w] || s >= e || cs >= ce || !(cs < e && s < ce) {
					continue
				}
				if want == trace.None || ev.Dur[c] < ev.Dur[want] || ev.Dur[c] == ev.Dur[want] && c > want {
					want = c
				}
			}
			if a != want {
				t.Fatalf("round %d: %s got %d, want %d", round, tr.Name(int(w)), a, want)
			}
		})
		if want := 300 - len(anns); n != want {
			t.Fatalf("round %d: %d work events, want %d", round, n, want)
		}
	}
}

// htaRounded is a copy of tr with HTA's parser rounding
// (trace_parser.round_down_time_stamps: float64 µs, start rounded up, end
// = start + dur rounded down). Both are monotone, so tracks stay sorted.
func htaRounded(tr *trace.Trace) *trace.Trace {
	rt := *tr
	rt.Events.Start = slices.Clone(tr.Events.Start)
	rt.Events.Dur = slices.Clone(tr.Events.Dur)
	for i, s := range tr.Events.Start {
		rs, re := htatime.Span(s, tr.Events.Dur[i])
		rt.Events.Start[i], rt.Events.Dur[i] = rs, re-rs
	}
	return &rt
}

// TestDeviceRegionsHTA checks the known values of HTA 0.5.0's
// get_gpu_kernels_with_user_annotations on ns_resolution_trace (gpu
// annotations kept, its default last-step drop): 4876 device-work events,
// 1561 attributed to 3 annotations.
func TestDeviceRegionsHTA(t *testing.T) {
	tr := tracetest.Load(t, "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz")
	count := func(x *trace.Trace, keep func(int32) bool) (map[string]int, int) {
		by, all := map[string]int{}, 0
		attribute(x, keep, func(int32) {}, func(w, a int32) {
			all++
			if a != trace.None {
				by[x.Name(int(a))]++
			}
		})
		return by, all
	}
	// HTA's frame: device work whose launch call started before the last
	// ProfilerStep (work with no launch call dropped, as its correlation
	// join drops it), and of the other events, gpu annotations included,
	// those that start before it.
	frame := func(x *trace.Trace, last int64) func(int32) bool {
		ev := &x.Events
		return func(i int32) bool {
			if ev.Kind[i] == trace.KindGPUAnnotation {
				return ev.Start[i] < last
			}
			l := ev.Launch(int(i))
			return l != trace.None && ev.Start[l] < last
		}
	}
	last := tr.Steps[len(tr.Steps)-1].Start

	// In exact ns: the same 4876 events; the last step's annotations
	// dropped, work of the 4th backward and optimizer step is unannotated.
	by, all := count(tr, frame(tr, last))
	if all != 4876 {
		t.Errorf("exact ns, HTA frame: %d device-work events, want 4876", all)
	}
	wantNs := map[string]int{"DistributedDataParallel.forward": 1840, "Optimizer.step#SGD.step": 27, "## backward ##": 18}
	if !maps.Equal(by, wantNs) {
		t.Errorf("exact ns, HTA frame: %v, want %v", by, wantNs)
	}

	// With HTA's µs rounding as well, HTA's numbers: its rounding leaves
	// sub-µs work empty, and empty intervals overlap nothing.
	rt := htaRounded(tr)
	by, all = count(rt, frame(rt, rt.Steps[len(rt.Steps)-1].Start))
	attributed := 0
	for _, n := range by {
		attributed += n
	}
	want := map[string]int{"DistributedDataParallel.forward": 1517, "Optimizer.step#SGD.step": 27, "## backward ##": 17}
	if all != 4876 || attributed != 1561 || !maps.Equal(by, want) {
		t.Errorf("HTA-rounded frame: %d events, %d attributed %v; want 4876, 1561 %v", all, attributed, by, want)
	}

	// The table: whole trace, exact ns.
	rows := Compute(tr).DeviceRegions
	got := map[string][2]int{}
	var pct float64
	for _, r := range rows {
		got[r.Name] = [2]int{r.Calls, r.Kernels}
		pct += r.DevicePct
	}
	wantRows := map[string][2]int{
		"DistributedDataParallel.forward": {5, 2300}, "Optimizer.step#SGD.step": {5, 45},
		"## backward ##": {5, 30}, Unannotated: {0, 3720},
	}
	if !maps.Equal(got, wantRows) || math.Abs(pct-100) > 1e-9 {
		t.Errorf("table %+v", rows)
	}
}
