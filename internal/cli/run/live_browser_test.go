package run

// --live=web in Debian's headless Chromium, driven by web/test/live.mjs
// (playwright-core): the page's step count grows while a short program
// runs, and the page becomes the run's report when it ends. It skips,
// saying why, when Chromium, Node or web/node_modules are missing
// (scripts/setup-browser installs them), and with -short.

import (
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

type liveBrowserResult struct {
	ConsoleErrors, PageErrors, Dialogs []string
	Steps                              []int
	Causes                             []string
	Report                             bool
	Title                              string
	LiveLooks                          int // looks (every 100 ms) that saw the live table
	XSS                                any
	// Cells: the first rank's row the page last showed, by heading
	Cells map[string]string
}

func TestLiveWebBrowser(t *testing.T) {
	node, script := testutil.Browser(t, "live.mjs")
	py := torchPython(t)
	// a hostile program name: the page sets it as text
	prog := filepath.Join(t.TempDir(), `<img src=x onerror="window.__xss=1">.py`)
	if err := os.WriteFile(prog, []byte(liveProg), 0o644); err != nil {
		t.Fatal(err)
	}
	url, sigs, done := liveWebRun(t, py, prog, "200", "0.03")
	var res liveBrowserResult
	testutil.RunBrowser(t, node, script, url, filepath.Join(t.TempDir(), "live.png"), &res)
	sigs <- os.Interrupt // ends the grace period
	r := <-done
	t.Logf("step counts on the page %v in %d looks; last cause %q; report title %q", res.Steps, res.LiveLooks, last(res.Causes), res.Title)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if len(res.ConsoleErrors) > 0 || len(res.PageErrors) > 0 {
		t.Errorf("console errors %q, page errors %q", res.ConsoleErrors, res.PageErrors)
	}
	if res.XSS != nil || len(res.Dialogs) > 0 {
		t.Errorf("the program's name ran as script: __xss=%v dialogs %q", res.XSS, res.Dialogs)
	}
	// 200 steps of 30 ms or more, a snapshot every 0.5 s: the page showed
	// several step counts while the program ran, each larger
	if len(res.Steps) < 2 {
		if res.LiveLooks < 15 && res.Report {
			// Chromium's start outlasted most of the 6 s program (a CI
			// run's page showed only the report)
			t.Skipf("premise absent: the browser saw the live page for %d looks of 100 ms before the program ended (machine busy)", res.LiveLooks)
		}
		t.Fatalf("step counts seen on the page %v in %d looks, want at least 2", res.Steps, res.LiveLooks)
	}
	for i := 1; i < len(res.Steps); i++ {
		if res.Steps[i] <= res.Steps[i-1] {
			t.Errorf("the step count did not grow: %v", res.Steps)
		}
	}
	causeLine := regexp.MustCompile(`^cause so far \(provisional\): `)
	if len(res.Causes) == 0 || !causeLine.MatchString(res.Causes[len(res.Causes)-1]) {
		t.Errorf("cause lines %q", res.Causes)
	}
	// the steps sleep: the sampler's split shows them blocked, in
	// neither a sync nor a collective
	pcts := map[string]float64{}
	for _, k := range []string{"Python", "native", "device", "collectives", "other"} {
		v, err := strconv.ParseFloat(strings.TrimSuffix(res.Cells[k], "%"), 64)
		if err != nil {
			t.Fatalf("the %s cell %q: %v (row %q)", k, res.Cells[k], err, res.Cells)
		}
		pcts[k] = v
	}
	if pcts["other"] <= pcts["device"]+pcts["collectives"]+pcts["Python"]+pcts["native"] {
		t.Errorf("a sleeping step not mostly blocked otherwise: %v", res.Cells)
	}
	if !res.Report {
		t.Fatal("the page did not become the report")
	}
	page, err := os.ReadFile(filepath.Join(r.dir, rundir.ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<title>([^<]*)</title>`).FindSubmatch(page)
	if m == nil || res.Title == "" || html.UnescapeString(string(m[1])) != res.Title {
		t.Errorf("the page's title %q, report.html's %q", res.Title, m)
	}
}

func last(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[len(xs)-1]
}
