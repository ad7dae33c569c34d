package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/breakdown"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/idle"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/launch"
	"github.com/bottleneck-dev/bottleneck/internal/analysis/syncs"
	"github.com/bottleneck-dev/bottleneck/internal/testutil/tracetest"
)

// WriteJSON writes what json.Encoder writes with a two-space indent, on
// the edge cases of its layout and on a whole report.
func TestWriteJSONIsTheEncoders(t *testing.T) {
	values := []any{
		map[string]any{},
		[]any{},
		map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{1, []any{}, map[string]any{"d": nil}}},
		[]string{`quote " inside`, `back\slash`, `brackets {[ ]} , : in text`, "tab\tand\nnewline", `<html> & "\u2028"`, `ends with \`},
		map[string]any{`key "with" {braces}`: `value: [1, 2]`},
		3.5, "plain", nil, true,
	}
	for _, rel := range tracetest.Golden { // analyses of real traces
		tr := tracetest.Load(t, rel)
		br, err := breakdown.Compute(tr, breakdown.Options{})
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, []any{br, idle.Compute(tr, idle.Options{}), launch.Compute(tr, launch.Options{}), syncs.Compute(tr, syncs.Options{})})
	}
	for i, v := range values {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := WriteJSON(&got, v); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("value %d: WriteJSON wrote\n%s\nthe encoder\n%s", i, got.String(), want.String())
		}
	}
}

// The output goes out in chunks as it is made, not as one write of the
// whole document.
func TestWriteJSONStreams(t *testing.T) {
	long := make([]string, 20000)
	for i := range long {
		long[i] = strings.Repeat("x", 10)
	}
	var w countingWriter
	if err := WriteJSON(&w, long); err != nil {
		t.Fatal(err)
	}
	if w.writes < 4 || w.largest > 70<<10 {
		t.Errorf("%d bytes in %d writes, the largest %d bytes: want chunks of about 64 KiB", w.bytes, w.writes, w.largest)
	}
}

type countingWriter struct{ writes, bytes, largest int }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	c.bytes += len(p)
	c.largest = max(c.largest, len(p))
	return len(p), nil
}
