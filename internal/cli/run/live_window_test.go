package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/live"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// Once the first window's trace is in the run directory, the live view
// shows what the diagnosis makes of it, while the program goes on; a
// trace still being written (a temporary name) is not read, and before
// any trace there is no window line.
func TestLiveViewDiagnosesTheWindow(t *testing.T) {
	// the run directory as the agent leaves it when the window closed: its
	// evidence so far, and the trace
	src := filepath.Join(testutil.RepoRoot(), "testdata", "rundir", "slow_dataset")
	dir := t.TempDir()
	for _, f := range []string{"manifest.json", "evidence-rank0.json", "env-rank0.json", "env.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lv := &liveView{title: "slow_dataset.py", dir: dir}
	view := func() live.View {
		lv.mu.Lock()
		defer lv.mu.Unlock()
		lv.diagnoseWindow()
		return live.View{Window: lv.window}
	}
	b, err := os.ReadFile(filepath.Join(src, "trace-rank0.pt.trace.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace-rank0.pt.trace.json.gz.tmp-7"), b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if v := view(); v.Window != nil || lv.analysing {
		t.Fatalf("a trace being written was read: %+v", v.Window)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace-rank0.pt.trace.json.gz"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	var w *live.WindowVerdict
	for w == nil && time.Now().Before(deadline) {
		w = view().Window
		time.Sleep(50 * time.Millisecond)
	}
	if w == nil {
		t.Fatal("no window verdict within a minute")
	}
	if w.Tag != "rank0" || w.Class != "input-bound" || w.Steps == "" || !strings.Contains(w.Change, "SlowDataset") {
		t.Errorf("window verdict %+v", w)
	}
	if line := w.Text(); !strings.HasPrefix(line, "rank0's recorded window (steps "+w.Steps+"): input-bound") {
		t.Errorf("window line: %s", line)
	}
	// too little recorded: no verdict, and why
	none := &live.WindowVerdict{Tag: "rank0", Steps: "3-4", Class: "undetermined", Why: "too few events\x1b[31m"}
	if line := none.Text(); line != "rank0's recorded window (steps 3-4): no verdict: too few events?[31m" {
		t.Errorf("undetermined window line: %q", line)
	}
}
