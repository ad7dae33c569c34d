#!/usr/bin/env bash
# What `bottleneck run --verify` costs beyond `bottleneck run` (a benchmark,
# not a test): runs examples/diagnose/slow_dataset.py REPS times under
# `bottleneck run` and REPS times under `bottleneck run --verify
# --verify-steps N`, alternating, and prints the median wall time of each,
# the difference, and, for comparison, what one more run of the tried
# steps should cost: the tried run's own wall time (start-up, torch
# import, the warm-up and the N steps; from its log's timestamps). The
# issue's bound: the first run's time plus the extra recorded steps plus
# start-up.
#
# Usage: scripts/bench-verify.sh [N] [REPS]    (defaults 10 3)
# Env:   PYTHON (default $BOTTLENECK_TEST_PYTHON, else .venv/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10}
REPS=${2:-3}
PY=${PYTHON:-${BOTTLENECK_TEST_PYTHON:-.venv/bin/python}}
"$PY" -c 'import torch' || { echo "need a Python with torch (PYTHON=...)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/bottleneck" ./cmd/bottleneck
SCRIPT=examples/diagnose/slow_dataset.py
now() { date +%s.%N; }
plain=() verify=() tried=()
for i in $(seq 1 "$REPS"); do
  t0=$(now)
  "$work/bottleneck" run --python "$PY" -o "$work/p$i" --report none "$SCRIPT" >/dev/null 2>&1
  t1=$(now)
  "$work/bottleneck" run --python "$PY" -o "$work/v$i" --report none --verify --verify-steps "$N" "$SCRIPT" >/dev/null 2>&1
  t2=$(now)
  plain+=("$(echo "$t1 - $t0" | bc)")
  verify+=("$(echo "$t2 - $t1" | bc)")
  # the tried run: from its directory's creation to its last file
  d="$work/v$i-tried-1"
  first=$(stat -c %W "$d" 2>/dev/null || echo 0)
  [ "$first" = 0 ] && first=$(stat -c %Y "$d/manifest.json")
  last=$(find "$d" -type f -printf '%T@\n' | sort -n | tail -1)
  tried+=("$(echo "$last - $first" | bc)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
mp=$(median "${plain[@]}") mv=$(median "${verify[@]}") mt=$(median "${tried[@]}")
printf 'load average: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run:           %6.2f s (median of %d)\n' "$mp" "$REPS"
printf 'run --verify:  %6.2f s (--verify-steps %d)\n' "$mv" "$N"
printf 'difference:    %6.2f s; the tried run itself took %.2f s (its start-up, warm-up and %d steps); ratio %.2fx\n' \
  "$(echo "$mv - $mp" | bc)" "$mt" "$N" "$(echo "$mv / $mp" | bc -l)"
