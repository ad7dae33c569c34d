package runreport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// A run whose bottleneck was SIGKILLed leaves manifest.json at "running":
// the report must say the run was interrupted; an ended run must not.
func TestInterruptedRunIsSaid(t *testing.T) {
	for state, want := range map[string]bool{"running": true, "ended": false} {
		dir := t.TempDir()
		m := &rundir.Manifest{Format: rundir.ManifestFormat, Version: 1, State: state, Started: time.Now(),
			Command: rundir.Command{Argv: []string{"python", "train.py"}}}
		if state == "ended" {
			m.Exit = &rundir.Exit{Code: 0, Reason: "exited"}
		}
		if err := rundir.WriteManifest(dir, m); err != nil {
			t.Fatal(err)
		}
		r, err := Build(dir)
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		WriteText(&text, r)
		if got := strings.Contains(text.String(), "interrupted: bottleneck ended before the run did"); got != want {
			t.Errorf("state %s: interrupted said = %v, want %v\n%s", state, got, want, text.String())
		}
		if (r.Interrupted != "") != want {
			t.Errorf("state %s: Interrupted = %q", state, r.Interrupted)
		}
	}
}
