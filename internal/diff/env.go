package diff

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/runreport"
)

// envIgnored are environment keys that differ between any two runs and
// explain nothing: the interpreter's path, the rendezvous port a launcher
// picks at random.
var envIgnored = []string{"python.executable", "host.nvidia_smi_error", "env.MASTER_PORT"}

// envDiffs lists the environment settings (the first process's env file:
// versions, flags, threads, devices, environment variables, packages; and
// the host's driver) that differ between two run directories.
func envDiffs(a, b *runreport.Report) []EnvDiff {
	if a == nil || b == nil {
		return nil
	}
	fa, fb := flatEnv(a), flatEnv(b)
	var out []EnvDiff
	for _, k := range unionKeys(fa, fb) {
		if fa[k] != fb[k] && !slices.Contains(envIgnored, k) {
			out = append(out, EnvDiff{Key: k, Base: orMissing(fa[k]), New: orMissing(fb[k])})
		}
	}
	return out
}

func orMissing(s string) string {
	if s == "" {
		return "(not set)"
	}
	return s
}

func flatEnv(r *runreport.Report) map[string]string {
	out := map[string]string{}
	for _, p := range r.Processes {
		if p.Env != nil {
			flatten("", toAny(p.Env), out)
			break
		}
	}
	flatten("host", toAny(r.Host), out)
	return out
}

// toAny turns a struct into maps and slices by its JSON form.
func toAny(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func flatten(prefix string, v any, out map[string]string) {
	key := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			flatten(key(k), x[k], out)
		}
	case []any:
		for i, e := range x {
			flatten(key(fmt.Sprint(i)), e, out)
		}
	case nil:
	default:
		out[prefix] = strings.TrimSpace(fmt.Sprint(x))
	}
}
