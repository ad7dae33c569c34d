// Package tracetest reads traces for tests: the shared real traces beside
// the repository (once per test binary, skipping when they are absent) and
// small fixtures given as JSON text. It is apart from testutil
// because it imports internal/kineto, whose own tests use testutil.
package tracetest

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/bottleneck-dev/bottleneck/internal/kineto"
	"github.com/bottleneck-dev/bottleneck/internal/testutil"
	"github.com/bottleneck-dev/bottleneck/internal/trace"
)

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

// Load reads a shared trace (path relative to the shared traces folder,
// possibly a glob: its first match), once per test binary. It skips when
// the folder or file is absent.
func Load(t testing.TB, rel string) *trace.Trace {
	t.Helper()
	dir := testutil.Traces(t)
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

// ReadString parses a trace given as JSON text.
func ReadString(t testing.TB, js string) *trace.Trace {
	t.Helper()
	tr, err := kineto.Read(strings.NewReader(js), "fixture.json", kineto.Options{})
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return tr
}
