#!/usr/bin/env bash
# Overhead of `bottleneck run` on a training script (a benchmark, not a test).
#
# Runs examples/run/train_cnn.py in PAIRS interleaved pairs: plainly and
# under `bottleneck run` (default settings: sampler every 20 ms (5 ms in the
# window), skip-first 5, warmup 2, active 5, lengthened to --min-window
# 200ms), the plain run first in odd pairs and second in even ones, so that
# a drift of the machine's load favours neither. Prints, per pair and as
# the median and range (min-max) over the pairs:
#   - whole run: wall-time ratio, start-up, torch import, trace export and
#     report included;
#   - outside the window: ratio of the median step time over the same steps
#     of both runs, leaving out the first 5 steps and the steps from the
#     profiler's warm-up to the step after the trace was written;
#   - CPU time: the Python process's (user + system, all threads) and,
#     under `bottleneck run`, its main thread's and its other threads' (the
#     agent's sampler and window-bounds threads; --threads 1 keeps torch's
#     intra-op pool out), read from /proc/self/task/*/schedstat when the
#     program's code ended; the whole process tree's (bottleneck's Go side
#     and its report included) from wait4's rusage;
#   - garbage collections (gc.get_stats) and their pauses, timed the same
#     way in both runs;
#   - the load average before and after.
#
# Usage: scripts/bench-run-overhead.sh [STEPS] [PAIRS]   (defaults 400 5)
#        MODE=long scripts/bench-run-overhead.sh          (the 20-40 s
#          single-threaded runs of issue 35: --threads 1, 8000 steps,
#          ~4 ms each on the 2-core development machine)
#        MODE=ab scripts/bench-run-overhead.sh [STEPS] [RUNS]  (defaults
#          8000 1: the agent's cost inside one run, where two processes'
#          speeds differ by more than it: BOTTLENECK_AB_BLOCK=BLOCK (default
#          50) switches the agent's work at the step boundaries and its
#          sampler off for every other block of steps (--no-trace, so no
#          profiler window; --threads 1); prints the ratio of the median
#          step with the agent on to that with it off, over the whole run
#          and, median and quartiles, of each block off against the mean
#          of the two blocks on around it (a drift cancels). The hooks that count
#          the steps stay on in both: this is the agent's cost above them,
#          measured apart at ~11 us a step (docs/run.md, "Overhead").)
# Env:   PYTHON (default $BOTTLENECK_TEST_PYTHON, else .venv/bin/python),
#        BENCH_ARGS (extra train_cnn.py arguments, e.g. "--size 64"),
#        BN_ARGS (extra `bottleneck run` flags, e.g. "--no-trace" or
#        "--python-profiler off", to find what costs),
#        BIN (a bottleneck binary built beforehand, for a machine without Go).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${MODE:-short}
case $MODE in
  short) STEPS=${1:-400}; EXTRA=() ;;
  long|ab) STEPS=${1:-8000}; EXTRA=(--threads 1) ;;
  *) echo "MODE is short, long or ab" >&2; exit 2 ;;
