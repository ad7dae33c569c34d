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

With the Python sampler on, each of its samples of the main thread also
splits the time since the thread's previous sample (Split.on_sample): its
time on a CPU into Python and native (the innermost frame is inside C
code: a call or an operator, a torch op as much as a builtin; and the
sampler got the GIL at once, see GIL_HELD_S), its time
off the CPU and not runnable (blocked) into waiting for the device (a
sync: .item(), .cpu(), torch.cuda.synchronize ...), in torch.distributed,
and other (a sleep, I/O, a lock). The step hook hands each step the sums
since the previous one. A few dictionary lookups a sample, cached per
code object and instruction.

Only loaded when --live is on. Standard library only; Python 3.9+.
Best-effort: three failed writes in a row turn the feed off (the run goes
on).
"""

import collections
import dis
import json
import os
import threading
import time

LIVE_DIR = ".live"  # in the run directory: <tag>.json (internal/rundir.LiveDirName)

_RING = 256  # steps kept (the view's median, p90, sparkline and breakdown)
_EVERY_S = 0.5  # the snapshot is rewritten at most this often
FORMAT = 3
# cpu_s and cpu_wait_s: the step thread's time on a CPU and runnable but
# waiting for one over the step (Linux schedstat, read at every step
# boundary anyway); samples: the DataLoader batch_size times the batches
# the step took (null: no batch of a known size); python_s ...
# other_blocked_s: the sampled split of the step thread's time (Split;
# seconds of the sampled intervals that ended in the step; null: no
# sampler, or the step thread is not the main thread)
COLUMNS = ["step", "end_s", "duration_s", "data_wait_s", "gc_s", "rss_bytes", "cuda_allocated_bytes",
           "cpu_s", "cpu_wait_s", "samples",
           "python_s", "native_s", "device_s", "comm_s", "other_blocked_s"]
PYTHON, NATIVE, DEVICE, COMM, OTHER = range(5)  # the split's parts, in COLUMNS' order

# The innermost frame is inside C code when its instruction is one of
# these: a call (of a torch op, or of any builtin) or an operator (tensor
# arithmetic, indexing). Python 3.9 to 3.13 spellings.
_C_PREFIXES = ("CALL", "PRECALL", "BINARY_", "INPLACE_")
_C_OPS = frozenset(("COMPARE_OP", "STORE_SUBSCR", "DELETE_SUBSCR", "CONTAINS_OP", "STORE_SLICE"))
# Calls that wait for the device when they block: copies to the host and
# syncs (the innermost frame's callee; a blocked call in torch/cuda/ is
# a sync too: torch.cuda.synchronize, Stream and Event synchronize).
_SYNC_CALLS = frozenset(("item", "cpu", "tolist", "numpy", "to", "synchronize", "float", "int", "bool",
                         "nonzero", "equal", "__bool__", "__float__", "__int__", "__index__"))
# A sampler that waited this long for the GIL found it held when it woke:
# the main thread ran Python (or C code holding the GIL) then, wherever it
# let the GIL go. The sampler can only look at the main thread where it
# lets the GIL go, which a torch op does at once and Python only when made
# to (the switch interval, 5 ms): without this, a step of 19 ms of Python
# loop and 1 ms of torch ops showed 28% native, the samples due in the
# loop's last 5 ms seeing the first op (94% of its CPU time is Python).
# A thread waking takes well under a millisecond to get a free GIL.
GIL_HELD_S = 0.001
_CACHE_MAX = 20000  # instructions classified and kept (they keep their code objects)
_CUDA_DIR = os.sep + os.path.join("torch", "cuda") + os.sep
_DIST_DIR = os.sep + os.path.join("torch", "distributed") + os.sep


def callee(code, lasti):
    """The name the call instruction at byte offset lasti of code calls
    (x.item() -> "item", torch.cuda.synchronize() -> "synchronize",
    float(t) -> "float"); None when it is no call or the callable was not
    loaded by name. Walks back over the arguments' instructions by their
    stack effects; stops at a jump target (a conditional expression)."""
    instrs = list(dis.get_instructions(code))
    at = next((k for k, i in enumerate(instrs) if i.offset == lasti), None)
    if at is None:
        return None
    op, arg = instrs[at].opname, instrs[at].arg or 0
    if op == "CALL" and at > 0 and instrs[at - 1].opname == "PRECALL":  # 3.11: a call's two halves
        at -= 1
        op = "PRECALL"
    if op in ("CALL", "PRECALL", "CALL_FUNCTION", "CALL_METHOD"):
        need = arg
    elif op in ("CALL_FUNCTION_KW", "CALL_KW"):
        need = arg + 1  # the keyword names' tuple
    elif op == "CALL_FUNCTION_EX":
        need = 1 + (arg & 1)
    else:
        return None
    depth = 0
    for k in range(at - 1, max(-1, at - 65), -1):
        i = instrs[k]
        try:
            depth += dis.stack_effect(i.opcode, i.arg) if i.opcode >= dis.HAVE_ARGUMENT else dis.stack_effect(i.opcode)
        except ValueError:
            return None
        if depth > need:  # this instruction pushed the callable
            return i.argval if i.opname.startswith("LOAD_") and isinstance(i.argval, str) else None
        if i.is_jump_target:
            return None
    return None


class Split:
    """Splits the main thread's sampled time (the Sampler's
    on_main_sample) into COLUMNS' python_s ... other_blocked_s."""

    def __init__(self):
        self.acc = [0.0] * 5
        self._top = {}  # (code, lasti) -> (inside C code, a device sync when blocked)
        self._dist = {}  # code -> in torch.distributed

    def on_sample(self, frames, cpu_s, wait_s, span_s, gil_wait_s=0.0):
        """One sample of the main thread: frames innermost first as (code,
        line, lasti); the thread's time on a CPU and waiting for one over
        the span_s seconds since its previous sample; how long the sampler
        waited for the GIL to take this sample."""
        if not frames:
            return
        code, _, lasti = frames[0]
        kind = self._top.get((code, lasti))
        if kind is None:
            if len(self._top) >= _CACHE_MAX:  # code made at run time (torch.compile): start again
                self._top.clear()
                self._dist.clear()
            kind = self._top[(code, lasti)] = _classify(code, lasti)
        acc = self.acc
        acc[NATIVE if kind[0] and gil_wait_s < GIL_HELD_S else PYTHON] += cpu_s
        blocked = span_s - cpu_s - wait_s
        if blocked <= 0:
            return
        dist = self._dist
        for c, _, _ in frames:
            d = dist.get(c)
            if d is None:
                d = dist[c] = _DIST_DIR in c.co_filename
            if d:
                acc[COMM] += blocked
                return
        acc[DEVICE if kind[1] else OTHER] += blocked

    def take(self):
        """The sums since the last take, rounded; zeroes them. A sample
        the sampler's thread adds meanwhile may land in either step."""
        acc, self.acc = self.acc, [0.0] * 5
        return tuple(round(x, 6) for x in acc)


