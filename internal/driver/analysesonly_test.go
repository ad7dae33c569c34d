package driver

import (
	"bytes"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// What analyze leaves out of the traces it reads (flows, Python ids)
// changes nothing in its report, on every real trace the repository
// holds.
func TestAnalysesOnlyReportsTheSame(t *testing.T) {
	var paths []string
	root := filepath.Join(testutil.RepoRoot(), "testdata", "traces")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".json") || strings.HasSuffix(path, ".json.gz")) {
			paths = append(paths, path)
		}
		return err
	})
	if len(paths) < 40 {
		t.Fatalf("%d traces in testdata/traces", len(paths))
	}
	ios, _, _, _ := iostreams.Test()
	for _, path := range paths {
		report := func(analysesOnly bool) string {
			res, _, err := Load(ios, []string{path}, analysesOnly)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := Write(&b, Build(res, 0, DefaultOptions()), true); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
		if full, lean := report(false), report(true); lean != full {
			t.Errorf("%s: the report differs when read for the analyses only", path[len(root)+1:])
		}
	}
}
