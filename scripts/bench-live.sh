#!/usr/bin/env bash
# Cost of `bottleneck run --live` to the program (a benchmark, not a test).
#
# 1. The agent's live feed alone: _bottleneck_live.Live.on_step (the only
#    work --live adds to a step; the caller's reads of the step's counters
#    are a few attribute loads more), mean time per step over 2 s of calls;
#    and one snapshot write of 256 steps (done by the feed's own thread
#    every 0.5 s, not by a step).
# 2. End to end: a tiny training step (Linear 64->64, SGD; ~0.1-0.3 ms)
#    run STEPS steps under `bottleneck run --no-trace` without and with
#    --live, alternating, REPS times each; the program times its own steps.
#    Prints the median step of each run and the ratio of the medians of
#    the per-kind medians.
#
# Usage: scripts/bench-live.sh [STEPS] [REPS]    (defaults 3000 5)
# Env:   PYTHON (default $BOTTLENECK_TEST_PYTHON, else .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-3000}
REPS=${2:-5}
PY=${PYTHON:-${BOTTLENECK_TEST_PYTHON:-.venv/bin/python}}
"$PY" -c 'import torch' || { echo "need a Python with torch (PYTHON=...)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/bottleneck" ./cmd/bottleneck

echo "1. the feed alone:"
"$PY" - "$work" internal/agent/py <<'PYEOF'
import sys, time
work, agent = sys.argv[1], sys.argv[2]
sys.path.insert(0, agent)
import _bottleneck_live as L
live = L.Live(work, "bench", time.perf_counter())  # its thread not started: on_step alone
pc = time.perf_counter
n, t0 = 0, pc()
while pc() - t0 < 2.0:
    for _ in range(1000):
        n += 1
        live.on_step(n, pc(), 0.001, 0.0001, 0.0, 700 << 20, None, "waiting", 0, 0.0008, 0.00001, 32)
per = (pc() - t0) / n
# the clock reads of the loop itself, to subtract
m, t1 = 0, pc()
while m < n:
    for _ in range(1000):
        m += 1
        pc()
base = (pc() - t1) / m
w0 = pc()
for _ in range(200):
    live.write()
wr = (pc() - w0) / 200
print("   on_step: %.2f us a step (%.2f us less the loop's own clock read), %d steps; one snapshot write of %d steps: %.0f us"
      % (per * 1e6, (per - base) * 1e6, n, len(live.ring), wr * 1e6))
PYEOF

cat >"$work/tiny.py" <<'PYEOF'
import sys, time
import torch
steps, log = int(sys.argv[1]), sys.argv[2]
torch.set_num_threads(1)
m = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
x = torch.randn(8, 64)
durs = []
for k in range(steps):
    t0 = time.perf_counter()
    opt.zero_grad()
    m(x).sum().backward()
    opt.step()
    durs.append(time.perf_counter() - t0)
with open(log, "w") as f:
    f.write("\n".join("%.9f" % d for d in durs))
PYEOF

echo "2. end to end ($STEPS steps, $REPS runs of each, alternating):"
for i in $(seq 1 "$REPS"); do
  for kind in off live; do
    flag=()
    [ "$kind" = live ] && flag=(--live)
    "$work/bottleneck" run --python "$PY" --no-trace --report none "${flag[@]}" -o "$work/$kind-$i" \
      "$work/tiny.py" "$STEPS" "$work/$kind-$i.log" >/dev/null 2>&1
  done
done
"$PY" - "$work" "$REPS" <<'PYEOF'
import statistics, sys
work, reps = sys.argv[1], int(sys.argv[2])
med = {"off": [], "live": []}
for i in range(1, reps + 1):
    for kind in med:
        d = [float(x) for x in open("%s/%s-%d.log" % (work, kind, i)).read().split()][10:]
        med[kind].append(statistics.median(d))
    print("   run %d: median step %.1f us without --live, %.1f us with (%.3fx)"
          % (i, med["off"][-1] * 1e6, med["live"][-1] * 1e6, med["live"][-1] / med["off"][-1]))
a, b = statistics.median(med["off"]), statistics.median(med["live"])
print("   median of the runs' medians: %.1f us without, %.1f us with --live: %.3fx (%+.1f us a step)"
      % (a * 1e6, b * 1e6, b / a, (b - a) * 1e6))
PYEOF