def _classify(code, lasti):
    """(inside C code, a device sync when blocked) for a thread whose
    innermost frame is at byte offset lasti of code."""
    if lasti < 0:  # (3.9: a frame not started yet)
        return (False, False)
    try:
        op = dis.opname[code.co_code[lasti]]
    except (IndexError, TypeError):
        return (False, False)
    if not (op.startswith(_C_PREFIXES) or op in _C_OPS):
        return (False, False)
    if _CUDA_DIR in code.co_filename:
        return (True, True)
    try:
        name = callee(code, lasti)
    except Exception:
        name = None
    return (True, name in _SYNC_CALLS)


_UNSPLIT = (None,) * 5


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
        # CPU s or None, CPU wait s or None, samples or None, then the
        # split's five parts or five None)
        self.ring = collections.deque(maxlen=ring)
        self.step, self.state, self.window = 0, "starting", 0
        self._written = None  # (step, state) of the last snapshot
        self.off = False
        self.errors = 0
        self._stop = threading.Event()
        self._thread = None
        self._lock = threading.Lock()  # one writer at a time (the thread, the final write)
        self.split = None  # a Split, once attach_sampler
        self._main = None  # the sampled main thread's ident

    def attach_sampler(self, sampler):
        """Split the steps' time from the sampler's samples of its main
        thread (the step thread, almost always)."""
        self.split = Split()
        self._main = sampler.main_ident
        sampler.on_main_sample = self.split.on_sample

    def start_thread(self):
        t = threading.Thread(target=self._run, name="bottleneck-live", daemon=True)
        t.start()
        self._thread = t

    def on_step(self, step, now, dur, data_wait, gc_s, rss, cuda, state, window, cpu=None, cpu_wait=None,
                samples=None):
        """A step ended at perf_counter() now; called from the step hook."""
        split = _UNSPLIT
        if self.split is not None:
            split = self.split.take()
            if threading.get_ident() != self._main:
                split = _UNSPLIT
        self.ring.append((step, now - self.t0, dur, data_wait, gc_s, rss, cuda, cpu, cpu_wait, samples) + split)
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
            body = ",".join("[%d,%.6f,%.6f,%.6f,%.6f,%s,%s,%s,%s,%s,%s]" % (
                r[0], r[1], r[2], r[3], r[4], "null" if r[5] is None else "%d" % r[5],
                "null" if r[6] is None else "%d" % r[6], "null" if r[7] is None else "%.6f" % r[7],
                "null" if r[8] is None else "%.6f" % r[8], "null" if r[9] is None else "%d" % r[9],
                "null,null,null,null,null" if r[10] is None else "%.6f,%.6f,%.6f,%.6f,%.6f" % r[10:15])
                for r in rows)
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
