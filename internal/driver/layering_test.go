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
		checkDeps(t, "github.com/bottleneck-dev/bottleneck/internal/"+pkg, forbidden)
	}
	// the analyses gather evidence; the layers that judge and render it
	// sit above them
	checkDeps(t, "github.com/bottleneck-dev/bottleneck/internal/analysis/...", append(forbidden, "/internal/diagnose", "/internal/report", "/internal/driver"))
}

func checkDeps(t *testing.T, pkgs string, forbidden []string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkgs).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkgs, err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if dep == f || strings.HasSuffix(dep, f) || strings.Contains(dep, f+"/") {
				t.Errorf("%s depends on %s", pkgs, dep)
			}
		}
	}
}
