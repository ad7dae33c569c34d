package jobdir

import (
	"net"
	"strconv"
	"strings"

	"github.com/bottleneck-dev/bottleneck/internal/rundir"
)

// Identify tells a node's rank and job from what its ranks' agents
// recorded of torchrun's environment (GROUP_RANK, GROUP_WORLD_SIZE,
// WORLD_SIZE, TORCHELASTIC_RUN_ID, MASTER_ADDR, MASTER_PORT: exact even
// when the rendezvous assigned the node its rank), else from the
// launcher's own arguments (--node-rank, --nnodes, --nproc-per-node,
// --rdzv-id), which is all a node whose ranks all died early has. The
// master is taken from the environment only: the arguments may name the
// same endpoint differently (a host name, an address), and a mismatch
// would make node 0 set the node aside. run may be nil.
func Identify(run *rundir.Run, launcher []string, host string) Identity {
	id := Identity{Node: -1, Host: host}
	env := func(name string) string {
		if run == nil {
			return ""
		}
		for _, p := range run.Processes {
			if p.Env != nil && p.Env.EnvVars[name] != "" {
				return p.Env.EnvVars[name]
			}
		}
		return ""
	}
	if n, err := strconv.Atoi(env("GROUP_RANK")); err == nil && n >= 0 {
		id.Node = n
	}
	id.Key.Nodes = positive(env("GROUP_WORLD_SIZE"))
	id.Key.WorldSize = positive(env("WORLD_SIZE"))
	id.Key.RunID = env("TORCHELASTIC_RUN_ID")
	if a, p := env("MASTER_ADDR"), env("MASTER_PORT"); a != "" && p != "" {
		id.Key.Master = net.JoinHostPort(a, p)
	}

	a := launcherArgs(launcher)
	if id.Node < 0 {
		if n, err := strconv.Atoi(a["node-rank"]); err == nil && n >= 0 {
			id.Node = n
		}
	}
	nodes := nnodes(a["nnodes"])
	if id.Key.Nodes == 0 {
		id.Key.Nodes = nodes
	}
	if id.Key.WorldSize == 0 && nodes > 0 {
		if per := positive(a["nproc-per-node"]); per > 0 {
			id.Key.WorldSize = nodes * per
		}
	}
	if id.Key.RunID == "" && a["rdzv-id"] != "" {
		id.Key.RunID = a["rdzv-id"]
	}
	// A one-node job needs no rank: it is node 0.
	if id.Node < 0 && id.Key.Nodes == 1 {
		id.Node = 0
	}
	return id
}

// launcherArgs reads torchrun's options (either spelling, --a-b or --a_b,
// "--opt value" or "--opt=value") up to the script: the first argument
// ending in .py, or -m's module.
func launcherArgs(argv []string) map[string]string {
	out := map[string]string{}
	known := map[string]bool{"node-rank": true, "nnodes": true, "nproc-per-node": true, "rdzv-id": true}
	for i := 0; i < len(argv); i++ {
		a := argv[i]
		if strings.HasSuffix(a, ".py") || a == "-m" || a == "--module" {
			break
		}
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		name = strings.ReplaceAll(name, "_", "-")
		if !known[name] {
			continue
		}
		if !hasVal {
			if i+1 >= len(argv) {
				break
			}
			i++
			val = argv[i]
		}
		out[name] = val
	}
	return out
}

// nnodes reads --nnodes: N, or MIN:MAX when both are the same (an
// elastic range leaves the number of nodes unknown).
func nnodes(s string) int {
	lo, hi, isRange := strings.Cut(s, ":")
	if isRange && lo != hi {
		return 0
	}
	return positive(lo)
}

func positive(s string) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		return 0
	}
	return n
}

// MultiNode reports whether a launcher's arguments (torchrun's, up to the
// script) ask for more than one node: --nnodes N with N > 1, or MIN:MAX
// with MAX > 1.
func MultiNode(launcher []string) bool {
	n := launcherArgs(launcher)["nnodes"]
	if _, hi, isRange := strings.Cut(n, ":"); isRange {
		n = hi
	}
	return positive(n) > 1
}
