#!/usr/bin/env bash
# Overhead of `bottleneck run` on a training script (a benchmark, not a test).
#
# Runs examples/run/train_cnn.py REPS times plainly and REPS times under
# `bottleneck run` (default settings: sampler every 20 ms (5 ms in the window), skip-first 5,
# warmup 2, active 5), alternating, in this one invocation, and prints:
#   - whole run: wall-time ratio of the fastest run of each kind, start-up,
#     torch import, trace export and report included;
#   - outside the window: ratio of the median (and of the summed) step
#     times over the same steps in both runs, leaving out the first 5 steps and the steps from
#     the profiler's warm-up to the step after the trace was written.
#
# Usage: scripts/bench-run-overhead.sh [STEPS] [REPS]    (defaults 400 5)
# Env:   PYTHON (default $BOTTLENECK_TEST_PYTHON, else .venv/bin/python),
#        BENCH_ARGS (extra train_cnn.py arguments, e.g. "--size 64").
set -euo pipefail
cd "$(dirname "$0")/.."
STEPS=${1:-400}
REPS=${2:-5}
PY=${PYTHON:-${BOTTLENECK_TEST_PYTHON:-.venv/bin/python}}
"$PY" -c 'import torch' || { echo "need a Python with torch (PYTHON=...)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/bottleneck" ./cmd/bottleneck
SCRIPT=examples/run/train_cnn.py
ARGS=(--steps "$STEPS" --batch-size 16 ${BENCH_ARGS:-})

now() { date +%s.%N; }
for i in $(seq 1 "$REPS"); do
  t0=$(now)
  "$PY" "$SCRIPT" "${ARGS[@]}" --log "$work/plain-$i.log" >/dev/null
  t1=$(now)
  "$work/bottleneck" run --python "$PY" --report none -o "$work/run-$i" \
    "$SCRIPT" "${ARGS[@]}" --log "$work/bn-$i.log" >/dev/null 2>"$work/bn-$i.err"
  t2=$(now)
  echo "$i $t0 $t1 $t2" >>"$work/wall.txt"
done

"$PY" - "$work" "$REPS" "$STEPS" <<'PYEOF'
import json, os, statistics, sys
work, reps, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])

def steps_of(path):
    d = {}
    for line in open(path):
        i, _, dur = line.split()
        d[int(i)] = float(dur)
    return d

whole, outside, outside_med, inside = [], [], [], []
walls = []
for i in range(1, reps + 1):
    t0, t1, t2 = map(float, open(os.path.join(work, "wall.txt")).read().splitlines()[i - 1].split()[1:])
    walls.append((t1 - t0, t2 - t1))
    whole.append((t2 - t1) / (t1 - t0))
    ev = json.load(open(os.path.join(work, "run-%d" % i, "evidence-rank0.json")))
    sched = ev["profiler"]["schedule"]
    win = [s for w in ev["profiler"]["windows"] for s in w["steps"]]
    # agent step k ends at the k-th optimizer step after the first, i.e.
    # it is loop iteration k of the program (0-based)
    lo = min(win) - sched["warmup"] - 1 if win else steps
    hi = max(win) + 2 if win else steps
    p, b = steps_of(os.path.join(work, "plain-%d.log" % i)), steps_of(os.path.join(work, "bn-%d.log" % i))
    keep = [k for k in p if k >= 5 and not (lo <= k <= hi) and k in b]
    inwin = [k for k in p if lo <= k <= hi and k in b]
    outside.append(sum(b[k] for k in keep) / sum(p[k] for k in keep))
    outside_med.append(statistics.median(b[k] for k in keep) / statistics.median(p[k] for k in keep))
    inside.append(sum(b[k] for k in inwin) / max(sum(p[k] for k in inwin), 1e-9))
    print("rep %d: plain %.2fs, bottleneck run %.2fs (whole %.3fx); outside window: summed steps %.3fx, "
          "median step %.3fx (%d steps); window incl. warm-up and export %.2fx (%d steps)"
          % (i, t1 - t0, t2 - t1, whole[-1], outside[-1], outside_med[-1], len(keep), inside[-1], len(inwin)))
print("summary over %d reps (the least disturbed run of each kind for wall time; medians of per-rep ratios for steps):" % reps)
print("  whole run: %.3fx (min wall: plain %.2fs, bottleneck run %.2fs)"
      % (min(w[1] for w in walls) / min(w[0] for w in walls), min(w[0] for w in walls), min(w[1] for w in walls)))
print("  outside the recording window: median step %.3fx, summed steps %.3fx"
      % (statistics.median(outside_med), statistics.median(outside)))
PYEOF
