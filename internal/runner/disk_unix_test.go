//go:build unix

package runner

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// A run whose disk filled up says so in its manifest (the report's
// warnings), not only that files are missing; a disk with room says nothing.
func TestDiskFullIsNamed(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	defer func(f func(string) (uint64, error)) { freeBytes = f }(freeBytes)
	for _, free := range []uint64{4096, 1 << 30} {
		freeBytes = func(string) (uint64, error) { return free, nil }
		var out bytes.Buffer
		res, err := Run(context.Background(), Config{
			Mode: Launcher, Args: []string{py, "-c", "pass"},
			RunDir: filepath.Join(t.TempDir(), "run"), Agent: DefaultAgentConfig(), Stdout: &out, Stderr: &out,
			Signals: make(chan os.Signal),
		})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%v %+v\n%s", err, res, out.String())
		}
		m, err := rundir.ReadManifest(res.RunDir)
		if err != nil {
			t.Fatal(err)
		}
		named := strings.Contains(strings.Join(m.Warnings, "\n"), "is full (4.00 KiB available: no space left on device)")
		if named != (free < diskFullBytes) {
			t.Errorf("%d bytes free: warnings %q", free, m.Warnings)
		}
	}
}
