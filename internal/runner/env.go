package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/bottleneck-dev/bottleneck/internal/atomicfile"
	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// collectHost gathers what only the host can tell: the GPU driver from
// nvidia-smi (when present). It never fails; missing tools leave fields out.
func collectHost(ctx context.Context) map[string]any {
	h := map[string]any{"os": runtime.GOOS, "arch": runtime.GOARCH, "num_cpu": runtime.NumCPU()}
	if p, err := exec.LookPath("nvidia-smi"); err == nil {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(c, p, "--query-gpu=index,name,driver_version,memory.total",
			"--format=csv,noheader").Output()
		if err == nil {
			var gpus []map[string]string
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Split(line, ",")
				if len(f) < 4 {
					continue
				}
				gpus = append(gpus, map[string]string{"index": strings.TrimSpace(f[0]), "name": strings.TrimSpace(f[1]),
					"driver_version": strings.TrimSpace(f[2]), "memory_total": strings.TrimSpace(f[3])})
			}
			h["nvidia_smi"] = gpus
		} else {
			h["nvidia_smi_error"] = err.Error()
		}
	}
	return h
}

// writeEnvSummary merges the agent's env-<tag>.json files with the host
// information into env.json:
//
//	{"format": "bottleneck.env-summary", "version": 1, "host": {...},
//	 "processes": {"rank0": <env-rank0.json>, ...}}
func writeEnvSummary(dir string, host map[string]any) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	procs := map[string]json.RawMessage{}
	var tags []string
	for _, e := range ents {
		kind, tag := rundir.FileKind(e.Name())
		if kind != rundir.KindProcessEnv {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || !json.Valid(b) {
			continue
		}
		procs[tag] = b
		tags = append(tags, tag)
	}
	sort.Strings(tags)
	out := map[string]any{"format": "bottleneck.env-summary", "version": 1, "host": host, "processes": procs}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, rundir.EnvName), append(b, '\n'))
}
