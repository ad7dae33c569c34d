package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/cli/clitest"
	"github.com/bottleneck-dev/bottleneck/internal/cli/exitcode"
	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
)

// Nothing readable: serve fails as analyze does (exit 1, the reason on
// stderr) instead of serving an empty report.
func TestServeNothingReadableFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.json")
	code, stdout, stderr := clitest.Run(NewCmd, "--port", "0", missing)
	if code != exitcode.Failed || !strings.Contains(stderr, missing) || strings.Contains(stdout, "serving") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// Something readable with problems: served, and the problems named on
// stderr before the server starts; a clean input names none.
func TestServePrintsProblems(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"damaged.json": `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"bad\q","pid":1,"tid":1,"ts":1,"dur":5}]}`,
		"clean.json":   `{"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":5}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		paths   []string
		problem bool
	}{
		{[]string{filepath.Join(dir, "damaged.json")}, true},
		{[]string{filepath.Join(dir, "clean.json"), filepath.Join(dir, "gone.json")}, true},
		{[]string{filepath.Join(dir, "clean.json")}, false},
	} {
		ios, _, stdout, stderr := iostreams.Test()
		ready := make(chan string, 1)
		// The server runs until the test process ends: Run has no stop.
		go Run(&Options{IO: ios, Paths: c.paths, Host: "127.0.0.1", Port: 0, Tries: 1, Top: 10, Ready: func(u string) { ready <- u }})
		<-ready
		got := stderr.String()
		if c.problem != strings.Contains(got, "bottleneck: ") || c.problem && !strings.Contains(got, filepath.Base(c.paths[len(c.paths)-1])) {
			t.Errorf("%v: stderr %q", c.paths, got)
		}
		if !strings.Contains(stdout.String(), "serving") {
			t.Errorf("%v: not served: %q", c.paths, stdout)
		}
	}
}
