package critpath_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/analysis/critpath"
	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/report"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

var update = flag.Bool("update", false, "rewrite golden files")

const shared = "../../../../shared/traces"

func load(t *testing.T, rel string) *trace.Trace {
	t.Helper()
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("shared traces not found at %s (run next to ../shared): %v", shared, err)
	}
	tr, err := kineto.ReadFile(filepath.Join(shared, rel), kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func fixture(t *testing.T, js string) *trace.Trace {
	t.Helper()
	tr, err := kineto.Read(strings.NewReader(js), "fixture.json", kineto.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func golden(t *testing.T, name string, r *critpath.Result) {
	t.Helper()
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var txt bytes.Buffer
	if err := report.WriteCritPath(&txt, r); err != nil {
		t.Fatal(err)
	}
	for ext, got := range map[string][]byte{".json": append(js, '\n'), ".txt": txt.Bytes()} {
		p := filepath.Join("testdata", name+ext)
		if *update {
			if err := os.WriteFile(p, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from golden:\n%s", p, got)
		}
	}
}

const simpleAdd = "hta/critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz"

// The known value HTA's own test asserts.
func TestSimpleAddKnownValue(t *testing.T) {
	tr := load(t, simpleAdd)
	r := critpath.Compute(tr, critpath.Options{Annotation: "[param|pytorch.model.alex_net|0|0|0|measure|forward]", Instance: 1})
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if r.PathNodes != 315 {
		t.Errorf("critical path has %d nodes, HTA finds 315", r.PathNodes)
	}
	golden(t, "simple_add_forward_1", r)
}

func TestGolden(t *testing.T) {
	for name, c := range map[string]struct {
		rel string
		opt critpath.Options
	}{
		"alexnet":       {"hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", critpath.Options{}},
		"ns_resolution": {"hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", critpath.Options{}},
		"event_sync":    {"hta/critical_path/cuda_event_sync/event_sync_trace.json.gz", critpath.Options{}},
	} {
		t.Run(name, func(t *testing.T) {
			golden(t, name, critpath.Compute(load(t, c.rel), c.opt))
		})
	}
}
