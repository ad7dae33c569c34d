package run

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// The reports --verify writes again with what it tried come from the run
// directory as writeReports first read it, and tried.json: the same
// files as reading the whole directory again and analysing its traces a
// second time (which it did before), but for how long the read took (the
// one read's time, and the sizes in the manifest that change with it).
func TestReportTriedMatchesAFreshRead(t *testing.T) {
	dir := testutil.RunDir(t, "slow_dataset")
	ios, _, _, _ := iostreams.Test()
	_, _, d, err := writeReports(ios, dir)
	if err != nil {
		t.Fatal(err)
	}
	tried := []rundir.TriedChange{{Rule: "input.loader", Set: map[string]string{"num_workers": "4"}, Dir: dir + "-tried-1",
		PredictedSavingPct: 60, PredictedSpeedup: 2.5, PredictedMethod: "replay",
		MeanBaseUs: 9000, MeanNewUs: 4000, MeanSpeedup: 2.25, MeanLow: 2, MeanHigh: 2.5, Significant: true, MedianSpeedup: 2.3,
		BaseStepsUs: []float64{9000, 9100, 8900}, NewStepsUs: []float64{4000, 4100, 3900}}}
	if err := rundir.WriteTried(dir, tried); err != nil {
		t.Fatal(err)
	}
	names := []string{rundir.ReportText, rundir.ReportJSON, rundir.ReportHTML, rundir.ManifestName}
	if _, _, _, err := writeReports(ios, dir); err != nil {
		t.Fatal(err)
	}
	fresh := readAll(t, dir, names)
	if !bytes.Contains(fresh[rundir.ReportText], []byte("Tried (run --verify), measured against predicted:\n  num_workers=4")) {
		t.Fatalf("the fresh read's report.txt has no tried section:\n%s", fresh[rundir.ReportText])
	}
	if err := reportTried(dir, d); err != nil {
		t.Fatal(err)
	}
	again := readAll(t, dir, names)
	for _, name := range names {
		if !bytes.Equal(readTimeless(again[name]), readTimeless(fresh[name])) {
			t.Errorf("%s differs from a fresh read's:\n%.2000s\nwant\n%.2000s", name, again[name], fresh[name])
		}
	}
}

// readTimeless is a report or manifest without the trace's read time.
func readTimeless(b []byte) []byte {
	for _, r := range []struct {
		re  *regexp.Regexp
		put string
	}{
		{regexp.MustCompile(`(uncompressed in )[^\n]+ \([0-9]+ MB/s\)`), "${1}T"},
		{regexp.MustCompile(`("read_seconds": ?)[0-9.e+-]+`), "${1}T"},
		{regexp.MustCompile(`("kind": "report-(?:text|json|html)",\s*"bytes": )[0-9]+`), "${1}N"},
	} {
		b = r.re.ReplaceAll(b, []byte(r.put))
	}
	return b
}

func readAll(t *testing.T, dir string, names []string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	return files
}
