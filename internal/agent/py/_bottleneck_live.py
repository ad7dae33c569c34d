"""The live view's feed (`bottleneck run --live`, docs/run.md "Live view"):
the agent keeps the last steps in a ring buffer and, from the step hook, at
most every _EVERY_S rewrites .live/<tag>.json (a temporary file, then a
rename) with that ring and the current counters. bottleneck polls the file;
the program never waits for a reader: nothing is sent, only a small file
replaced, and a reader that is slow or absent changes nothing here.

Per step: one append to a bounded deque and a clock read. Every _EVERY_S:
one JSON write of at most _RING records. Only loaded when --live is on.

Standard library only; Python 3.9+. Best-effort: a failed write disables
the feed (the run goes on).
"""

import collections
import json
import os
import time

_RING = 256  # steps kept (the view's median, p90, sparkline and breakdown)
_EVERY_S = 0.5  # the snapshot is rewritten at most this often
FORMAT = 1


class Live:
    def __init__(self, run_dir, tag, t0, every_s=_EVERY_S, ring=_RING):
        self.dir = os.path.join(run_dir, ".live")
        os.makedirs(self.dir, exist_ok=True)
        self.path = os.path.join(self.dir, tag + ".json")
        self.tmp = "%s.tmp-%d" % (self.path, os.getpid())
        self.tag = tag
        self.pid = os.getpid()
        self.t0 = t0
        self.every = every_s
        # [step, end s since the agent started, duration s, DataLoader wait s,
        #  GC pause s, RSS bytes or None, CUDA allocated bytes or None]
        self.ring = collections.deque(maxlen=ring)
        self._next = 0.0
        self.off = False
        self.errors = 0

    def on_step(self, step, now, dur, data_wait, gc_s, rss, cuda, state, window):
        """A step ended at perf_counter() now; called from the step hook."""
        if self.off:
            return
        self.ring.append((step, now - self.t0, dur, data_wait, gc_s, rss, cuda))
        if now >= self._next:
            self._next = now + self.every
            self.write(step, state, window)

    def write(self, step, state, window, ended=False):
        if self.off or os.getpid() != self.pid:
            return
        d = {"format": FORMAT, "tag": self.tag, "pid": self.pid, "time": time.time(),
             "uptime_s": round(time.perf_counter() - self.t0, 6),
             "step": step, "state": state, "window": window, "ended": ended,
             "columns": ["step", "end_s", "duration_s", "data_wait_s", "gc_s", "rss_bytes", "cuda_allocated_bytes"],
             "steps": [[r[0], round(r[1], 6), round(r[2], 6), round(r[3], 6), round(r[4], 6), r[5], r[6]]
                       for r in self.ring]}
        try:
            with open(self.tmp, "w") as f:
                f.write(json.dumps(d, separators=(",", ":")))
            os.replace(self.tmp, self.path)
        except (OSError, ValueError, TypeError):
            self.errors += 1
            if self.errors >= 3:
                self.off = True
