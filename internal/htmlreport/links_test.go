package htmlreport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
)

// tlBox is a decoded timeline box.
type tlBox struct {
	row, track, depth int
	start, width      int64
	name              string // "" for a density box
}

// decodeBoxes lists the timeline's boxes by id (Rows order).
func decodeBoxes(tl *Timeline) []tlBox {
	var out []tlBox
	for ri, r := range tl.Rows {
		at := tl.Start
		for i := range r.S {
			at += r.S[i]
			b := tlBox{row: ri, track: r.Track, depth: r.Depth, start: at, width: r.W[i]}
			if r.N[i] >= 0 {
				b.name = tl.Names[r.N[i]]
			}
			out = append(out, b)
		}
	}
	return out
}

// decodeLinks renders the links as "device@startUs <- launch@startUs (op)".
func decodeLinks(t *testing.T, tl *Timeline) []string {
	t.Helper()
	if tl.Links == nil {
		return nil
	}
	ln := tl.Links
	if len(ln.K) != len(ln.L) || len(ln.K) != len(ln.O) {
		t.Fatalf("ragged links %+v", ln)
	}
	boxes := decodeBoxes(tl)
	var out []string
	var k, l int32
	for i := range ln.K {
		if i > 0 && ln.K[i] <= 0 {
			t.Errorf("link %d: device ids not ascending (delta %d)", i, ln.K[i])
		}
		k += ln.K[i]
		l += ln.L[i]
		if k < 0 || int(k) >= len(boxes) || l < 0 || int(l) >= len(boxes) {
			t.Fatalf("link %d: box ids %d, %d of %d", i, k, l, len(boxes))
		}
		kb, lb := boxes[k], boxes[l]
		if kb.name == "" || lb.name == "" {
			t.Errorf("link %d ties a density box: %+v <- %+v", i, kb, lb)
		}
		if tl.Tracks[kb.track].Kind != "gpu" || tl.Tracks[lb.track].Kind != "cpu" {
			t.Errorf("link %d: %s box <- %s box", i, tl.Tracks[kb.track].Kind, tl.Tracks[lb.track].Kind)
		}
		op := "-"
		if ln.O[i] >= 0 {
			op = tl.Names[ln.O[i]]
		}
		rel := func(ns int64) int64 { return (ns - tl.Start) / 1000 }
		out = append(out, fmt.Sprintf("%s@%d <- %s@%d (%s)", kb.name, rel(kb.start), lb.name, rel(lb.start), op))
	}
	return out
}

