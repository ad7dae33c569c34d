#!/usr/bin/env bash
# bench-analyze.sh — how fast and how lean is `bottleneck analyze` on a big trace?
#
# Generates (once, cached) a synthetic Kineto trace of SIZE uncompressed bytes
# and its .gz with cmd/bottleneck-gentrace, builds ./cmd/bottleneck, runs
# `bottleneck analyze FILE` and `bottleneck analyze --json FILE` on both, and
# prints for each: wall time, throughput in MB/s of *uncompressed* JSON, peak
# RSS and peak RSS as a fraction of the uncompressed size, and the speed ratio
# to Python's json.load on the same file (json.load needs ~10x the file size in
# RAM, so it is skipped above 300 MB unless --python is given).
#
# With --corpus it runs instead one trace of every shape (issue 16), each
# side by side with json.load of the same file, and checks the targets:
#   default          the generator's own shape
#   per-launch-args  every kernel launch with its own grid and occupancy
#   tiny-events      mostly one-line Python frames (many events per MB)
#   distinct-names   every CPU op with a name of its own
#   short-steps      thousands of short steps (one per ~100 KB: a loop of
#                    62 one-kernel ops, -ops-per-step)
#   compact          the default shape on one line, no whitespace
#   indent           the default shape as json.dump(indent=2) writes it
# and real traces of testdata grown to SIZE by bottleneck-gentrace
# -replicate (copies with shifted times, ids and step numbers: shapes the
# generator did not invent):
#   real-ddp         DDP ResNet on V100s, HTA's ns_resolution_trace (15 MB)
#   real-nccl        NCCL-heavy, CPU-bound, HTA's nccl_parser_config (10 MB)
#   real-qwen        Qwen inference with stacks and memory, TraceLens (9 MB)
#   real-gpt         GPT training on an H200, written by `bottleneck run` (13 MB)
#   real-loader      a data-loader-bound example on an H100, `bottleneck run`'s (5 MB)
#   real-cpu         CPU only, HTA's rank_non_gpu (1 MB)
# Targets (issue 35): from 100 MB on, >= 10x json.load's wall time, >= 5x
# its CPU time, and peak RSS <= 0.5x the file; below, peak RSS <= 1x; and
# no shape above 2x the time per byte of the fastest. 1 GB of any shape
# should take <= 3 s on a quiet machine: the load average is printed.
#
# Usage:
#   scripts/bench-analyze.sh [--python | --no-python] [--runs N] [--size SIZE]
#   scripts/bench-analyze.sh --corpus [--size SIZE] [--shapes 'a b ...']
#   SIZE=10GB scripts/bench-analyze.sh
#
# Environment:
#   SIZE       uncompressed trace size (default 1GB, 200MB with --corpus;
#              KB/MB/GB are powers of 1024)
#   SEED       generator seed (default 1)
#   GENFLAGS   extra generator flags: the trace's shape, e.g. -per-launch-args
#              (every kernel launch with its own grid and occupancy, as on
#              real GPUs); part of the cache key
#   BENCH_DIR  cache for traces and binaries (default /tmp/bottleneck-bench)
#   RUNS       runs per measurement; the fastest is reported (default 1)
#   PYTHON     auto (default: only up to 300 MB), 1 (always), 0 (never)
#   TIMER      auto (default: /usr/bin/time if present, else a small Go helper), time, go
#
# The cache key includes a hash of internal/tracegen's sources, so a changed
# generator regenerates; delete BENCH_DIR to reclaim the space.
set -euo pipefail

SIZE=${SIZE:-}
SEED=${SEED:-1}
CORPUS=0
SHAPES="default per-launch-args tiny-events distinct-names short-steps compact indent real-ddp real-nccl real-qwen real-gpt real-loader real-cpu"
BENCH_DIR=${BENCH_DIR:-/tmp/bottleneck-bench}
RUNS=${RUNS:-1}
PYTHON=${PYTHON:-auto}
TIMER=${TIMER:-auto}

