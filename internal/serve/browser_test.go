package serve

// Browser tests: the HTML report file and the served UI in Debian's
// headless Chromium, driven by web/test/browser.mjs (playwright-core). They
// skip, saying why, when Chromium, Node or web/node_modules are missing
// (scripts/setup-browser installs them). Screenshots are written under the
// test's temp directory; set BOTTLENECK_SCREENSHOTS=DIR to keep them.

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/tracegen"
)

type canvasInk struct {
	W, H, Inked, Drawn int
}

type browserResult struct {
	ConsoleErrors []string
	PageErrors    []string
	Dialogs       []string
	Requests      []string
	Fatal         string
	LoadMs        int
	Verdict       string
	Sections      []string
	Sort          *struct {
		Table, Header, First, Second string
		OK                           bool
		Rows                         int
	}
	FilterRows       *int
	Flame            []canvasInk
	Timeline         []canvasInk
	Roofline         []canvasInk
	RooflineText     string
	TimelineZoomed   []canvasInk
	TimelineStatus   string
	XSS              any
	InjectedElements int
	Scripts          int
	BodyText         string
}

func runBrowser(t *testing.T, node, script, url, shot string) *browserResult {
	t.Helper()
	var r browserResult
	testutil.RunBrowser(t, node, script, url, shot, &r)
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
	return &r
}

// checkPage asserts what every report page must do.
func checkPage(t *testing.T, r *browserResult, wantFlames int) {
	t.Helper()
	if len(r.ConsoleErrors) > 0 || len(r.PageErrors) > 0 {
		t.Errorf("console errors %q, page errors %q", r.ConsoleErrors, r.PageErrors)
	}
	if len(r.Sections) == 0 || r.Sections[0] != "verdict" || !strings.Contains(r.Verdict, "Verdict") {
		t.Errorf("first section %v, verdict %.200q", r.Sections, r.Verdict)
	}
	if !strings.Contains(r.Verdict, "steady-state window") && !strings.Contains(r.Verdict, "Steady-state window") {
		t.Errorf("the verdict does not say whether the window is steady state: %.300q", r.Verdict)
	}
	for _, s := range []string{"steps", "gpu", "memory", "operators", "kernels", "flame", "timeline"} {
		found := false
		for _, x := range r.Sections {
			found = found || x == s
		}
		if !found {
			t.Errorf("no %s section (have %v)", s, r.Sections)
		}
	}
	if r.Sort == nil || !r.Sort.OK {
		t.Errorf("table did not sort on click: %+v", r.Sort)
	}
	if r.FilterRows == nil || *r.FilterRows != 0 {
		t.Errorf("filter left %v rows", r.FilterRows)
	}
	if len(r.Flame) < wantFlames {
		t.Errorf("%d flame graphs, want %d", len(r.Flame), wantFlames)
	}
	for i, c := range r.Flame {
		if c.Inked < 1000 {
			t.Errorf("flame graph %d blank: %+v", i, c)
		}
	}
	if len(r.Timeline) != 1 || r.Timeline[0].Inked < 1000 || r.Timeline[0].Drawn == 0 {
		t.Errorf("timeline blank: %+v", r.Timeline)
	}
	if len(r.TimelineZoomed) != 1 || r.TimelineZoomed[0].Drawn == 0 {
		t.Errorf("zoomed timeline blank: %+v", r.TimelineZoomed)
	}
	if r.XSS != nil || len(r.Dialogs) > 0 || r.InjectedElements > 0 {
		t.Errorf("injected script ran: __xss=%v dialogs=%q elements=%d", r.XSS, r.Dialogs, r.InjectedElements)
	}
}

