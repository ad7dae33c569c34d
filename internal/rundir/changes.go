package rundir

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// ChangeKind is a change the agent can make to a program at run time,
// without editing it (AgentConfig.Set; bottleneck try, run --verify). The
// agent applies each in one place (internal/agent/py/_bottleneck_changes.py)
// and records where it took effect (Evidence.Changes).
type ChangeKind struct {
	Name string
	// Value says what the value is: "N" (a positive integer), "bool", or
	// "bool|frozen": true, false, or frozen (the models whose first call
	// ran with gradients off only).
	Value string
	// Numerics: the change alters the program's numbers (TF32 matmuls):
	// tried only when asked for by name, never by run --verify alone.
	Numerics bool
	// What says what it does, for help and docs.
	What string
}

// ChangeKinds are the changes the agent supports, in help order.
var ChangeKinds = []ChangeKind{
	{"num_workers", "N", false, "every DataLoader's num_workers (worker processes loading batches)"},
	{"pin_memory", "bool", false, "every DataLoader's pin_memory"},
	{"persistent_workers", "bool", false, "every DataLoader's persistent_workers (with workers)"},
	{"prefetch_factor", "N", false, "every DataLoader's prefetch_factor (with workers)"},
	{"threads", "N", false, "torch.set_num_threads(N) at start; the program's own calls are held at N"},
	{"interop_threads", "N", false, "torch.set_num_interop_threads(N) at start"},
	{"cudnn_benchmark", "bool", false, "torch.backends.cudnn.benchmark, held against the program's own setting"},
	{"tf32", "bool", true, "TF32 matmuls and convolutions (torch.backends.cuda.matmul.allow_tf32, cudnn.allow_tf32)"},
	{"fused_optimizer", "bool", false, "fused=True for the optimizers that have it (Adam, AdamW, SGD, Adagrad)"},
	{"foreach_optimizer", "bool", false, "foreach=True for the optimizers that have it"},
	{"gc_freeze", "bool", false, "gc.freeze() after the first step: the set-up's objects leave the collector's scans"},
	{"gc_threshold", "N", false, "gc.set_threshold(N): generation 0 collected every N allocations"},
	{"channels_last", "bool|frozen", false, "every model with 2-D convolutions in channels_last (its weights; their outputs follow), from its first call; frozen: only those first called with gradients off (torch.no_grad, inference_mode)"},
	{"bf16_autocast", "bool|frozen", true, "every model's forward under bf16 autocast on its device (its bfloat16 outputs handed back as float32), from its second call; frozen: only the models first called with gradients off (a distillation's teacher)"},
	{"thp_alloc", "bool", false, "THP_MEM_ALLOC_ENABLE in the program's environment: torch's CPU allocator asks for 2 MB pages for tensors of 2 MB or more (with transparent huge pages madvise or always)"},
	{"malloc_reuse", "bool", false, "MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ (4 GiB) in the program's environment: glibc's allocator serves large allocations from its heap and keeps freed memory for reuse, not mapped afresh and zeroed again (the resident memory stays near its peak)"},
	{"omp_passive", "bool", false, "OMP_WAIT_POLICY=PASSIVE in the program's environment: torch's OpenMP threads sleep while they wait for work, not spin on a CPU (the OpenMP runtime reads it when torch loads it)"},
}

// MallocReuseEnv is what malloc_reuse=true puts in the program's
// environment (the agent's _bottleneck_changes.MALLOC_REUSE checks it):
// allocations up to 4 GiB come from glibc's heap, which is never trimmed.
var MallocReuseEnv = []string{"MALLOC_MMAP_THRESHOLD_=4294967296", "MALLOC_TRIM_THRESHOLD_=4294967296"}

// OMPPassiveEnv is what omp_passive=true puts in the program's environment
// (the agent's _bottleneck_changes.OMP_PASSIVE checks it).
const OMPPassiveEnv = "OMP_WAIT_POLICY=PASSIVE"

// ParseChange reads one NAME=VALUE change and checks the name and value
// against ChangeKinds.
func ParseChange(s string) (name, value string, err error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" || value == "" {
		return "", "", fmt.Errorf("%q: want NAME=VALUE", s)
	}
	k, ok := ChangeKindOf(name)
	if !ok {
		names := make([]string, len(ChangeKinds))
		for i, k := range ChangeKinds {
			names[i] = k.Name
		}
		return "", "", fmt.Errorf("%q: no such change (one of %s)", name, strings.Join(names, ", "))
	}
	switch k.Value {
	case "N":
		if n, err := strconv.Atoi(value); err != nil || n < 0 || k.Name != "num_workers" && n == 0 {
			return "", "", fmt.Errorf("%s=%s: want a count", name, value)
		}
	case "bool", "bool|frozen":
		if k.Value == "bool|frozen" && strings.EqualFold(value, "frozen") {
			value = "frozen"
			break
		}
		b, err := strconv.ParseBool(value)
		if err != nil {
			want := "true or false"
			if k.Value == "bool|frozen" {
				want = "true, false or frozen"
			}
			return "", "", fmt.Errorf("%s=%s: want %s", name, value, want)
		}
		value = strconv.FormatBool(b)
	}
	return name, value, nil
}

// ChangeKindOf finds a change by name.
func ChangeKindOf(name string) (ChangeKind, bool) {
	for _, k := range ChangeKinds {
		if k.Name == name {
			return k, true
		}
	}
	return ChangeKind{}, false
}

// TriedWhat says what a tried change is: NAME=VALUE,... (FormatChanges),
// or, for the program's own options (args), those arguments.
func TriedWhat(set map[string]string, args []string) string {
	if len(set) == 0 && len(args) > 0 {
		return strings.Join(args, " ") + " (the program's own option)"
	}
	return FormatChanges(set)
}

// FormatChanges writes changes as NAME=VALUE,... in name order (as --set
// takes them).
func FormatChanges(set map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(set)) {
		parts = append(parts, k+"="+set[k])
	}
	return strings.Join(parts, ",")
}