while [ $# -gt 0 ]; do
	case "$1" in
	--python) PYTHON=1 ;;
	--no-python) PYTHON=0 ;;
	--runs) RUNS=$2; shift ;;
	--runs=*) RUNS=${1#*=} ;;
	--size) SIZE=$2; shift ;;
	--size=*) SIZE=${1#*=} ;;
	--corpus) CORPUS=1 ;;
	--shapes) SHAPES=$2; shift ;;
	--shapes=*) SHAPES=${1#*=} ;;
	-h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-analyze: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done

die() { echo "bench-analyze: $*" >&2; exit 1; }
log() { echo "bench-analyze: $*" >&2; }

cd "$(dirname "$0")/.."
[ -f go.mod ] || die "run from the repository (no go.mod at $(pwd))"
command -v go >/dev/null || die "go is not on PATH"

size_bytes() { # 1GB -> 1073741824
	awk -v s="$1" 'BEGIN {
		u = toupper(s); sub(/I?B$/, "", u); m = 1
		if (u ~ /T$/) { m = 2^40 } else if (u ~ /G$/) { m = 2^30 } else if (u ~ /M$/) { m = 2^20 } else if (u ~ /K$/) { m = 2^10 }
		sub(/[KMGT]$/, "", u)
		if (u !~ /^[0-9]+(\.[0-9]+)?$/) exit 1
		printf "%.0f\n", u * m }'
}
if [ -z "$SIZE" ]; then
	if [ $CORPUS = 1 ]; then SIZE=200MB; else SIZE=1GB; fi
fi
TARGET=$(size_bytes "$SIZE") || die "bad SIZE $SIZE (want e.g. 300MB, 1GB, 10GB)"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "bad RUNS $RUNS"

mkdir -p "$BENCH_DIR/bin"
log "building ./cmd/bottleneck and ./cmd/bottleneck-gentrace into $BENCH_DIR/bin"
go build -o "$BENCH_DIR/bin/bottleneck-gentrace" ./cmd/bottleneck-gentrace
go build -o "$BENCH_DIR/bin/bottleneck" ./cmd/bottleneck || die "cannot build ./cmd/bottleneck"
BN="$BENCH_DIR/bin/bottleneck"
"$BN" analyze --help >/dev/null 2>&1 || die "this bottleneck has no 'analyze' command yet"

