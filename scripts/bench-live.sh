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
# 3. The agent's CPU time: examples/run/train_cnn.py, CNN_STEPS steps, run
#    under `bottleneck run --no-trace` with the Python sampler off, with
#    it (the default), and with it and --live, in that order REPS times
#    (interleaved); for each run the Python process's CPU time (user +
#    system, all its threads: the program, the sampler, the live feed;
#    OMP_NUM_THREADS=1)
#    when the program's code ended, and bottleneck's with it (the
#    children's rusage of the run: the Go side's polling and drawing
#    too). Prints the medians, --live's ratio to the sampler alone, and
#    what --live adds against what the sampler costs.
#
# Usage: scripts/bench-live.sh [STEPS] [REPS]    (defaults 3000 5)
# Env:   CNN_STEPS (default 1500); PARTS (default "1 2 3": which to run).
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

PARTS=${PARTS:-1 2 3}
CNN_STEPS=${CNN_STEPS:-1500}
part() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

if part 1; then
echo "1. the feed alone:"
"$PY" - "$work" internal/agent/py <<'PYEOF'
import sys, time
work, agent = sys.argv[1], sys.argv[2]
sys.path.insert(0, agent)
import _bottleneck_live as L
import threading
live = L.Live(work, "bench", time.perf_counter())  # its thread not started: on_step alone
# as with the sampler on: each step takes the split's sums
live.attach_sampler(type("FakeSampler", (), {"main_ident": threading.get_ident(), "on_main_sample": None})())
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

# What --live adds to each of the sampler's samples, in thread CPU time:
# Split.on_sample on a 30-frame stack (its instruction classified once,
# then cached; blocked, so the torch.distributed walk runs) and the
# sampler thread's schedstat read (_gil_wait); against a whole sample of
# this process's threads (Sampler.sample_once, main thread 30 frames deep).
import _bottleneck_sampler as S
sampler = S.Sampler(0.02)
split = L.Split()
done = threading.Event()
def deep(k):
    if k:
        return deep(k - 1)
    frames = [(f.f_code, f.f_lineno, f.f_lasti) for f in iter_frames(sys._getframe())]
    tc = time.thread_time
    n, t0 = 0, tc()
    while tc() - t0 < 1.0:
        for _ in range(1000):
            split.on_sample(frames, 0.01, 0.001, 0.02, 0.0)
        n += 1000
    on_sample = (tc() - t0) / n
    m, t0 = 0, tc()
    while tc() - t0 < 1.0:
        for _ in range(1000):
            sampler._gil_wait()
        m += 1000
    gil = (tc() - t0) / m
    k, t0 = 0, tc()
    while tc() - t0 < 1.0:
        for _ in range(100):
            sampler.sample_once()
        k += 100
    sample = (tc() - t0) / k
    print("   the split a sample: on_sample %.2f us + schedstat read %.2f us = %.2f us, %.1f%% of a sample of %.1f us (%d frames)"
          % (on_sample * 1e6, gil * 1e6, (on_sample + gil) * 1e6, 100 * (on_sample + gil) / sample, sample * 1e6, len(frames)))
def iter_frames(f):
    while f is not None:
        yield f
        f = f.f_back
deep(30 - len(list(iter_frames(sys._getframe()))))
PYEOF
fi

if part 2; then
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
fi

if part 3; then
echo "3. the agent's CPU time, train_cnn.py --steps $CNN_STEPS, $REPS rounds of: sampler off, sampler, sampler + --live:"
cat >"$work/cpu.py" <<'PYEOF'
# runs the program given after the log file, then writes this process's
# CPU time (all threads, user + system) to the log
import os, runpy, sys
log = sys.argv[1]
sys.argv = sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    t = os.times()
    with open(log, "w") as f:
        f.write("%.6f\n" % (t[0] + t[1]))
PYEOF
"$PY" - "$work" "$REPS" "$PY" "$CNN_STEPS" examples/run/train_cnn.py <<'PYEOF'
import json, os, resource, statistics, subprocess, sys
# one intra-op thread: OpenMP's threads spin waiting for work, CPU time
# that varied 4x between runs of the same program on a loaded machine
env = dict(os.environ, OMP_NUM_THREADS="1")
work, reps, py, steps, prog = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
kinds = {"off": ["--python-profiler", "off"], "sampler": [], "live": ["--live"]}
cpu = {k: [] for k in kinds}  # the Python process's CPU s
per_sample = {"sampler": [], "live": []}  # the sampler's time a sample, s
total = {k: [] for k in kinds}  # bottleneck's and its children's
for i in range(1, reps + 1):
    for kind, flags in kinds.items():
        log = "%s/cpu-%s-%d" % (work, kind, i)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([work + "/bottleneck", "run", "--python", py, "--no-trace", "--report", "none"] + flags +
                       ["-o", "%s/run-%s-%d" % (work, kind, i), work + "/cpu.py", log, prog, "--steps", steps],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[kind].append(float(open(log).read()))
        if kind in per_sample:
            with open("%s/run-%s-%d/pyprofile-rank0.json" % (work, kind, i)) as f:
                prof = json.load(f)
            per_sample[kind].append(prof["sampling_cost_s"] / max(1, prof["samples"]))
        total[kind].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    print("   round %d: Python process %.2f / %.2f / %.2f s, with bottleneck %.2f / %.2f / %.2f s"
          % ((i,) + tuple(cpu[k][-1] for k in kinds) + tuple(total[k][-1] for k in kinds)))
m = {k: statistics.median(v) for k, v in cpu.items()}
t = {k: statistics.median(v) for k, v in total.items()}
pairs = [l / s for l, s in zip(cpu["live"], cpu["sampler"])]
print("   medians, Python process: off %.2f s, sampler %.2f s, sampler + --live %.2f s; --live / sampler %.3fx"
      " (median of the rounds' ratios %.3fx, from %.3f to %.3f)"
      % (m["off"], m["sampler"], m["live"], m["live"] / m["sampler"], statistics.median(pairs), min(pairs), max(pairs)))
print("   the sampler costs %+.2f s of CPU, --live %+.2f s more" % (m["sampler"] - m["off"], m["live"] - m["sampler"]))
ps = {k: statistics.median(v) for k, v in per_sample.items()}
print("   the sampler's own time a sample (pyprofile sampling_cost_s / samples), medians: %.1f us, with --live's split %.1f us"
      " (%+.1f us, %+.0f%%; runs %s and %s)"
      % (ps["sampler"] * 1e6, ps["live"] * 1e6, (ps["live"] - ps["sampler"]) * 1e6, 100 * (ps["live"] / ps["sampler"] - 1),
         " ".join("%.0f" % (x * 1e6) for x in per_sample["sampler"]), " ".join("%.0f" % (x * 1e6) for x in per_sample["live"])))
print("   medians, with bottleneck: off %.2f s, sampler %.2f s, sampler + --live %.2f s; --live / sampler %.3fx"
      % (t["off"], t["sampler"], t["live"], t["live"] / t["sampler"]))
PYEOF
fi