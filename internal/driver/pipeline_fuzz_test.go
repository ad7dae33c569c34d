package driver_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/driver"
	"github.com/bottleneck-dev/bottleneck/internal/export"
	"github.com/bottleneck-dev/bottleneck/internal/htmlreport"
	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/load"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// FuzzPipeline feeds any input the reader accepts through every analysis
// and every renderer (text, brief, JSON, HTML data, each export format):
// none may panic or hang, and the JSON outputs must be valid. The seeds are
// the reader's fixtures; scripts/fuzz runs it for minutes.
func FuzzPipeline(f *testing.F) {
	files, _ := filepath.Glob("../kineto/testdata/*.txtar")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		for _, body := range txtarTraces(data) {
			f.Add(body)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := kineto.Read(bytes.NewReader(data), "fuzz.json", kineto.Options{Workers: 1})
		if err != nil || tr == nil {
			return
		}
		if err := tr.Validate(); err != nil {
			t.Fatalf("model invariants: %v", err)
		}
		r := driver.Build(&load.Result{Traces: []*trace.Trace{tr}}, 0, driver.Options{Rank: -1})
		if err := report.WriteText(io.Discard, r); err != nil {
			t.Fatalf("text: %v", err)
		}
		report.WriteBrief(io.Discard, r, report.TerminalWidth)
		var js bytes.Buffer
		if err := driver.Write(&js, r, true); err != nil || !json.Valid(js.Bytes()) {
			t.Fatalf("JSON report: %v (valid %v)", err, json.Valid(js.Bytes()))
		}
		d := htmlreport.Build(htmlreport.Input{Report: r, Traces: []*trace.Trace{tr}}, htmlreport.Options{})
		if b, err := htmlreport.MarshalData(d); err != nil || !json.Valid(b) {
			t.Fatalf("HTML data: %v", err)
		}
		in := &export.Input{Traces: []*trace.Trace{tr}, Report: r}
		for _, format := range export.Formats {
			// a format may refuse an input (no stacks to fold); it must not panic
			_ = export.Generate(io.Discard, in, export.Options{Format: format, Table: "ops"})
		}
	})
}

// txtarTraces returns the trace.json sections of a txtar fixture.
func txtarTraces(data []byte) [][]byte {
	var out [][]byte
	parts := bytes.Split(append([]byte("\n"), data...), []byte("\n-- "))
	for _, p := range parts[1:] {
		name, body, ok := bytes.Cut(p, []byte(" --\n"))
		if ok && string(name) == "trace.json" {
			out = append(out, body)
		}
	}
	return out
}