func TestTimelineLaunchLinks(t *testing.T) {
	traces, _ := loadTraces(t, "testdata/links.json")
	tr := traces[0]
	tl := BuildTimeline(tr, TimelineOptions{Pixels: 1000})
	if tl.Pixel < 4000 || tl.Pixel > 10000 {
		t.Fatalf("pixel %d ns: the density region would not merge", tl.Pixel)
	}
	// Times are µs from the trace's first event (ts 100).
	want := []string{
		"gemm_kernel@500 <- cudaLaunchKernel@50 (aten::mm)",
		"Memcpy HtoD (Pageable -> Device)@1300 <- cudaMemcpyAsync@1150 (aten::copy_)",
		"Memset (Device)@1700 <- cudaMemsetAsync@1670 (aten::zero_)",
		"graph_k1@4000 <- cudaGraphLaunch@3900 (-)",
		"graph_k2@4110 <- cudaGraphLaunch@3900 (-)",
		"relu_kernel@6400 <- cudaLaunchKernel@5950 (aten::relu)",
		"gelu_kernel@7500 <- cudaLaunchKernel@7000 (aten::gelu)",
	}
	if got := decodeLinks(t, tl); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if tl.LinksDropped != 0 {
		t.Errorf("%d links dropped", tl.LinksDropped)
	}
	// The density region and the narrow launch of bmm_kernel: real kernel
	// boxes without a launch box stay unlinked, density boxes are merged.
	var sawDensity, sawBmm bool
	for _, b := range decodeBoxes(tl) {
		sawDensity = sawDensity || b.name == "" && tl.Tracks[b.track].Kind == "gpu"
		sawBmm = sawBmm || b.name == "bmm_kernel"
	}
	if !sawDensity || !sawBmm {
		t.Errorf("fixture no longer exercises density boxes (%v) or bmm_kernel (%v)", sawDensity, sawBmm)
	}

	// A window that starts after relu_kernel's launch ended: the clipped
	// kernel box has no link, gelu_kernel keeps its link.
	var relu int64 = -1
	for i := 0; i < tr.Events.Len(); i++ {
		if tr.Name(i) == "relu_kernel" {
			relu = tr.Events.Start[i]
		}
	}
	win := BuildTimeline(tr, TimelineOptions{Start: relu - 200_000, End: tl.End, Pixels: 1000})
	want = []string{"gelu_kernel@1300 <- cudaLaunchKernel@800 (aten::gelu)"}
	if got := decodeLinks(t, win); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("window links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	found := false
	for _, b := range decodeBoxes(win) {
		found = found || b.name == "relu_kernel"
	}
	if !found {
		t.Error("relu_kernel not in the window")
	}

	// Deterministic, and the same with the budget exactly met.
	a, _ := json.Marshal(tl)
	b, _ := json.Marshal(BuildTimeline(tr, TimelineOptions{Pixels: 1000}))
	if string(a) != string(b) {
		t.Error("two summaries of the same trace differ")
	}
	exact := BuildTimeline(tr, TimelineOptions{Pixels: 1000, MaxBytes: len(a)})
	if c, _ := json.Marshal(exact); string(c) != string(a) {
		t.Errorf("budget of exactly %d bytes changed the summary:\n%s\n%s", len(a), a, c)
	}
}

// TestTimelineLinksBudget: links never push the summary over its budget
// and never cost detail; fitLinks counts their bytes exactly.
func TestTimelineLinksBudget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tracegen.Generate(f, tracegen.Options{TargetBytes: 24 << 20, Seed: 5, Devices: 1, WorldSize: 1}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	traces, _ := loadTraces(t, path)
	tr := traces[0]
	full := BuildTimeline(tr, TimelineOptions{})
	// A window narrow enough for launch calls to be real boxes.
	o := TimelineOptions{Start: full.Start, End: full.Start + (full.End-full.Start)/50, Pixels: 3000}
	rich := BuildTimeline(tr, o)
	if rich.Links == nil || len(rich.Links.K) < 20 || rich.LinksDropped != 0 {
		t.Fatalf("window has %v links (%d dropped)", rich.Links, rich.LinksDropped)
	}
	richB, _ := json.Marshal(rich)
	bare := *rich
	bare.Links = nil
	bareB, _ := json.Marshal(&bare)
	n := len(rich.Links.K)
	t.Logf("%d links: %d bytes with, %d without (%.1f bytes a link)", n, len(richB), len(bareB), float64(len(richB)-len(bareB))/float64(n))
	decodeLinks(t, rich)

	var budgets []int
	for _, d := range []int{0, 1, 2, 7, 20, 100, 1000} {
		budgets = append(budgets, len(richB)-d)
	}
	budgets = append(budgets, len(bareB)+50, len(bareB)+10, len(bareB))
	sort.Sort(sort.Reverse(sort.IntSlice(budgets)))
	prev := n + 1
	for _, mb := range budgets {
		o.MaxBytes = mb
		tl := BuildTimeline(tr, o)
		b, _ := json.Marshal(tl)
		if len(b) > mb {
			t.Errorf("budget %d: %d bytes", mb, len(b))
		}
		if tl.Pixel != rich.Pixel || tl.Boxes != rich.Boxes {
			t.Errorf("budget %d: detail dropped before links (pixel %d, %d boxes; want %d, %d)", mb, tl.Pixel, tl.Boxes, rich.Pixel, rich.Boxes)
		}
		kept := 0
		if tl.Links != nil {
			kept = len(tl.Links.K)
			decodeLinks(t, tl)
		}
		if kept+tl.LinksDropped != n && !(kept == 0 && tl.LinksDropped == 0) {
			t.Errorf("budget %d: %d kept + %d dropped != %d", mb, kept, tl.LinksDropped, n)
		}
		if kept > prev {
			t.Errorf("budget %d: more links (%d) than with a larger budget (%d)", mb, kept, prev)
		}
		if mb == len(richB)-1 && (kept >= n || kept < n-4) {
			t.Errorf("budget %d (one byte short): kept %d of %d", mb, kept, n)
		}
		prev = kept
	}

	// Exact accounting: the kept links fit, one more would not.
	tracks, _ := timelineTracks(tr, 12)
	sm := summarise(tr, tracks, o.Start, o.End, o.Pixels)
	base, _ := json.Marshal(sm.tl)
	for room := -5; room < len(richB)-len(base)+5; room += 7 {
		k := sm.fitLinks(room)
		sm.attachLinks(k)
		b, _ := json.Marshal(sm.tl)
		if k > 0 && len(b) > len(base)+room {
			t.Errorf("room %d: %d links take %d bytes", room, k, len(b)-len(base))
		}
		if k < n {
			sm.attachLinks(k + 1)
			if b, _ := json.Marshal(sm.tl); len(b) <= len(base)+room {
				t.Errorf("room %d: %d links kept, %d would fit (%d bytes)", room, k, k+1, len(b)-len(base))
			}
		}
	}

	// The whole trace under the default and a small budget.
	for _, mb := range []int{0, 40 << 10} {
		tl := BuildTimeline(tr, TimelineOptions{MaxBytes: mb})
		b, _ := json.Marshal(tl)
		lim := mb
		if lim == 0 {
			lim = 4 << 20
		}
		if len(b) > lim {
			t.Errorf("budget %d: %d bytes", lim, len(b))
		}
		links := decodeLinks(t, tl)
		t.Logf("whole trace, budget %d: %d bytes, %d boxes, %d links (%d dropped)", lim, len(b), tl.Boxes, len(links), tl.LinksDropped)
	}
}
