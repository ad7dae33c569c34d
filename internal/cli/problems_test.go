package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// damagedTrace is a trace with a bad escape in one name: readable, exit 3.
func damagedTrace(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "damaged.json")
	body := `{"traceEvents":[
{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
{"ph":"X","cat":"cpu_op","name":"bad\q","pid":1,"tid":1,"ts":1,"dur":5}
]}`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestExit3NamesTheDamageOnStderr: every command that exits 3 names the
// damaged file and the place on stderr, whatever it writes on stdout or
// into a file; a clean input prints no problem.
func TestExit3NamesTheDamageOnStderr(t *testing.T) {
	tr := damagedTrace(t)
	dir := t.TempDir()
	place := regexp.MustCompile(regexp.QuoteMeta(tr) + `: problem: byte [0-9]+: `)
	for _, args := range [][]string{
		{"analyze", tr},
		{"analyze", "--json", tr},
		{"report", tr, "-o", filepath.Join(dir, "r.html")},
		{"export", tr, "-f", "folded", "-o", filepath.Join(dir, "f.txt")},
		{"export", tr, "-f", "csv", "-o", filepath.Join(dir, "csv")},
	} {
		code, _, stderr := runMain(t, args...)
		if code != 3 || !place.MatchString(stderr) {
			t.Errorf("%v: exit %d, stderr %q; want 3 and the file and byte", args[:2], code, stderr)
		}
	}
	clean := filepath.Join(dir, "clean.json")
	os.WriteFile(clean, []byte(`{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":5}]}`), 0o644)
	for _, args := range [][]string{
		{"analyze", clean},
		{"report", clean, "-o", filepath.Join(dir, "r2.html")},
		{"export", clean, "-f", "folded"},
	} {
		if code, _, stderr := runMain(t, args...); code != 0 || strings.Contains(stderr, "problem") {
			t.Errorf("%v: exit %d, stderr %q", args[:2], code, stderr)
		}
	}
}
