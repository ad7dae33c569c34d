package htmlreport

// Browser test of the timeline's launch links: the report of a small trace
// in Debian's headless Chromium, driven by web/test/links.mjs
// (playwright-core). It skips, saying why, when Chromium, Node or
// web/node_modules are missing (scripts/setup-browser installs them), and
// with -short. Set BOTTLENECK_SCREENSHOTS=DIR to keep the screenshots.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

type linkSnap struct {
	Hash               uint32
	Hover, Diff, Links int
	Drawn              int
	Tip                []string
	Visible            bool
	Pressed            string
}

type linksResult struct {
	ConsoleErrors, PageErrors, Dialogs []string
	Fatal                              string
	Links                              []struct {
		KX, KY, LX, LY float64
		Kernel         string
	}
	Before, Away, HoverKernel, HoverLaunch, ToggleOn, ToggleOff *linkSnap
	ToggleText, Status                                          string
	XSS                                                         any
	InjectedElements                                            int
}

func TestBrowserLaunchLinks(t *testing.T) {
	node, script := testutil.Browser(t, "links.mjs")
	dir := t.TempDir()
	for _, c := range []struct {
		name, trace string
		// wantTip is a line the tooltip of the first link's device box has.
		wantTip string
	}{
		{"links", "testdata/links.json", "launched by cudaLaunchKernel (aten::mm)"},
		{"xss", "testdata/xss.json", `launched by cudaLaunchKernel (<img src=x onerror="window.__xss=1;alert(1)">)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			traces, r := loadTraces(t, c.trace)
			html := filepath.Join(dir, c.name+".html")
			if err := WriteFile(html, Build(Input{Report: r, Traces: traces}, Options{Title: c.name})); err != nil {
				t.Fatal(err)
			}
			var res linksResult
			testutil.RunBrowser(t, node, script, "file://"+html, filepath.Join(dir, "links-"+c.name+".png"), &res)
			if len(res.ConsoleErrors) > 0 || len(res.PageErrors) > 0 {
				t.Errorf("console errors %q, page errors %q", res.ConsoleErrors, res.PageErrors)
			}
			if res.XSS != nil || len(res.Dialogs) > 0 || res.InjectedElements > 0 {
				t.Errorf("injected script ran: __xss=%v dialogs=%q elements=%d", res.XSS, res.Dialogs, res.InjectedElements)
			}
			if len(res.Links) == 0 {
				t.Fatal("no launch link on screen")
			}
			b := res.Before
			if b == nil || b.Drawn == 0 || b.Links != 0 || b.Hover != 0 {
				t.Fatalf("before hovering: %+v", b)
			}
			for _, h := range []struct {
				what string
				s    *linkSnap
				tip  string
			}{{"device box", res.HoverKernel, c.wantTip}, {"launch call", res.HoverLaunch, "launched " + res.Links[0].Kernel}} {
				if h.s == nil || h.s.Links < 1 || h.s.Hover < 10 || h.s.Diff == 0 {
					t.Errorf("hovering the %s drew no arrow: %+v", h.what, h.s)
					continue
				}
				found := false
				for _, l := range h.s.Tip {
					found = found || strings.HasPrefix(l, h.tip)
				}
				if !h.s.Visible || !found {
					t.Errorf("hovering the %s: tooltip %q, want a line starting %q", h.what, h.s.Tip, h.tip)
				}
			}
			if a := res.Away; a == nil || a.Links != 0 || a.Hash != b.Hash {
				t.Errorf("after the hover the canvas is not back as before: %+v (before %+v)", a, b)
			}
			if res.ToggleText != "Launch links" {
				t.Errorf("toggle button %q", res.ToggleText)
			}
			if on := res.ToggleOn; on == nil || on.Links != len(res.Links) || on.Diff == 0 || on.Pressed != "true" {
				t.Errorf("toggle on: %+v, want %d arrows", on, len(res.Links))
			}
			if !strings.Contains(res.Status, "launch links") {
				t.Errorf("status %q", res.Status)
			}
			if off := res.ToggleOff; off == nil || off.Links != 0 || off.Hash != b.Hash || off.Pressed != "false" {
				t.Errorf("toggle off: %+v (before %+v)", off, b)
			}
		})
	}
}
