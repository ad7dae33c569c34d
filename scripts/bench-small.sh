#!/usr/bin/env bash
# bench-small.sh [OLD_BIN] NEW_BIN — `bottleneck analyze` on small real traces
# (issue 35: a trace under 20 MB in <= 30 ms, peak RSS <= 25 MB + 1x the file).
#
# Uncompresses (once, cached) real traces of testdata/traces and
# testdata/rundir of different shapes, then runs `BIN analyze FILE` RUNS
# times for each trace, the two binaries interleaved (old new new old ...),
# and prints for each trace and binary the median wall time, the median
# CPU time (user + system), the highest peak RSS against the target, and
# new/old ratios of the medians.
# The machine's load average is printed before and after: on a busy machine
# read the ratios, not the milliseconds.
#
# Usage:
#   scripts/bench-small.sh NEW_BIN
#   scripts/bench-small.sh OLD_BIN NEW_BIN
#   RUNS=20 scripts/bench-small.sh /tmp/old /tmp/new
#
# Build the old binary from another commit with a temporary worktree:
#   git worktree add -f /tmp/base COMMIT && (cd /tmp/base && go build -o /tmp/old ./cmd/bottleneck)
#
# Environment: RUNS (default 15), BENCH_DIR (cache, default /tmp/bottleneck-bench-small).
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  sed -n 2,22p "$0" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-/tmp/bottleneck-bench-small}
mkdir -p "$dir"
traces=(
  "gpu-ddp-15MB hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
  "gpu-nccl-10MB hta/nccl_parser_config/nccl_data.json.gz"
  "gpu-qwen-9MB tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
  "gpu-gpt-13MB ../rundir/h200/gpt_tf32/trace-rank0.pt.trace.json.gz"
  "gpu-loader-5MB ../rundir/h100/loader_gpu/trace-rank0.pt.trace.json.gz"
  "cpu-only-1MB hta/rank_non_gpu/rank_non_gpu.json.gz"
)
files=()
for t in "${traces[@]}"; do
  name=${t%% *} src=testdata/traces/${t#* }
  if [ ! -s "$dir/$name.json" ]; then
    gzip -dc "$src" >"$dir/$name.json.tmp" && mv "$dir/$name.json.tmp" "$dir/$name.json"
  fi
  files+=("$dir/$name.json")
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "${RUNS:-15}" "$@" -- "${files[@]}" <<'EOF'
import os, statistics, subprocess, sys, time

args = sys.argv[1:]
runs, rest = int(args[0]), args[1:]
sep = rest.index("--")
bins, files = rest[:sep], rest[sep + 1:]
labels = ["old", "new"] if len(bins) == 2 else ["new"]

def once(binary, path):
    start = time.perf_counter()
    p = subprocess.Popen([binary, "analyze", path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 3):
        sys.exit(f"{binary} analyze {path}: exit {os.waitstatus_to_exitcode(status)}")
    return wall * 1e3, (ru.ru_utime + ru.ru_stime) * 1e3, ru.ru_maxrss * 1024 / 1e6

print(f"{'trace':<16} {'binary':<6} {'MB':>5} {'wall ms':>8} {'CPU ms':>7} {'RSS MB':>7} {'target MB':>9}")
for path in files:
    mb = os.path.getsize(path) / 1e6
    res = {l: [] for l in labels}
    for i in range(runs):
        order = labels if i % 2 == 0 else labels[::-1]
        for l in order:
            res[l].append(once(bins[labels.index(l)], path))
    name = os.path.basename(path).removesuffix(".json")
    med = {}
    for l in labels:
        wall = statistics.median(r[0] for r in res[l])
        cpu = statistics.median(r[1] for r in res[l])
        rss = max(r[2] for r in res[l])
        med[l] = (wall, cpu)
        print(f"{name:<16} {l:<6} {mb:5.1f} {wall:8.1f} {cpu:7.1f} {rss:7.1f} {25 + mb:9.1f}")
    if len(labels) == 2:
        print(f"{name:<16} {'ratio':<6} {'':>5} {med['new'][0] / med['old'][0]:8.2f} {med['new'][1] / med['old'][1]:7.2f}")
EOF
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
