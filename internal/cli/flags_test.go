package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadFlagValuesAreUsageErrors: a value out of a flag's range is
// refused when the flags are parsed (exit 2, the flag named), in every
// command; values in range are taken.
func TestBadFlagValuesAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "t.json")
	body := `{"distributedInfo":{"backend":"nccl","rank":0,"world_size":1},"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":5}]}`
	if err := os.WriteFile(tr, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(dir, "r.html")
	for _, args := range [][]string{
		{"analyze", tr, "--top", "-1"},
		{"analyze", tr, "--group-by-stack", "-2"},
		{"analyze", tr, "--rank", "-5"},
		{"export", tr, "-f", "markdown", "--top", "-1"},
		{"export", tr, "-f", "folded", "--max-nodes", "-1"},
		{"export", tr, "-f", "chrome", "--max-events", "-1"},
		{"export", tr, "-f", "chrome", "--min-duration", "-5"},
		{"export", tr, "-f", "chrome", "--min-duration", "NaN"},
		{"export", tr, "-f", "folded", "--rank", "-3"},
		{"report", tr, "-o", html, "--top", "-1"},
		{"serve", tr, "--top", "-1"},
		{"serve", tr, "--port", "70000"},
		{"serve", tr, "--port-tries", "0"},
		{"run", "--live-port", "70000", "x.py"},
		{"diff", tr, tr, "--top", "-1"},
		{"repro", tr, "--top", "0"},
		{"summarize", tr, "--workers", "-1"},
		{"merge", tr, "--workers", "-1"},
		{"merge", tr, "--world-size", "-8"},
	} {
		code, _, stderr := runMain(t, args...)
		flag := ""
		for _, a := range args {
			if strings.HasPrefix(a, "--") {
				flag = a
			}
		}
		if code != 2 || !strings.Contains(stderr, flag) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", args, code, stderr, flag)
		}
	}
	for _, args := range [][]string{
		{"analyze", tr, "--top", "0", "--group-by-stack", "0"},
		{"analyze", tr, "--rank", "0"},
		{"export", tr, "-f", "chrome", "--max-events", "0", "--min-duration", "0.5"},
		{"export", tr, "-f", "folded", "--max-nodes", "0", "--rank", "0"},
		{"report", tr, "-o", html, "--top", "0"},
		{"diff", tr, tr, "--top", "0"},
	} {
		if code, _, stderr := runMain(t, args...); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}
