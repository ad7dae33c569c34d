package testutil

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Browser returns node and the path of web/test/SCRIPT for a browser test
// (Debian's headless Chromium driven by playwright-core), skipping t, saying
// why, with -short or when Chromium, Node or web/node_modules are missing
// (scripts/setup-browser installs them).
func Browser(t testing.TB, script string) (node, path string) {
	t.Helper()
	if testing.Short() {
		t.Skip("browser tests skipped with -short")
	}
	chromium := os.Getenv("BOTTLENECK_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no Chromium at %s (run scripts/setup-browser)", chromium)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed (run scripts/setup-browser)")
	}
	web := filepath.Join(RepoRoot(), "web")
	if _, err := os.Stat(filepath.Join(web, "node_modules", "playwright-core")); err != nil {
		t.Skip("web/node_modules/playwright-core missing (run scripts/setup-browser)")
	}
	return node, filepath.Join(web, "test", script)
}

// RunBrowser runs a browser script on url, writing a screenshot to shot,
// and decodes the JSON it prints into result. It fails t when the script
// fails or reports a "Fatal" error. With BOTTLENECK_SCREENSHOTS=DIR the
// screenshot is kept there.
func RunBrowser(t testing.TB, node, script, url, shot string, result any) {
	t.Helper()
	cmd := exec.Command(node, script, url, shot)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("browser script: %v\n%s", err, out)
	}
	var fatal struct{ Fatal string }
	if err := json.Unmarshal(out, &fatal); err != nil {
		t.Fatalf("browser output: %v\n%.2000s", err, out)
	}
	if fatal.Fatal != "" {
		t.Fatalf("in the browser: %s", fatal.Fatal)
	}
	if err := json.Unmarshal(out, result); err != nil {
		t.Fatalf("browser output: %v\n%.2000s", err, out)
	}
	if dir := os.Getenv("BOTTLENECK_SCREENSHOTS"); dir != "" {
		b, _ := os.ReadFile(shot)
		os.WriteFile(filepath.Join(dir, filepath.Base(shot)), b, 0o644)
	}
}
