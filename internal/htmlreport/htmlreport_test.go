package htmlreport

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/optable"
	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/load"
	"github.com/bottleneck-dev/bottleneck/internal/pyprofile"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
)

// Hostile names used by testdata/xss.json.
var hostile = []string{
	`<img src=x onerror="window.__xss=1;alert(1)">`,
	`</script><script>window.__xss=2</script>`,
	`<svg onload="window.__xss=3">`,
}

func loadTraces(t *testing.T, paths ...string) ([]*trace.Trace, *report.Report) {
	t.Helper()
	res, err := load.Load(paths, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Traces) == 0 {
		t.Fatalf("no trace read from %v: %+v", paths, res.Failures)
	}
	r := driver.Build(res, 0, driver.Options{Rank: -1, Table: optable.Options{Top: 100}})
	return res.Traces, r
}

func TestMarshalDataEscapes(t *testing.T) {
	names := append([]string{"a\u2028b\u2029c", "<!-- x", "x & y", "]]>"}, hostile...)
	d := &Data{Schema: Schema, Title: "t", Views: []View{{Timeline: &Timeline{Names: names}}}}
	b, err := MarshalData(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<", ">", "&", "\u2028", "\u2029"} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("page data contains raw %q", bad)
		}
	}
	var back Data
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.Views[0].Timeline.Names; strings.Join(got, "|") != strings.Join(names, "|") {
		t.Errorf("names changed in transit: %q", got)
	}
}

func TestWriteIsSelfContainedAndInert(t *testing.T) {
	traces, r := loadTraces(t, "testdata/xss.json")
	d := Build(Input{Report: r, Traces: traces}, Options{Title: hostile[1]})
	var b bytes.Buffer
	if err := Write(&b, d); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// Exactly our two script elements and no external resource.
	if n := strings.Count(strings.ToLower(page), "<script"); n != 2 {
		t.Errorf("%d <script> tags, want 2", n)
	}
	if n := strings.Count(strings.ToLower(page), "</script"); n != 2 {
		t.Errorf("%d </script> tags, want 2", n)
	}
	for _, bad := range []string{"<img", "<svg", "<iframe", "<link", "<script src", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	// The hostile names did reach the data (escaped), so the test means something.
	start := strings.Index(page, `id="bottleneck-data">`) + len(`id="bottleneck-data">`)
	end := strings.Index(page[start:], "</script>") + start
	var back Data
	if err := json.Unmarshal([]byte(page[start:end]), &back); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	if back.Title != hostile[1] {
		t.Errorf("title %q", back.Title)
	}
	raw, _ := json.Marshal(back.Views)
	for _, h := range hostile {
		hj, _ := json.Marshal(h)
		if !bytes.Contains(raw, hj[1:len(hj)-1]) {
			t.Errorf("hostile name %q missing from the page data", h)
		}
	}
	// The CSP allows exactly the inline bundle.
	js, _ := Asset("app.js")
	if !strings.Contains(html.UnescapeString(page), "script-src "+scriptHash(js)) || !strings.Contains(page, "<script>"+string(js)+"</script>") {
		t.Error("CSP hash does not match the inline script")
	}
	if csp := html.UnescapeString(page); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'none'") {
		t.Error("CSP does not forbid network access")
	}
}

