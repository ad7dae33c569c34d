// Package testkit helps the analyses' tests: it finds the shared real
// traces (../shared/traces next to the repository), reads them once per
// test binary, and compares golden files rewritten with -update.
package testkit

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

// Update rewrites golden files instead of comparing them.
var Update = flag.Bool("update", false, "rewrite golden files")

// SharedDir returns ../shared/traces relative to the repository root, or
// skips the test when it is absent (a fresh clone).
func SharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(filepath.Dir(d), "shared", "traces")
			if _, err := os.Stat(p); err != nil {
				t.Skipf("shared traces not found at %s: skipping tests on real traces", p)
			}
			return p
		}
		if filepath.Dir(d) == d {
			t.Skip("repository root not found")
		}
	}
}

// Golden lists the shared traces every analysis keeps golden output for,
// by short name.
var Golden = map[string]string{
	"ns_resolution":  "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
	"negative_queue": "hta/negative_queue_length_values_check/rank0.json.gz",
	"nccl_data":      "hta/nccl_parser_config/nccl_data.json.gz",
	"control":        "hta/trace_diff/control/control.json.gz",
	"test":           "hta/trace_diff/test/test.json.gz",
	"sampled_rank0":  "hta/trace_filter/sampled_rank-0.json.gz",
	"sampled_rank1":  "hta/trace_filter/sampled_rank-1.json.gz",
	"df_index":       "hta/df_index_resolver/df_index_resolver.json.gz",
	"alexnet":        "hta/critical_path/alexnet/*_trace.json.gz",
	"amd":            "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
	"triton":         "hta/triton_example/triton_example.json.gz",
	"cpu_only":       "hta/cpu_only/rank-34.*.pt.trace.json.gz",
	"h100_qwen":      "tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
	"mi210_gpu_only": "tracelens/mi210/gpu_only_trace.json.gz",
}

var (
	mu    sync.Mutex
	cache = map[string]*trace.Trace{}
)

// Load reads a shared trace (path relative to the shared traces folder),
// once per test binary. It skips when the folder or file is absent.
func Load(t testing.TB, rel string) *trace.Trace {
	t.Helper()
	dir := SharedDir(t)
	mu.Lock()
	defer mu.Unlock()
	if tr, ok := cache[rel]; ok {
		return tr
	}
	p := filepath.Join(dir, rel)
	if strings.ContainsAny(rel, "*?") {
		m, _ := filepath.Glob(p)
		if len(m) == 0 {
			t.Skipf("no trace matches %s", p)
		}
		p = m[0]
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("trace %s absent", p)
	}
	tr, err := kineto.ReadFile(p, kineto.Options{})
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	cache[rel] = tr
	return tr
}

// Read parses a small hand-written trace fixture.
func Read(t testing.TB, path string) *trace.Trace {
	t.Helper()
	tr, err := kineto.ReadFile(path, kineto.Options{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tr
}

// ReadString parses a trace given as JSON text.
func ReadString(t testing.TB, js string) *trace.Trace {
	t.Helper()
	tr, err := kineto.Read(strings.NewReader(js), "fixture.json", kineto.Options{})
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return tr
}

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
			return "line " + itoa(i+1) + ":\n  want: " + w + "\n  got:  " + g
		}
	}
	return "(no line differs)"
}

func itoa(i int) string {
	var b [20]byte
	p := len(b)
	for {
		p--
		b[p] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[p:])
		}
	}
}
