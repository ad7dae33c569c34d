"""The live view's feed (`bottleneck run --live`, docs/run.md "Live view").

The step hook appends each step to a bounded ring (a deque of the last
_RING steps) and sets the current counters: O(1), no I/O, no lock. A daemon
thread ("bottleneck-live", left out of the Python profile like the agent's
other threads) wakes every _EVERY_S and, when a step came since, rewrites
.live/<tag>.json (a temporary file, then a rename) from a copy of the ring.
bottleneck polls that file. Nothing is sent anywhere: a reader that is
slow or absent changes nothing here, and a slow disk delays only this
thread, never a step. The thread formats about 256 rows every 0.5 s
(0.5-0.9 ms holding the GIL, the file I/O not; scripts/bench-live.sh).

Only loaded when --live is on. Standard library only; Python 3.9+.
Best-effort: three failed writes in a row turn the feed off (the run goes
on).
"""

import collections
import json
import os
import threading
import time

LIVE_DIR = ".live"  # in the run directory: <tag>.json (internal/rundir.LiveDirName)

_RING = 256  # steps kept (the view's median, p90, sparkline and breakdown)
_EVERY_S = 0.5  # the snapshot is rewritten at most this often
FORMAT = 2
# cpu_s and cpu_wait_s: the step thread's time on a CPU and runnable but
# waiting for one over the step (Linux schedstat, read at every step
# boundary anyway); samples: the DataLoader batch_size times the batches
# the step took (null: no batch of a known size)
COLUMNS = ["step", "end_s", "duration_s", "data_wait_s", "gc_s", "rss_bytes", "cuda_allocated_bytes",
           "cpu_s", "cpu_wait_s", "samples"]


class Live:
    def __init__(self, run_dir, tag, t0, every_s=_EVERY_S, ring=_RING):
        self.dir = os.path.join(run_dir, LIVE_DIR)
        os.makedirs(self.dir, exist_ok=True)
        self.path = os.path.join(self.dir, tag + ".json")
        self.tmp = "%s.tmp-%d" % (self.path, os.getpid())
        self.tag = tag
        self.pid = os.getpid()
        self.t0 = t0
        self.every = every_s
        # (step, end s since the agent started, duration s, DataLoader wait
        # s, GC pause s, RSS bytes or None, CUDA allocated bytes or None,
        # CPU s or None, CPU wait s or None, samples or None)
        self.ring = collections.deque(maxlen=ring)
        self.step, self.state, self.window = 0, "starting", 0
        self._written = None  # (step, state) of the last snapshot
        self.off = False
        self.errors = 0
        self._stop = threading.Event()
        self._thread = None
        self._lock = threading.Lock()  # one writer at a time (the thread, the final write)

    def start_thread(self):
        t = threading.Thread(target=self._run, name="bottleneck-live", daemon=True)
        t.start()
        self._thread = t

    def on_step(self, step, now, dur, data_wait, gc_s, rss, cuda, state, window, cpu=None, cpu_wait=None,
                samples=None):
        """A step ended at perf_counter() now; called from the step hook."""
        self.ring.append((step, now - self.t0, dur, data_wait, gc_s, rss, cuda, cpu, cpu_wait, samples))
        self.step, self.state, self.window = step, state, window

    def _run(self):
        while not self._stop.wait(self.every):
            if self.off:
                return
            if self.ring and (self.step, self.state) != self._written:
                self.write()

    def finish(self, step, state):
        """The program ended: stop the thread and write the last snapshot."""
        self._stop.set()
        self.step, self.state = step, state
        self.write(ended=True)

    def write(self, ended=False):
        if self.off or os.getpid() != self.pid:
            return
        with self._lock:
            step, state = self.step, self.state
            rows = list(self.ring)  # a copy made under the GIL: the step hook may append meanwhile
            meta = json.dumps({"format": FORMAT, "tag": self.tag, "pid": self.pid, "time": time.time(),
                               "uptime_s": round(time.perf_counter() - self.t0, 6), "step": step,
                               "state": state, "window": self.window, "ended": ended, "columns": COLUMNS},
                              separators=(",", ":"))
            body = ",".join("[%d,%.6f,%.6f,%.6f,%.6f,%s,%s,%s,%s,%s]" % (
                r[0], r[1], r[2], r[3], r[4], "null" if r[5] is None else "%d" % r[5],
                "null" if r[6] is None else "%d" % r[6], "null" if r[7] is None else "%.6f" % r[7],
                "null" if r[8] is None else "%.6f" % r[8], "null" if r[9] is None else "%d" % r[9]) for r in rows)
            try:
                with open(self.tmp, "w") as f:
                    f.write(meta[:-1] + ',"steps":[' + body + "]}")
                os.replace(self.tmp, self.path)
                self._written = (step, state)
                self.errors = 0
            except (OSError, ValueError) as e:
                self.errors += 1
                if self.errors >= 3:
                    self.off = True
                    self.error = "%s: %s" % (type(e).__name__, e)