# ---- the traces (cached) ----------------------------------------------------
GENHASH=$(cat $(ls internal/tracegen/*.go | grep -v '_test\.go$') | sha256sum | cut -c1-10)
free_bytes() { df -Pk "$BENCH_DIR" | awk 'NR == 2 { printf "%.0f\n", $4 * 1024 }'; }
if [ $CORPUS = 0 ]; then
SHAPE=$(printf '%s' "${GENFLAGS:-}" | tr -c 'a-zA-Z0-9' '_')
NAME="trace-${SIZE}${SHAPE:+-$SHAPE}-seed${SEED}"
TRACE="$BENCH_DIR/$NAME-${GENHASH}.json"
GZ="$TRACE.gz"
for old in "$BENCH_DIR/$NAME"-*.json "$BENCH_DIR/$NAME"-*.json.gz; do
	[ -e "$old" ] || continue
	case "$old" in "$TRACE" | "$GZ") ;; *) log "removing stale $old"; rm -f "$old" ;; esac
done

gen() { # gen OUT [flags]
	local out=$1; shift
	local need=$((TARGET + TARGET / 4))
	[ "$(free_bytes)" -gt "$need" ] || die "not enough free space in $BENCH_DIR for $out (need ~$((need >> 20)) MiB)"
	# shellcheck disable=SC2086 # GENFLAGS is a list of flags
	"$BENCH_DIR/bin/bottleneck-gentrace" -size "$SIZE" -seed "$SEED" ${GENFLAGS:-} "$@" -o "$out.tmp" || { rm -f "$out.tmp"; die "generating $out failed"; }
	mv "$out.tmp" "$out"
}
if [ -s "$TRACE" ]; then log "cached: $TRACE"; else log "generating $TRACE"; gen "$TRACE"; fi
if [ -s "$GZ" ]; then log "cached: $GZ"; else log "generating $GZ (same seed: the same JSON, gzipped)"; gen "$GZ" -gzip; fi
JSON_BYTES=$(stat -c %s "$TRACE")
GZ_BYTES=$(stat -c %s "$GZ")
fi

# ---- the timer ----------------------------------------------------------------
# Each measurement writes "WALL_SECONDS MAXRSS_KB CPU_SECONDS" (user + system)
# as the last line of a file.
if [ "$TIMER" = auto ]; then
	if [ -x /usr/bin/time ] && /usr/bin/time -f '%e %M %U %S' true >/dev/null 2>&1; then TIMER=time; else TIMER=go; fi
fi
if [ "$TIMER" = go ]; then
	# Install-free fallback: wall clock and the child's peak RSS from wait4(2).
	src="$BENCH_DIR/rusage-src"
	mkdir -p "$src"
	cat >"$src/go.mod" <<'EOF'
module rusage

go 1.21
EOF
	cat >"$src/main.go" <<'EOF'
// rusage -o FILE CMD ARGS...: runs CMD, writes "WALL_S MAXRSS_KB CPU_S" to
// FILE and exits with CMD's status.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 4 || os.Args[1] != "-o" {
		fmt.Fprintln(os.Stderr, "usage: rusage -o FILE CMD ARGS...")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[3], os.Args[4:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start).Seconds()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			fmt.Fprintln(os.Stderr, "rusage:", err)
			os.Exit(127)
		}
		code = ee.ExitCode()
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) // KB on Linux
	}
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	os.WriteFile(os.Args[2], []byte(fmt.Sprintf("%.2f %d %.2f 0\n", wall, rss, cpu)), 0o644)
	os.Exit(code)
}
EOF
	(cd "$src" && GOFLAGS= go build -o "$BENCH_DIR/bin/rusage" .) || die "cannot build the Go timing helper"
	TIMER_DESC="Go helper (wall clock + wait4 ru_maxrss, user + system time)"
elif [ "$TIMER" = time ]; then
	TIMER_DESC="/usr/bin/time -f '%e %M %U %S'"
else
	die "bad TIMER $TIMER (auto, time, go)"
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# measure NAME CMD...: runs CMD RUNS times (stdout discarded); sets M_WALL
# (fastest run, s), M_CPU (least CPU time of the runs, s), M_RSS (peak RSS
# of all runs, KB), M_RC (last exit status).
measure() {
	local name=$1; shift
	M_WALL= M_CPU= M_RSS=0 M_RC=0
	local i line w r u sy c
	for ((i = 1; i <= RUNS; i++)); do
		set +e
		if [ "$TIMER" = time ]; then
			/usr/bin/time -f '%e %M %U %S' -o "$TMP/t" "$@" >/dev/null 2>"$TMP/err"
		else
			"$BENCH_DIR/bin/rusage" -o "$TMP/t" "$@" >/dev/null 2>"$TMP/err"
		fi
		M_RC=$?
		set -e
		line=$(tail -n 1 "$TMP/t" 2>/dev/null || true)
		read -r w r u sy <<<"$line" || true
		if [ -z "${w:-}" ] || [ -z "${r:-}" ]; then
			log "$name: no timing (exit $M_RC)"; M_WALL=; return
		fi
		c=$(awk -v u="${u:-0}" -v s="${sy:-0}" 'BEGIN { printf "%.2f", u + s }')
		if [ -z "$M_WALL" ] || awk -v a="$w" -v b="$M_WALL" 'BEGIN { exit !(a < b) }'; then M_WALL=$w; fi
		if [ -z "$M_CPU" ] || awk -v a="$c" -v b="$M_CPU" 'BEGIN { exit !(a < b) }'; then M_CPU=$c; fi
		[ "$r" -gt "$M_RSS" ] && M_RSS=$r
		if [ "$M_RC" -ne 0 ] && [ "$M_RC" -ne 3 ]; then
			log "$name exited $M_RC:"; tail -n 5 "$TMP/err" | sed 's/^/    /' >&2
			return
		fi
	done
}

# ---- the corpus of shapes (--corpus) -----------------------------------------
shape_flags() { # shape -> generator flags
	case "$1" in
	default) echo "" ;;
	per-launch-args) echo "-per-launch-args" ;;
	tiny-events) echo "-tiny-events" ;;
	distinct-names) echo "-distinct-names" ;;
	short-steps) echo "-ops-per-step 62 -steps $((TARGET / (100 << 10)))" ;; # ~100 KB a step (the model's step is >= 264 KB)
	compact) echo "-layout compact" ;;
	indent) echo "-layout indent" ;;
	real-ddp) echo "-replicate testdata/traces/hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz" ;;
	real-nccl) echo "-replicate testdata/traces/hta/nccl_parser_config/nccl_data.json.gz" ;;
	real-qwen) echo "-replicate testdata/traces/tracelens/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz" ;;
	real-gpt) echo "-replicate testdata/rundir/h200/gpt_tf32/trace-rank0.pt.trace.json.gz" ;;
	real-loader) echo "-replicate testdata/rundir/h100/loader_gpu/trace-rank0.pt.trace.json.gz" ;;
	real-cpu) echo "-replicate testdata/traces/hta/rank_non_gpu/rank_non_gpu.json.gz" ;;
	*) return 1 ;;
	esac
}
if [ $CORPUS = 1 ]; then
	py=1
	if [ "$PYTHON" = 0 ] || { [ "$PYTHON" = auto ] && [ "$TARGET" -gt $((300 << 20)) ]; }; then py=0; fi
	command -v python3 >/dev/null || py=0
	echo "bench-analyze --corpus: $SIZE per shape, seed $SEED, $(nproc 2>/dev/null || echo '?') CPUs, $(go version | awk '{print $3}'), timer: $TIMER_DESC, best of $RUNS run(s); load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "  each shape: json.load, then bottleneck analyze, of the same file back to back; ratio = json.load wall / bottleneck wall, cpu = json.load CPU / bottleneck CPU"
	echo "  ns/B = bottleneck wall per byte; vs fastest = ns/B over the fastest shape's"
	echo
	declare -A C_BYTES C_EV C_WALL C_CPU C_RSS C_PY C_PYCPU
	for shape in $SHAPES; do
		flags=$(shape_flags "$shape") || die "unknown shape $shape (try --help)"
		# the flags are part of the key: a shape redefined is regenerated
		file="$BENCH_DIR/corpus-$SIZE-$shape-seed$SEED-$GENHASH-$(printf '%s' "$flags" | sha256sum | cut -c1-6).json"
		if [ ! -s "$file" ]; then
			rm -f "$BENCH_DIR/corpus-$SIZE-$shape-seed$SEED-"*.json
			[ "$(free_bytes)" -gt $((TARGET * 3 / 2)) ] || die "not enough free space in $BENCH_DIR for $file"
			log "generating $file ($flags)"
			# shellcheck disable=SC2086 # flags is a list
			"$BENCH_DIR/bin/bottleneck-gentrace" -q -size "$SIZE" -seed "$SEED" $flags -o "$file.tmp" || { rm -f "$file.tmp"; die "generating $file failed"; }
			mv "$file.tmp" "$file"
		fi
		C_BYTES[$shape]=$(stat -c %s "$file")
		C_PY[$shape]= C_PYCPU[$shape]=
		if [ $py = 1 ]; then
			log "$shape: python json.load"
			measure py python3 -c 'import json, sys; json.load(open(sys.argv[1], "rb"))' "$file"
			C_PY[$shape]=$M_WALL C_PYCPU[$shape]=$M_CPU
		fi
		log "$shape: bottleneck analyze"
		measure an "$BN" analyze "$file"
		if [ -z "$M_WALL" ] || { [ "$M_RC" -ne 0 ] && [ "$M_RC" -ne 3 ]; }; then FAILED_SHAPE=$shape; fi
		C_WALL[$shape]=$M_WALL C_CPU[$shape]=$M_CPU C_RSS[$shape]=$M_RSS
		C_EV[$shape]=$("$BN" analyze --json "$file" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["inputs"][0]["events"])' 2>/dev/null || echo "?")
	done
	best=
	for shape in $SHAPES; do
		[ -n "${C_WALL[$shape]}" ] || continue
		nsb=$(awk -v w="${C_WALL[$shape]}" -v n="${C_BYTES[$shape]}" 'BEGIN { printf "%.6f", w * 1e9 / n }')
		if [ -z "$best" ] || awk -v a="$nsb" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$nsb; fi
	done
	printf '%-16s %8s %8s %8s %8s %8s %8s %9s %8s %7s %7s %7s %9s  %s\n' shape MB events/MB wall_s cpu_s MB/s RSS_MB RSS/size py_s ratio cpu ns/B vs_fast targets
	MISSED=0
	for shape in $SHAPES; do
		if [ -z "${C_WALL[$shape]}" ]; then printf '%-16s failed\n' "$shape"; MISSED=1; continue; fi
		line=$(awk -v s="$shape" -v n="${C_BYTES[$shape]}" -v ev="${C_EV[$shape]}" -v w="${C_WALL[$shape]}" -v c="${C_CPU[$shape]}" -v r="${C_RSS[$shape]}" -v py="${C_PY[$shape]}" -v pyc="${C_PYCPU[$shape]}" -v best="$best" 'BEGIN {
			ws = (w > 0) ? w : 0.005; cs = (c > 0) ? c : 0.005; mb = n / 1e6; nsb = ws * 1e9 / n; rs = r * 1024 / n
			evmb = (ev ~ /^[0-9]+$/) ? sprintf("%.0f", ev / mb) : "?"
			ratio = (py != "") ? py / ws : -1
			cratio = (pyc != "") ? pyc / cs : -1
			miss = ""
			if (n >= 100e6 && ratio >= 0 && ratio < 10) miss = miss " <10x"
			if (n >= 100e6 && cratio >= 0 && cratio < 5) miss = miss " cpu<5x"
			if (n >= 100e6 && rs > 0.5) miss = miss " RSS>0.5"
			if (n < 100e6 && rs > 1) miss = miss " RSS>1"
			if (nsb > 2 * best) miss = miss " >2x_fastest"
			printf "%-16s %8.1f %8s %8.2f %8.2f %8.1f %8.1f %9.3f %8s %7s %7s %7.2f %9.2f  %s\n", s, mb, evmb, ws, cs, mb / ws, r / 1024, rs,
				(py != "") ? sprintf("%.2f", py) : "-", (ratio >= 0) ? sprintf("%.1fx", ratio) : "-", (cratio >= 0) ? sprintf("%.1fx", cratio) : "-", nsb, nsb / best, (miss == "") ? "met" : "MISSED:" miss
		}')
		echo "$line"
		case "$line" in *MISSED*) MISSED=1 ;; esac
	done
	echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
	[ $py = 1 ] || { echo; echo "json.load skipped (--no-python, no python3, or above 300 MB without --python)"; }
	[ -z "${FAILED_SHAPE:-}" ] || exit 1
	exit $MISSED
fi

# ---- Python baseline ----------------------------------------------------------
PY_NOTE=""
run_python=0
case "$PYTHON" in
1) run_python=1 ;;
0) PY_NOTE="json.load skipped (--no-python)" ;;
auto)
	if [ "$TARGET" -le $((300 << 20)) ]; then run_python=1; else
		PY_NOTE="json.load skipped: the trace is above 300 MB and json.load needs ~10x its size in RAM (--python to force)"
	fi ;;
*) die "bad PYTHON $PYTHON (auto, 1, 0)" ;;
esac
if [ $run_python = 1 ] && ! command -v python3 >/dev/null; then run_python=0; PY_NOTE="json.load skipped: no python3"; fi
if [ $run_python = 1 ]; then
	avail=$(awk '/^MemAvailable:/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo 2>/dev/null || echo 0)
	if [ "$avail" -gt 0 ] && [ "$avail" -lt $((JSON_BYTES * 8)) ]; then
		log "warning: json.load of $((JSON_BYTES >> 20)) MiB may need more than the $((avail >> 20)) MiB available"
	fi
fi

# ---- run --------------------------------------------------------------------
CPUS=$(nproc 2>/dev/null || echo '?')
echo "bench-analyze: $SIZE synthetic trace, seed $SEED, $CPUS CPUs, $(go version | awk '{print $3}'), timer: $TIMER_DESC, best of $RUNS run(s)"
echo "  json: $TRACE ($JSON_BYTES bytes)"
echo "  gz:   $GZ ($GZ_BYTES bytes, $(awk -v a="$JSON_BYTES" -v b="$GZ_BYTES" 'BEGIN { printf "%.1f", a / b }')x smaller)"
echo "  MB/s = uncompressed JSON bytes / 1e6 / wall seconds; RSS/size = peak RSS / uncompressed bytes"
echo
printf '%-30s %4s %9s %9s %12s %9s %14s\n' "run" "exit" "wall s" "MB/s" "peak RSS MB" "RSS/size" "vs json.load"

declare -A WALL RSS RC
row() { # key label
	local key=$1 label=$2 w=${WALL[$1]:-} r=${RSS[$1]:-0} ref
	ref=${WALL[py_${key##*_}]:-}
	if [ -z "$w" ]; then
		printf '%-30s %4s %9s\n' "$label" "${RC[$key]:-?}" "failed"
		return
	fi
	awk -v label="$label" -v rc="${RC[$key]}" -v w="$w" -v r="$r" -v n="$JSON_BYTES" -v ref="$ref" -v py="${key%%_*}" 'BEGIN {
		ws = (w > 0) ? w : 0.005
		vs = "-"
		if (py == "py") vs = "1.0x (baseline)"
		else if (ref != "") vs = sprintf("%.1fx faster", ((ref > 0) ? ref : 0.005) / ws)
		printf "%-30s %4d %9.2f %9.1f %12.1f %9.3f %14s\n", label, rc, w, n / 1e6 / ws, r / 1024, r * 1024 / n, vs
	}'
}

FAILED=0
if [ $run_python = 1 ]; then
	log "python json.load on json"
	measure py_json python3 -c 'import json, sys; json.load(open(sys.argv[1], "rb"))' "$TRACE"
	WALL[py_json]=$M_WALL RSS[py_json]=$M_RSS RC[py_json]=$M_RC
	log "python json.load on gz"
	measure py_gz python3 -c 'import gzip, json, sys; json.load(gzip.open(sys.argv[1]))' "$GZ"
	WALL[py_gz]=$M_WALL RSS[py_gz]=$M_RSS RC[py_gz]=$M_RC
fi
for f in json gz; do
	file=$TRACE
	[ $f = gz ] && file=$GZ
	log "bottleneck analyze $f"
	measure "analyze_$f" "$BN" analyze "$file"
	WALL[an_$f]=$M_WALL RSS[an_$f]=$M_RSS RC[an_$f]=$M_RC
	log "bottleneck analyze --json $f"
	measure "analyze_json_$f" "$BN" analyze --json "$file"
	WALL[aj_$f]=$M_WALL RSS[aj_$f]=$M_RSS RC[aj_$f]=$M_RC
done
for k in an_json aj_json an_gz aj_gz py_json py_gz; do
	[ -n "${RC[$k]+x}" ] || continue
	case $k in
	an_json) label="analyze .json" ;;
	aj_json) label="analyze --json .json" ;;
	an_gz) label="analyze .json.gz" ;;
	aj_gz) label="analyze --json .json.gz" ;;
	py_json) label="python json.load .json" ;;
	py_gz) label="python json.load .json.gz" ;;
	esac
	row "$k" "$label"
	if [ -z "${WALL[$k]}" ] || { [ "${RC[$k]}" -ne 0 ] && [ "${RC[$k]}" -ne 3 ]; }; then FAILED=1; fi
done
[ -n "$PY_NOTE" ] && { echo; echo "$PY_NOTE"; }
exit $FAILED
