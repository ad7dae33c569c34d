package driver

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering: the packages that read and render reports depend neither
// on running programs (runner, os/exec, os/signal) nor on the command
// line (internal/cli, which alone maps statuses to exit codes).
func TestLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not on PATH")
	}
	forbidden := []string{"/internal/runner", "/internal/cli", "os/exec", "os/signal"}
	for _, pkg := range []string{"report", "diagnose", "driver", "serve", "htmlreport", "rundir", "runreport", "export"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/bottleneck-dev/bottleneck/internal/"+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if dep == f || strings.HasSuffix(dep, f) || strings.Contains(dep, f+"/") {
					t.Errorf("internal/%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
