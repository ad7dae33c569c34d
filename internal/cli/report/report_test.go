package report

import (
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

func TestReportTraceToFile(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	out := filepath.Join(t.TempDir(), "r.html")
	if err := Run(&Options{IO: ios, Paths: []string{"../../htmlreport/testdata/xss.json"}, HTML: out, Top: 10}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), `id="bottleneck-data"`) || strings.Contains(string(b), "<img") {
		t.Fatalf("page: %v (%d bytes)", err, len(b))
	}
	if !strings.Contains(errOut.String(), "wrote "+out) {
		t.Errorf("stderr %q", errOut.String())
	}
}

func TestReportNeedsOutput(t *testing.T) {
	ios, _, _, _ := iostreams.Test()
	err := Run(&Options{IO: ios, Paths: []string{"../../htmlreport/testdata/xss.json"}})
	var ee *exitcode.Error
	if !errors.As(err, &ee) || ee.Code != exitcode.Usage {
		t.Fatalf("err %v", err)
	}
}

func TestReportRunDir(t *testing.T) {
	dir := t.TempDir()
	src, _ := os.ReadFile("../../htmlreport/testdata/xss.json")
	f, _ := os.Create(filepath.Join(dir, "trace-rank0.pt.trace.json.gz"))
	zw := gzip.NewWriter(f)
	zw.Write(src)
	zw.Close()
	f.Close()
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"format":"bottleneck.run","version":1}`), 0o644)
	os.WriteFile(filepath.Join(dir, "env.json"), []byte(`{"format":"bottleneck.env-summary","host":{"os":"linux"}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "pyprofile-rank0.json"), []byte(`{"format":"bottleneck.pyprofile","version":1,"profiler":"sample",
 "interval_s":0.01,"samples":3,"frames":[{"file":"/t/train.py","func":"main","line":3,"fline":1}],
 "threads":[{"id":1,"name":"MainThread","role":"main","samples":3}],"stacks":[{"thread":0,"frames":[0],"count":3}]}`), 0o644)
	ios, _, _, _ := iostreams.Test()
	if err := Run(&Options{IO: ios, Paths: []string{dir}}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"python":[{"tag":"rank0"`, `"env":{"format":"bottleneck.env-summary"`, `"gpu_utilization"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report.html lacks %s", want)
		}
	}
}

// Reports of one run directory written at once each get a file of their
// own: none replaces another's, nor the report.html already there.
func TestConcurrentReportsNeverReplace(t *testing.T) {
	dir := t.TempDir()
	src, _ := os.ReadFile("../../htmlreport/testdata/xss.json")
	os.WriteFile(filepath.Join(dir, "trace-rank0.pt.trace.json"), src, 0o644)
	os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"format":"bottleneck.run","version":1}`), 0o644)
	os.WriteFile(filepath.Join(dir, "report.html"), []byte("the run's report"), 0o644)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			ios, _, _, _ := iostreams.Test()
			errs[i] = Run(&Options{IO: ios, Paths: []string{dir}, Top: 10})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "report.html")); string(b) != "the run's report" {
		t.Error("report.html was replaced")
	}
	names, _ := filepath.Glob(filepath.Join(dir, "report*"))
	if len(names) != n+1 {
		t.Fatalf("%d reports for %d writers: %v", len(names)-1, n, names)
	}
	for i := 2; i < n+2; i++ {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("report-%d.html", i)))
		if err != nil || !strings.Contains(string(b), `id="bottleneck-data"`) {
			t.Errorf("report-%d.html: %v (%d bytes)", i, err, len(b))
		}
	}
}

// A run directory whose bottleneck was killed (manifest still "running")
// gets its report, with a note on stderr naming the directory; a run that
// ended gets no note. The note comes from the manifest driver.Open read.
func TestInterruptedRunDirIsSaid(t *testing.T) {
	src, err := os.ReadFile("../../htmlreport/testdata/xss.json")
	if err != nil {
		t.Fatal(err)
	}
	for state, want := range map[string]bool{"running": true, "ended": false} {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "trace-rank0.pt.trace.json"), src, 0o644)
		os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"format":"bottleneck.run","version":1,"state":"`+state+`","started":"2026-01-02T03:04:05Z"}`), 0o644)
		ios, _, _, errOut := iostreams.Test()
		if err := Run(&Options{IO: ios, Paths: []string{dir}}); err != nil {
			t.Fatalf("state %s: %v", state, err)
		}
		note := dir + ": interrupted: bottleneck ended before the run did"
		if got := strings.Contains(errOut.String(), note); got != want {
			t.Errorf("state %s: note = %v, want %v; stderr:\n%s", state, got, want, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
			t.Errorf("state %s: %v", state, err)
		}
	}
}