func TestBrowserReportFile(t *testing.T) {
	node, script := testutil.Browser(t, "browser.mjs")
	dir := t.TempDir()
	ios, _, _, _ := iostreams.Test()

	t.Run("xss", func(t *testing.T) {
		p, err := load(ios, []string{"../htmlreport/testdata/xss.json"}, 0)
		if err != nil {
			t.Fatal(err)
		}
		html := filepath.Join(dir, "xss.html")
		if err := htmlreport.WriteFile(html, p.Data); err != nil {
			t.Fatal(err)
		}
		r := runBrowser(t, node, script, "file://"+html, filepath.Join(dir, "xss.png"))
		checkPage(t, r, 2)
		if r.Scripts != 2 {
			t.Errorf("%d script elements, want 2", r.Scripts)
		}
		for _, h := range []string{`<img src=x onerror="window.__xss=1;alert(1)">`, `</script><script>window.__xss=2</script>`} {
			if !strings.Contains(r.BodyText, h) {
				t.Errorf("hostile name %q not shown as text", h)
			}
		}
		for _, u := range r.Requests {
			if !strings.HasPrefix(u, "file://") {
				t.Errorf("network request %s", u)
			}
		}
	})

	// a run directory: the page adds the run's step times and Python profile
	t.Run("rundir", func(t *testing.T) {
		p, err := load(ios, []string{filepath.Join(testutil.RepoRoot(), "testdata", "rundir", "slow_dataset")}, 0)
		if err != nil {
			t.Fatal(err)
		}
		html := filepath.Join(dir, "rundir.html")
		if err := htmlreport.WriteFile(html, p.Data); err != nil {
			t.Fatal(err)
		}
		r := runBrowser(t, node, script, "file://"+html, filepath.Join(dir, "rundir.png"))
		if len(r.ConsoleErrors) > 0 || len(r.PageErrors) > 0 {
			t.Errorf("console errors %q, page errors %q", r.ConsoleErrors, r.PageErrors)
		}
		if !slices.Contains(r.Sections, "run-steps") {
			t.Errorf("no run-steps section (have %v)", r.Sections)
		}
	})

	// The FLOPs section of a real H100 trace with shapes: the roofline is
	// drawn (roofs and points) against the bf16 peak. (Its one step is
	// excluded as carry-over, so the page has no step MFU.)
	t.Run("roofline", func(t *testing.T) {
		p, err := load(ios, []string{filepath.Join(testutil.Traces(t), "tracelens", "h100", "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")}, 0)
		if err != nil {
			t.Fatal(err)
		}
		html := filepath.Join(dir, "roofline.html")
		if err := htmlreport.WriteFile(html, p.Data); err != nil {
			t.Fatal(err)
		}
		r := runBrowser(t, node, script, "file://"+html, filepath.Join(dir, "roofline.png"))
		if len(r.ConsoleErrors) > 0 || len(r.PageErrors) > 0 {
			t.Errorf("console errors %q, page errors %q", r.ConsoleErrors, r.PageErrors)
		}
		if !slices.Contains(r.Sections, "roofline") {
			t.Fatalf("no roofline section (have %v)", r.Sections)
		}
		if len(r.Roofline) != 1 || r.Roofline[0].Inked < 500 {
			t.Errorf("roofline chart blank: %+v", r.Roofline)
		}
		if !strings.Contains(r.RooflineText, "NVIDIA H100") || !strings.Contains(r.RooflineText, "989.4 TFLOP/s bf16 peak") {
			t.Errorf("roofline section text: %.300q", r.RooflineText)
		}
	})

	t.Run("large", func(t *testing.T) {
		size := int64(300 << 20)
		if s := os.Getenv("BOTTLENECK_BROWSER_TRACE_MB"); s != "" {
			fmt.Sscan(s, &size)
			size <<= 20
		}
		trace := filepath.Join(dir, "big.json")
		f, err := os.Create(trace)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tracegen.Generate(f, tracegen.Options{TargetBytes: size, Seed: 11}); err != nil {
			t.Fatal(err)
		}
		f.Close()
		start := time.Now()
		p, err := load(ios, []string{trace}, 500)
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(trace)
		html := filepath.Join(dir, "large.html")
		if err := htmlreport.WriteFile(html, p.Data); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(html)
		t.Logf("%d MB trace: report %.1f s, HTML %d KB, %d events in %d timeline boxes", size>>20,
			time.Since(start).Seconds(), st.Size()>>10, p.Data.Views[0].Timeline.Events, p.Data.Views[0].Timeline.Boxes)
		if st.Size() > 16<<20 {
			t.Errorf("HTML of %d bytes: the timeline is not summarised", st.Size())
		}
		r := runBrowser(t, node, script, "file://"+html, filepath.Join(dir, "large.png"))
		checkPage(t, r, 2)
		if r.LoadMs > 30000 {
			t.Errorf("page took %d ms to show the verdict", r.LoadMs)
		}
		if !strings.Contains(r.Verdict, "bound") {
			t.Errorf("no verdict class in %.300q", r.Verdict)
		}

		// The same report served live: zooming fetches detail from the server.
		h, err := NewHandler(p, true)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(h)
		defer srv.Close()
		r = runBrowser(t, node, script, srv.URL+"/", filepath.Join(dir, "served.png"))
		checkPage(t, r, 2)
		if !strings.Contains(r.TimelineStatus, "detail from server") {
			t.Errorf("zoomed timeline did not load detail: %q", r.TimelineStatus)
		}
		for _, u := range r.Requests {
			if !strings.HasPrefix(u, srv.URL) {
				t.Errorf("request outside the server: %s", u)
			}
		}
	})
}