func TestTimelineBoundedAndCovering(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tracegen.Generate(f, tracegen.Options{TargetBytes: 24 << 20, Seed: 3, Devices: 1, WorldSize: 1}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	traces, _ := loadTraces(t, path)
	tr := traces[0]
	for _, o := range []TimelineOptions{{Pixels: 1000}, {Pixels: 3000, MaxBytes: 40 << 10}} {
		tl := BuildTimeline(tr, o)
		b, _ := json.Marshal(tl)
		if o.MaxBytes > 0 && len(b) > o.MaxBytes {
			t.Errorf("%+v: %d bytes over budget", o, len(b))
		}
		px := int((tl.End - tl.Start) / tl.Pixel)
		boxes := 0
		for _, r := range tl.Rows {
			if len(r.S) > 2*px+2 {
				t.Errorf("%+v: row %d/%d has %d boxes for %d pixels", o, r.Track, r.Depth, len(r.S), px)
			}
			if len(r.S) != len(r.W) || len(r.S) != len(r.N) || len(r.C) != len(r.F) {
				t.Fatalf("ragged row %+v", r)
			}
			boxes += len(r.S)
		}
		if boxes != tl.Boxes || boxes == 0 || tl.Events <= boxes {
			t.Errorf("%+v: boxes %d (counted %d) for %d events", o, tl.Boxes, boxes, tl.Events)
		}
		// Every event of the first GPU stream is covered by a box of its row.
		coverage(t, tr, tl)
	}
	// A narrow window is summarised at full detail.
	full := BuildTimeline(tr, TimelineOptions{})
	win := BuildTimeline(tr, TimelineOptions{Start: full.Start, End: full.Start + (full.End-full.Start)/200, Pixels: 3000})
	if win.Pixel >= full.Pixel || win.Events == 0 {
		t.Errorf("window pixel %d ns (whole %d ns), %d events", win.Pixel, full.Pixel, win.Events)
	}
}

func coverage(t *testing.T, tr *trace.Trace, tl *Timeline) {
	t.Helper()
	ti := -1
	for i, k := range tl.Tracks {
		if k.Kind == "gpu" {
			ti = i
			break
		}
	}
	if ti < 0 {
		t.Fatal("no GPU track")
	}
	var row *TLRow
	for i := range tl.Rows {
		if tl.Rows[i].Track == ti && tl.Rows[i].Depth == 0 {
			row = &tl.Rows[i]
		}
	}
	type box struct{ s, e int64 }
	var boxes []box
	at := tl.Start
	for i := range row.S {
		at += row.S[i]
		boxes = append(boxes, box{at, at + row.W[i]})
	}
	label := tl.Tracks[ti].Label
	checked := 0
	for _, trk := range tr.Tracks {
		if trackLabel(&trk) != label {
			continue
		}
		for _, e := range trk.Events {
			s, end := tr.Events.Start[e], tr.Events.End(int(e))
			ok := false
			for _, b := range boxes {
				if b.s <= s && end <= b.e+1 {
					ok = true
					break
				}
			}
			if !ok && tr.Events.Parent[e] == trace.None {
				t.Fatalf("event %s [%d,%d] not covered by any box", tr.Name(int(e)), s, end)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no event checked")
	}
}

func TestUtilization(t *testing.T) {
	traces, _ := loadTraces(t, "testdata/xss.json")
	u := BuildUtilization(traces[0], 38)
	if u == nil || len(u.Devices) != 1 {
		t.Fatalf("utilization %+v", u)
	}
	// 8 kernels of 1.2 ms, none overlapping, over a 19 ms span.
	if m := u.Devices[0].Mean; m < 50.4 || m > 50.6 {
		t.Errorf("mean %.2f%%, want 50.5%%", m)
	}
	var sum float64
	for _, p := range u.Devices[0].Pct {
		if p < 0 || p > 100 {
			t.Errorf("bin %.1f%%", p)
		}
		sum += p
	}
	if avg := sum / 38; avg < 49.5 || avg > 51.5 {
		t.Errorf("bins average %.2f%%", avg)
	}
}

func TestPythonView(t *testing.T) {
	p := &pyprofile.Profile{Format: pyprofile.Format, Version: 1, Profiler: "sample", IntervalS: 0.01, Samples: 10,
		Frames:  []pyprofile.Frame{{File: "/x/train.py", Func: "main", Line: 3, FLine: 1}, {File: "/x/train.py", Func: hostile[0], Line: 9, FLine: 8}},
		Threads: []pyprofile.Thread{{Name: "MainThread", Role: "main", Samples: 10}},
		Stacks:  []pyprofile.Stack{{Thread: 0, Frames: []int{0, 1}, Count: 7}, {Thread: 0, Frames: []int{0}, Count: 3}}}
	v := pythonView("rank0", p)
	if len(v.Functions) != 2 || v.Functions[0].Func != hostile[0] {
		t.Fatalf("functions %+v", v.Functions)
	}
	if f := v.Functions[0]; f.Self < 0.069 || f.Self > 0.071 || f.Total < 0.069 {
		t.Errorf("leaf %+v", f)
	}
	if f := v.Functions[1]; f.Total < 0.099 || f.Total > 0.101 || f.Self < 0.029 || f.Self > 0.031 {
		t.Errorf("main %+v", f)
	}
	if v.Flame == nil || v.Flame.Wire.Total != 10 {
		t.Errorf("flame %+v", v.Flame)
	}
}

func TestEnvSummaryEscaped(t *testing.T) {
	traces, r := loadTraces(t, "testdata/xss.json")
	env := []byte(`{"format":"bottleneck.env-summary","host":{"os":"<b>linux</b>"}}`)
	var page bytes.Buffer
	if err := Write(&page, Build(Input{Report: r, Traces: traces, Env: env}, Options{Title: "t"})); err != nil {
		t.Fatal(err)
	}
	b := page.Bytes()
	if !bytes.Contains(b, []byte(`\u003cb\u003elinux\u003c/b\u003e`)) || bytes.Contains(b, []byte("<b>linux")) {
		t.Error("env summary missing or unescaped")
	}
}

// TestBundleMatchesSources rebuilds web/ and compares the bytes with the
// committed assets (skipped without Node and `npm ci` in web/).
func TestBundleMatchesSources(t *testing.T) {
	web := filepath.Join("..", "..", "web")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	if _, err := os.Stat(filepath.Join(web, "node_modules", "esbuild")); err != nil {
		t.Skip("web/node_modules missing: run scripts/setup-browser (npm ci in web/)")
	}
	out := t.TempDir()
	cmd := exec.Command("node", "build.mjs", "--outdir", out)
	cmd.Dir = web
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	for _, name := range []string{"app.js", "app.css"} {
		got, _ := os.ReadFile(filepath.Join(out, name))
		want, _ := Asset(name)
		if !bytes.Equal(got, want) {
			t.Errorf("internal/htmlreport/assets/%s is stale: run `npm run build` in web/ and commit it", name)
		}
	}
}

// A run directory's page carries every step of the run, the window marked,
// with the series' notes.
func TestRunSteps(t *testing.T) {
	run, err := rundir.Read(filepath.Join(testutil.RepoRoot(), "testdata", "rundir", "slow_dataset"))
	if err != nil {
		t.Fatal(err)
	}
	d := Build(Input{Runs: []*rundir.Run{run}}, Options{})
	if len(d.Steps) != 1 || d.Steps[0].Tag != "rank0" || d.Steps[0].Summary == nil {
		t.Fatalf("steps: %+v", d.Steps)
	}
	var in int
	for _, st := range d.Steps[0].Steps {
		if st[2] <= 0 {
			t.Errorf("step %v without a duration", st)
		}
		in += int(st[3])
	}
	if in == 0 || in == len(d.Steps[0].Steps) {
		t.Errorf("%d of %d steps in the window", in, len(d.Steps[0].Steps))
	}
	if d.Tried != nil {
		t.Errorf("tried without --verify: %+v", d.Tried)
	}
	run.Tried = &rundir.Tried{Changes: []rundir.TriedChange{{Rule: "input.loader", BaseStepsUs: []float64{40, 41}, NewStepsUs: []float64{20, 19}}}}
	if d := Build(Input{Runs: []*rundir.Run{run}}, Options{}); len(d.Tried) != 1 || d.Tried[0].NewStepsUs[1] != 19 {
		t.Errorf("tried: %+v", d.Tried)
	}
	// traces alone (no run directory) have no run step times
	if d := Build(Input{}, Options{}); d.Steps != nil {
		t.Errorf("steps without a run: %+v", d.Steps)
	}
}