esac
PAIRS=${2:-5}
PY=${PYTHON:-${BOTTLENECK_TEST_PYTHON:-.venv/bin/python}}
"$PY" -c 'import torch' || { echo "need a Python with torch (PYTHON=...)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "${BIN:-}" ]; then cp "$BIN" "$work/bottleneck"; else go build -o "$work/bottleneck" ./cmd/bottleneck; fi

if [ "$MODE" = ab ]; then
  "$PY" - "$work" "${2:-1}" "${BLOCK:-50}" "$PY" ${BN_ARGS:-} -- examples/run/train_cnn.py --steps "$STEPS" --batch-size 16 \
    "${EXTRA[@]}" ${BENCH_ARGS:-} <<'PYEOF'
import glob, json, os, statistics, subprocess, sys
work, runs, block, py = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
bn_args, prog = sys.argv[5:sys.argv.index("--")], sys.argv[sys.argv.index("--") + 1:]
load = lambda: open("/proc/loadavg").read().split()[0]
print("ab mode: %s, %d run(s), blocks of %d steps, bottleneck run flags: --no-trace %s (load average before: %s)"
      % (" ".join(prog), runs, block, " ".join(bn_args), load()))
for i in range(1, runs + 1):
    out = "%s/ab-%d" % (work, i)
    subprocess.run([work + "/bottleneck", "run", "--no-trace", "--report", "none", "--python", py, "-o", out] + bn_args + prog,
                   env=dict(os.environ, BOTTLENECK_AB_BLOCK=str(block)), stdout=subprocess.DEVNULL, check=True)
    ab = json.load(open(glob.glob(out + "/overhead-ab-*.json")[0]))
    blocks = {}
    for state in ("on", "off"):
        for n, dur in ab[state]:
            b = (n - 1) // block  # step n ran after boundary n-1, in block (n-1) // block
            if (n - 1) % block >= 2:  # the first two steps of a block settle after the switch
                blocks.setdefault(b, (state, []))[1].append(dur)
    # each block with the agent off against the mean of the blocks on
    # either side, on: a drift of the steps' speed over the run (the
    # allocator and collector settling) cancels to first order
    ratios = []
    for b in sorted(blocks):
        state, durs = blocks[b]
        if b >= 3 and state == "off" and blocks.get(b - 1, ("",))[0] == blocks.get(b + 1, ("",))[0] == "on":
            around = (statistics.median(blocks[b - 1][1]) + statistics.median(blocks[b + 1][1])) / 2
            ratios.append(around / statistics.median(durs))
    on = [d for b, (st, ds) in blocks.items() if st == "on" and b >= 2 for d in ds]
    off = [d for b, (st, ds) in blocks.items() if st == "off" and b >= 2 for d in ds]
    q = statistics.quantiles(ratios, n=4)
    print("run %d (load %s): median step with the agent on %.3f ms, off %.3f ms: %.4fx; over %d blocks off against "
          "the blocks on around them, median %.4fx (quartiles %.4f-%.4f, %d of %d slower on)"
          % (i, load(), statistics.median(on) * 1e3, statistics.median(off) * 1e3,
             statistics.median(on) / statistics.median(off), len(ratios), statistics.median(ratios), q[0], q[2],
             sum(r > 1 for r in ratios), len(ratios)))
PYEOF
  exit
fi

# Runs the program given after the output file as __main__, then writes
# this process's CPU time per thread and its garbage collections. The same
# wrapper runs in both kinds of run.
cat >"$work/measure.py" <<'PYEOF'
import gc, json, os, runpy, sys, time
out = sys.argv[1]
sys.argv = sys.argv[2:]
pause = [0.0, None]

def on_gc(phase, info, clock=time.perf_counter):
    if phase == "start":
        pause[1] = clock()
    elif pause[1] is not None:
        pause[0] += clock() - pause[1]

gc.callbacks.append(on_gc)
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    threads = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                run_ns, wait_ns = f.read().split()[:2]
            threads[tid] = [int(run_ns) / 1e9, int(wait_ns) / 1e9]
        except (OSError, ValueError):
            pass
    t = os.times()
    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "cpu_s": t[0] + t[1], "threads": threads, "gc_pause_s": pause[0],
                   "gc": [s["collections"] for s in gc.get_stats()]}, f)
PYEOF

"$PY" - "$work" "$PAIRS" "$PY" "$MODE" "$STEPS" ${BN_ARGS:-} -- examples/run/train_cnn.py \
  --steps "$STEPS" --batch-size 16 "${EXTRA[@]}" ${BENCH_ARGS:-} <<'PYEOF'
import json, os, statistics, subprocess, sys, time
work, pairs, py, mode, steps = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
rest = sys.argv[6:]
bn_args, prog = rest[:rest.index("--")], rest[rest.index("--") + 1:]

def loadavg():
    return open("/proc/loadavg").read().split()[0]

def run(kind, i):
    log, meas = "%s/%s-%d.log" % (work, kind, i), "%s/%s-%d.json" % (work, kind, i)
    cmd = [py, work + "/measure.py", meas] + prog + ["--log", log]
    if kind == "bn":
        cmd = [work + "/bottleneck", "run", "--python", py, "--report", "none", "-o", "%s/run-%d" % (work, i)] \
            + bn_args + cmd[1:]
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open("%s/%s-%d.err" % (work, kind, i), "w"))
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit("%s run %d failed (%s): %s" % (kind, i, status, open("%s/%s-%d.err" % (work, kind, i)).read()[-2000:]))
    m = json.load(open(meas))
    steps = {}
    for line in open(log):
        k, _, dur = line.split()
        steps[int(k)] = float(dur)
    return {"wall": wall, "tree_cpu": ru.ru_utime + ru.ru_stime, "steps": steps, "m": m}

def sampler_cost(i):
    """(samples, the sampler's own seconds) from the run's Python profile."""
    try:
        prof = json.load(open("%s/run-%d/pyprofile-rank0.json" % (work, i)))
        return prof.get("samples") or 0, prof.get("sampling_cost_s") or 0.0
    except (OSError, ValueError):
        return 0, 0.0

def window_bounds(i, nsteps):
    ev = json.load(open("%s/run-%d/evidence-rank0.json" % (work, i)))
    prof = ev.get("profiler") or {}
    win = [s for w in prof.get("windows") or [] for s in w["steps"]]
    if not win:
        return nsteps, nsteps, 0
    # agent step k ends at the k-th optimizer step after the first, i.e. it
    # is loop iteration k of the program (0-based)
    return min(win) - prof["schedule"]["warmup"] - 1, max(win) + 2, len(win)

print("%s mode: %s, %d pairs (load average before: %s); bottleneck run flags: %s"
      % (mode, " ".join(prog), pairs, loadavg(), " ".join(bn_args) or "(defaults)"))
