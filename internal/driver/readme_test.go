package driver

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// The README shows what `bottleneck analyze` prints for the bundled
// example's H100 run directory: the block after its marker is that output
// (up to the reading statistics, which carry a time), rewritten with
// -update.
func TestREADMEReport(t *testing.T) {
	const marker = "<!-- bottleneck analyze testdata/rundir/h100/train_cnn -->\n```\n"
	path := filepath.Join(testutil.RepoRoot(), "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(readme, []byte(marker))
	if start < 0 {
		t.Fatalf("README.md has no %q block", marker)
	}
	start += len(marker)
	end := bytes.Index(readme[start:], []byte("```\n"))
	if end < 0 {
		t.Fatal("README.md: the report block is not closed")
	}
	end += start
	ios, _, _, _ := iostreams.Test()
	var out bytes.Buffer
	if _, err := Analyze(&out, ios, []string{filepath.Join(testutil.RepoRoot(), "testdata", "rundir", "h100", "train_cnn")}, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	got, _, _ := strings.Cut(out.String(), "\nRead ")
	got = strings.TrimRight(got, "\n") + "\n"
	if *testutil.Update {
		updated := append(append(append([]byte{}, readme[:start]...), got...), readme[end:]...)
		if err := os.WriteFile(path, updated, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if string(readme[start:end]) != got {
		t.Errorf("README.md's report is not what analyze prints now (BOTTLENECK_UPDATE=1 go test ./internal/driver -run TestREADMEReport):\n%s", got)
	}
}
