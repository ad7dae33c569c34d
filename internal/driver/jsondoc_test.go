package driver

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/iostreams"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
)

// TestJSONHasOnlyDocumentedFields: every field in the JSON report of real
// inputs (a run directory, multi-rank traces) is listed in docs/json.md
// (internal/report's TestJSONDoc checks the list against the Go types).
func TestJSONHasOnlyDocumentedFields(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "docs", "json.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllSubmatch(doc, -1) {
		documented[string(m[1])] = true
	}
	maps := map[string]bool{} // paths documented as maps ("a{}" or "a" of type "object of ...")
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| object of ").FindAllSubmatch(doc, -1) {
		maps[string(m[1])] = true
	}
	opaque := map[string]bool{} // copied from the trace as written: not described further
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| (JSON|any|array of any|object of any) \\|").FindAllSubmatch(doc, -1) {
		opaque[string(m[1])] = true
	}
	for p := range documented {
		if i := strings.Index(p, "{}"); i >= 0 {
			maps[p[:i]] = true
		}
	}
	ios, _, _, _ := iostreams.Test()
	for _, paths := range [][]string{
		{filepath.Join(testutil.RepoRoot(), "testdata", "rundir", "slow_dataset")},
		{filepath.Join(testutil.Traces(t), "hta")},
	} {
		var js bytes.Buffer
		o := DefaultOptions()
		o.JSON = true
		if _, err := Analyze(&js, ios, paths, o); err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(js.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		walkJSON(v, "", maps, opaque, seen)
		for p := range seen {
			if !documented[p] {
				t.Errorf("%v: field %s is not in docs/json.md", paths, p)
			}
		}
		if len(seen) < 100 {
			t.Errorf("%v: only %d fields seen", paths, len(seen))
		}
	}
}

func walkJSON(v any, path string, maps, opaque, seen map[string]bool) {
	if opaque[path] {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		if maps[path] {
			for _, e := range v {
				walkJSON(e, path+"{}", maps, opaque, seen)
			}
			return
		}
		for k, e := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			seen[p] = true
			walkJSON(e, p, maps, opaque, seen)
		}
	case []any:
		for _, e := range v {
			walkJSON(e, path+"[]", maps, opaque, seen)
		}
	}
}
