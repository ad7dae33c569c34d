package testutil

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Update is the -update flag: tests rewrite their golden files (and
// internal/kineto's the -- expect -- sections of its txtar fixtures)
// instead of comparing them. It is defined here, once per test binary, so
// a test package that imports testutil must not define its own. Setting
// BOTTLENECK_UPDATE=1 does the same for every package at once
// (`go test ./... -update` fails in packages that have no such flag).
var Update = flag.Bool("update", os.Getenv("BOTTLENECK_UPDATE") == "1", "rewrite golden files instead of comparing them")

// Compare checks got against testdata/<name>, or rewrites it with -update.
func Compare(t testing.TB, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *Update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file (run go test -update after checking):\n%s", p, firstDiff(string(want), string(got)))
	}
}

// CompareResult checks an analysis result against its two golden files:
// testdata/<name>.json (JSON) and testdata/<name>.txt (rendered by write).
func CompareResult[R any](t testing.TB, name string, r R, write func(io.Writer, R) error) {
	t.Helper()
	Compare(t, name+".json", JSON(t, r))
	var txt bytes.Buffer
	if err := write(&txt, r); err != nil {
		t.Fatal(err)
	}
	Compare(t, name+".txt", txt.Bytes())
}

// JSON renders v as indented JSON for golden files.
func JSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + w + "\n  got:  " + g
		}
	}
	return "(no line differs)"
}