rows = []
for i in range(1, pairs + 1):
    order = ("plain", "bn") if i % 2 else ("bn", "plain")
    r = {kind: run(kind, i) for kind in order}
    p, b = r["plain"], r["bn"]
    lo, hi, nwin = window_bounds(i, len(p["steps"]))
    keep = [k for k in p["steps"] if k >= 5 and not (lo <= k <= hi) and k in b["steps"]]
    medstep = lambda s: statistics.median(s[k] for k in keep)
    main_tid = str(b["m"]["pid"])
    bth = b["m"]["threads"]
    row = {
        "whole": b["wall"] / p["wall"], "step": medstep(b["steps"]) / medstep(p["steps"]),
        "cpu": b["m"]["cpu_s"] / p["m"]["cpu_s"], "tree_cpu": b["tree_cpu"] / p["tree_cpu"],
        "main_cpu": bth.get(main_tid, [0, 0])[0], "plain_main_cpu": p["m"]["threads"].get(str(p["m"]["pid"]), [0, 0])[0],
        "other_cpu": sum(v[0] for t, v in bth.items() if t != main_tid),
        "plain_other_cpu": sum(v[0] for t, v in p["m"]["threads"].items() if t != str(p["m"]["pid"])),
        "main_wait": bth.get(main_tid, [0, 0])[1], "plain_main_wait": p["m"]["threads"].get(str(p["m"]["pid"]), [0, 0])[1],
        "gc": (p["m"]["gc"], b["m"]["gc"]), "gc_pause": (p["m"]["gc_pause_s"], b["m"]["gc_pause_s"]),
        "plain_wall": p["wall"], "bn_wall": b["wall"], "end_cpu": (b["tree_cpu"] - b["m"]["cpu_s"]) - (p["tree_cpu"] - p["m"]["cpu_s"]),
    }
    nsamples, sampling_s = sampler_cost(i)
    row["samples"], row["sample_us"] = nsamples, sampling_s / max(nsamples, 1) * 1e6
    # the agent's threads: bn's other threads less plain's (torch's own;
    # meaningful with --threads 1 only, torch's intra-op pool varies more)
    row["agent_cpu_per_sample_us"] = (row["other_cpu"] - row["plain_other_cpu"]) / max(nsamples, 1) * 1e6
    rows.append(row)
    print("pair %d (%s first, load %s): wall plain %.2fs, bn %.2fs: whole %.3fx; median step outside the window "
          "%.3fx (%.3f / %.3f ms, %d steps; window %d steps); Python CPU %.2f / %.2f s (%.3fx), process tree %.3fx; "
          "bn main thread %.2f s (plain %.2f s), other threads %.2f s (plain %.2f s); main thread's run-queue wait "
          "%.2f / %.2f s; gc collections %s / %s, pauses %.3f / %.3f s; %sCPU outside the program's code "
          "(bottleneck's Go side and report, the agent's last writes) over plain's %+.2f s"
          % (i, order[0], loadavg(), p["wall"], b["wall"], row["whole"], row["step"], medstep(p["steps"]) * 1e3,
             medstep(b["steps"]) * 1e3, len(keep), nwin, p["m"]["cpu_s"], b["m"]["cpu_s"], row["cpu"], row["tree_cpu"],
             row["main_cpu"], row["plain_main_cpu"], row["other_cpu"], row["plain_other_cpu"], row["plain_main_wait"],
             row["main_wait"], row["gc"][0], row["gc"][1], row["gc_pause"][0], row["gc_pause"][1],
             "sampler %d samples, %.0f us each (its own timing), other threads' CPU over plain's %.0f us a sample; "
             % (row["samples"], row["sample_us"], row["agent_cpu_per_sample_us"]) if row["samples"] else "",
             row["end_cpu"]))

def spread(key):
    v = [r[key] for r in rows]
    return "%.3fx (%.3f-%.3f)" % (statistics.median(v), min(v), max(v))

def med(key, i=None):
    return statistics.median(r[key] if i is None else r[key][i] for r in rows)

print("summary over %d pairs, median (min-max) of the pairs' ratios; load average after: %s" % (pairs, loadavg()))
print("  whole run:                      %s, slower in %d of %d pairs (median wall plain %.2f s, bn %.2f s)"
      % (spread("whole"), sum(r["whole"] > 1 for r in rows), pairs, med("plain_wall"), med("bn_wall")))
print("  median step outside the window: %s" % spread("step"))
print("  Python process CPU time:        %s; process tree (bottleneck included) %s" % (spread("cpu"), spread("tree_cpu")))
print("  bn: main thread %.2f s CPU (plain %.2f s), the other threads %.2f s (plain %.2f s); gc pauses %.3f s (plain %.3f s)"
      % (med("main_cpu"), med("plain_main_cpu"), med("other_cpu"), med("plain_other_cpu"), med("gc_pause", 1), med("gc_pause", 0)))
if any(r["samples"] for r in rows):
    print("  sampler: %.0f us a sample by its own timing%s" % (med("sample_us"), (
        ", %.0f us of CPU a sample in the other threads over plain's (medians)" % med("agent_cpu_per_sample_us"))
        if "--threads" in prog and prog[prog.index("--threads") + 1] == "1" else ""))
print("  CPU outside the program's code (bottleneck's Go side and report, the agent's last writes) over plain's: %+.2f s (median)"
      % med("end_cpu"))
PYEOF
