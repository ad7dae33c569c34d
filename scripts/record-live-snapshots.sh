#!/usr/bin/env bash
# Records the live view's test snapshots (internal/live/testdata/snap-*.json):
# small programs run under `bottleneck run --live`, their agent's
# .live/rank0.json copied while they run; the last copy before the end is
# kept (bottleneck removes .live when the run ends). Their causes are
# asserted by internal/live's TestRecordedCauses.
#
#   input:  a DataLoader without workers whose samples take 2 ms each
#           (sleep): the step waits for data (input-bound)
#   cpu:    768x768 matrix products, no DataLoader: native code
#           (cpu-compute-bound)
#   python: a pure-Python loop over 200,000 numbers per step, a tiny model
#           step after it: Python (host-bound)
#   sleep:  time.sleep(0.01) in each step: blocked, neither in a sync nor
#           in a collective (undetermined: no class is a sleep)
#   gc:     gc.collect() after every step with 100,000 live objects
#           (gc-bound)
#   workers: 2 DataLoader workers, samples of 3 ms (sleep): input-bound
#           with the wait blocked off the CPU
#
# Usage: scripts/record-live-snapshots.sh   (PYTHON as scripts/bench-live.sh;
#        KINDS="cpu sleep" records only those)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-${BOTTLENECK_TEST_PYTHON:-.venv/bin/python}}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/bottleneck" ./cmd/bottleneck

cat >"$work/prog.py" <<'PYEOF'
import gc, sys, time
import torch
from torch.utils.data import DataLoader, Dataset
kind = sys.argv[1]
torch.set_num_threads(1)
torch.manual_seed(0)

class Slow(Dataset):
    def __init__(self, pause):
        self.pause = pause
    def __len__(self):
        return 8 * 60
    def __getitem__(self, i):
        time.sleep(self.pause)
        return torch.randn(64), i % 4

model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
def step(x, y):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    opt.step()

if kind in ("input", "workers"):
    workers = 2 if kind == "workers" else 0
    for x, y in DataLoader(Slow(0.002 if workers == 0 else 0.003), batch_size=8, num_workers=workers):
        step(x, y)
elif kind == "cpu":
    a, b = torch.randn(768, 768), torch.randn(768, 768)
    for _ in range(60):
        with torch.no_grad():
            a2 = a @ b @ b
        step(a2[:8, :64].contiguous(), torch.zeros(8, dtype=torch.long))
elif kind == "python":
    x, y = torch.randn(8, 64), torch.zeros(8, dtype=torch.long)
    for _ in range(60):
        acc = 0
        for i in range(200_000):
            acc += (i * 7) % 13
        step(x, y)
elif kind == "sleep":
    x, y = torch.randn(8, 64), torch.zeros(8, dtype=torch.long)
    for _ in range(60):
        time.sleep(0.01)
        step(x, y)
elif kind == "gc":
    vocab = {"tok%d" % i: [i, (i, i + 1)] for i in range(100_000)}
    x, y = torch.randn(8, 64), torch.zeros(8, dtype=torch.long)
    for _ in range(60):
        step(x, y)
        gc.collect()
PYEOF

for kind in ${KINDS:-input cpu gc workers python sleep}; do
  out="$work/run-$kind"
  "$work/bottleneck" run --python "$PY" --no-trace --report none --live -o "$out" "$work/prog.py" "$kind" \
    >/dev/null 2>"$work/$kind.err" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    cp "$out/.live/rank0.json" "$work/$kind.json" 2>/dev/null || true
    sleep 0.1
  done
  wait "$pid"
  cp "$work/$kind.json" "internal/live/testdata/snap-$kind.json"
  echo "$kind: $(grep -o '"step":[0-9]*' "$work/$kind.json" | head -1)"
done
