"""bottleneck agent: the Python profile (embedded in the bottleneck binary,
loaded by _bottleneck_agent and, in DataLoader workers, by
_bottleneck_workers): a wall-clock sampler of every thread's stack, the
conversion of a cProfile run to the same format (pyprofile-<tag>.json), and
which source files are the agent's, a library's or the program's.

Documented in docs/run.md ("Python profile format").
"""
import gc
import os
import sys
import threading
import time
from functools import partial
from itertools import accumulate, chain, repeat, starmap, takewhile, tee
from operator import attrgetter, is_not, itemgetter, methodcaller

from _bottleneck_files import FORMAT_VERSION

_HERE = os.path.dirname(os.path.abspath(__file__))
# The agent's own source files: every module in its directory (the run's
# agent directory, the wheel's _agent, internal/agent/py), so that a new
# module needs no list to keep its frames out of the program's profile and
# tracebacks.
AGENT_FILES = frozenset(os.path.join(_HERE, n) for n in os.listdir(_HERE) if n.endswith(".py"))

# Non-zero while `import torch` runs: the sampler then takes no sample.
# Two runs here ended with SIGSEGV inside that import while the sampler
# read the importing thread's frames (CPython 3.11 can crash following
# f_back of frames that C code creates and drops, as during extension
# module initialisation: python/cpython#111363).
SAMPLING_PAUSED = [0]

# ... and while any thread imports a module: a CI run ended with SIGSEGV
# in the sampler while the program imported torch._dynamo lazily, after
# `import torch`. A module being imported holds a per-module lock, which
# importlib keeps in _module_locks by weak reference until it is done.
try:
    from importlib import _bootstrap as _importlib_bootstrap
    _MODULE_LOCKS = _importlib_bootstrap._module_locks
except Exception:  # another interpreter's importlib
    _MODULE_LOCKS = None


def importing():
    """Whether a thread is importing a module now."""
    try:
        return any(ref() is not None for ref in list(_MODULE_LOCKS.values())) if _MODULE_LOCKS else False
    except Exception:
        return False


# What walks a thread's frames in C: the stack of a top frame is
# map(_CODE_LINE, takewhile(_NOT_NONE, accumulate(chain((top,), _BACK),
# getattr))), its frames and their f_back's until None, as (code, line,
# lasti): the byte offset of the instruction each frame is at (a call's,
# in every frame but the innermost; the innermost's tells --live whether
# the thread is inside C code: _bottleneck_live).
_NOT_NONE = partial(is_not, None)
_CODE_LINE = attrgetter("f_code", "f_lineno", "f_lasti")
_BACK = repeat("f_back")


# The collector's switch, in C calls: gc.disable() while a read runs,
# then the program's own setting back (gc.enable() where it was enabled,
# gc.disable() again where it was not).
_NO_ARGS = ((),)
_GC_RESTORE = {True: gc.enable, False: gc.disable}.__getitem__
_CALL = methodcaller("__call__")


def read_atomically(*iterables):
    """list(chain(*iterables)), consumed in one call of C code with the
    collector off. The walk of stacks_iter allocates, an allocation can
    start a collection, and a collection runs Python (gc.callbacks, the
    agent's GC timer among them; finalizers), at whose switch points
    another thread could pop the frames being read: two CI runs ended
    with SIGSEGV in that walk. Reading the collector's setting, turning it
    off and putting it back happen in the same call of C code as the read,
    so the program never sees its setting changed."""
    was, back = tee(starmap(gc.isenabled, _NO_ARGS))
    out = list(chain(was, starmap(gc.disable, _NO_ARGS), *iterables, map(_CALL, map(_GC_RESTORE, back))))
    # The walk read this thread's stack too, and stacks_iter's tee still
    # holds its top frame, this call's: this frame's locals held the tee
    # and the tee this frame, a cycle only the collector freed, with the
    # frames below and the whole read (about 100 objects a sample: 18%
    # more collections of the youngest generation, and in a 40 s run one
    # more full collection, 0.2-0.5 s on a busy machine). Dropped here,
    # they are freed at once.
    del iterables, was, back
    return out[2:-1]


def snapshot(busy):
    """The keys of busy (the threads doing the agent's own work) and every
    thread's stack as (ident, ((code, line, lasti), ...)), innermost
    first, read at the same instant (see stacks_iter and read_atomically):
    a thread that entered the agent's work between a separate read of busy
    and the stacks had its shutil.get_terminal_size counted as the
    program's."""
    out = read_atomically(starmap(frozenset, ((busy,),)), stacks_iter())
    return out[0], out[1:]


def stacks_iter():
    """A lazy iterator of every thread's stack, which one call of C code
    runs through without running bytecode: the GIL stays with the sampler
    from sys._current_frames() until every frame has become a (code,
    line, lasti) triple, so no thread pushes or pops a frame meanwhile. On CPython
    3.11, following f_back of a frame its thread has just popped can crash
    the interpreter (python/cpython#111363; sentry-sdk and ddtrace hit
    it); a walk in Python can give the GIL away at the switch interval."""
    pairs = chain.from_iterable(map(dict.items, starmap(sys._current_frames, ((),))))
    idents, tops = tee(pairs)
    walks = map(takewhile, repeat(_NOT_NONE),
                map(accumulate, map(chain, zip(map(itemgetter(1), tops)), repeat(_BACK)), repeat(getattr)))
    return zip(map(itemgetter(0), idents), map(tuple, map(map, repeat(_CODE_LINE), walks)))


def is_agent_file(filename):
    return filename in AGENT_FILES


_LIB_DIRS = None


def is_library_file(fn):
    """True for files of torch (its generated code too), the standard
    library and site-packages."""
    global _LIB_DIRS
    if _LIB_DIRS is None:
        dirs = set()
        import sysconfig
        for k in ("stdlib", "platstdlib", "purelib", "platlib"):
            try:
                p = sysconfig.get_paths()[k]
            except Exception:
                p = None
            if p:
                dirs.add(os.path.realpath(p) + os.sep)
                dirs.add(p + os.sep)
        t = sys.modules.get("torch")
        if t is not None and getattr(t, "__file__", None):
            d = os.path.dirname(t.__file__)
            dirs.add(d + os.sep)
            dirs.add(os.path.realpath(d) + os.sep)
        _LIB_DIRS = tuple(dirs)
    if fn.startswith("<"):
        return True
    # torch.compile's generated code (inductor's cache) is torch's too
    return fn.startswith(_LIB_DIRS) or (os.sep + "site-packages" + os.sep) in fn or (os.sep + "torchinductor_") in fn


def thread_role(ident, name, main_ident):
    if ident == main_ident:
        return "main"
    low = (name or "").lower()
    if "pin_memory" in low:
        return "pin_memory"
    return "other"


class Sampler(object):
    """Samples every thread's Python stack every `interval` seconds.

    Frames are interned as (file, function, line, first line of function);
    a stack is a tuple of frame ids, root first. Counts are kept for the
    whole run and, separately, for samples taken while `in_window` is true.

    With a budget (a share of the wall time, > 0), the sampler keeps its
    own cost outside the window within it: a sample costs ~100-300 us of
    GIL-held time however short the program's steps (a wake-up with the
    caches cold), 1-1.5% of the main thread at 20 ms. After its first
    FULL_SAMPLES samples outside the window (a short run keeps every
    one: shares of 500 samples are within 2.2 points at one standard
    error), it samples every `weight` intervals (at most MAX_WEIGHT), and
    each sample counts `weight` times, so that counts stay in intervals
    and count * interval stays a time.
    """

    MAX_WEIGHT = 5
    FULL_SAMPLES = 500

    def __init__(self, interval, main_ident=None, window_interval=None, budget=0.0):
        self.interval = float(interval)
        # faster inside the recording window (torch.profiler dominates the
        # cost there), slower outside it where overhead matters most
        self.window_interval = float(window_interval or interval)
        self.budget = float(budget or 0.0)
        self.weight = 1  # the intervals a sample outside the window stands for
        self._cost = None  # a sample's cost outside the window, smoothed
        self._outside = 0  # samples taken outside the window
        self.main_ident = main_ident if main_ident is not None else threading.main_thread().ident
        self.frames = []  # [file, func, line, fline]
        # (id(code), line) -> id in frames, -1 for the agent's frames. Keyed
        # by the code object's id, not the code object: hashing a code
        # object hashes its name, bytecode and constants, at every frame of
        # every sample (the code objects are kept alive in _codes, so an id
        # is never reused for another).
        self._frame_ids = {}
        self._codes = []
        self._frame_rows = {}  # (file, func, line, fline) -> id in frames
        # (thread index, ids tuple) -> [count, window_count, cpu_count,
        # window_cpu_count, wait_count, window_wait_count, repeat_count,
        # repeat_cpu_count, repeat_wait_count, slow_count, startup_count]
        self.stacks = {}
        # samples since the last step ended, per stack: end_step adds them
        # to slow_count when that step was slow (work every N steps), and
        # the first time to startup_count (what ran before the steps). The
        # step's thread reads both without the lock to skip end_step when
        # there is nothing to add (Window._step).
        self.this_step, self.stepped = {}, False
        # the window's samples since the last step ended, per stack, and
        # per stack the window steps' own: [[step, samples], ...] (the
        # window check leaves outlier steps out, and their samples with
        # them)
        self._window_step, self.window_steps = {}, {}
        # A repeat is a sample whose thread's previous sample had the same
        # stack: the time since then was spent in it, so its on-CPU and
        # waiting shares are that stack's own, not partly the line before
        # (a short line's samples mostly measure the one it followed).
        self._last_stack = {}  # ident -> key of its previous sample
        # on-CPU or waiting: each thread's CPU clock (Linux) is read at
        # every sample, and the sample's on-CPU weight is the share of the
        # wall time since the thread's previous sample that it ran on a CPU
        self._cpu_clock = sys.platform.startswith("linux") and hasattr(time, "clock_gettime")
        self._cpu_last = {}  # ident -> (wall, cpu, run-queue wait)
        self._sched_fd = None  # the main thread's schedstat, once opened (-1: unreadable)
        self.threads = []  # dicts
        self._thread_idx = {}  # (ident, name) -> index
        self.samples = 0
        self.window_samples = 0
        # the window's samples since its last step boundary, per stack:
        # [count, cpu, wait]; by thread; in all (drop_since_step)
        self._since_step, self._since_step_th, self._since_step_n = {}, {}, 0
        self.in_window = False
        self.windows = []  # [[start_rel, end_rel], ...]
        self.start = time.time()
        self._t0 = time.perf_counter()
        self.end = None
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._running = threading.Event()  # cleared: paused (pause)
        self._running.set()
        self._thread = None
        self.sampling_cost = 0.0
        self.on_tick = None  # called from the sampler thread about every second
        # called from the sampler thread with every sample of the main
        # thread: (frames, cpu s, runnable-waiting s, wall s since its
        # previous sample, s this thread waited for the GIL to take it),
        # frames innermost first as (code, line, lasti), the agent's
        # included; only where the CPU clock was read (--live's split of
        # the step, _bottleneck_live)
        self.on_main_sample = None
        self._span = 0.0  # the wall time _on_cpu's shares are of
        self._late = 0.0  # how late this sample woke (its wait for the GIL and a CPU)
        self._own_sched = None  # this thread's schedstat (-1: unreadable)
        self._own_rq = None  # its run-queue wait at the previous reading
        self.after_sample = None  # called from the sampler thread after every sample
        self.busy = {}  # ident -> depth: threads doing the agent's own work now
        self.agent_samples = 0  # samples skipped because the thread did the agent's work
        self.paused_samples = 0  # samples not taken while torch or any module was imported (SAMPLING_PAUSED, importing)

    def start_thread(self):
        # A bare _thread, not a threading.Thread: the program's
        # threading.enumerate() and active_count() stay as without
        # bottleneck (nothing in the thread may call
        # threading.current_thread(), which would register it). Like a
        # daemon thread, it does not hold up the interpreter's exit.
        import _thread
        self._exited = threading.Event()
        self._thread = _thread.start_new_thread(self._run_until_stopped, ())

    def _run_until_stopped(self):
        try:
            self._run()
        finally:
            self._exited.set()

    def pause(self):
        """Stops sampling, the thread blocked without waking, until
        resume (_bottleneck_overhead's A/B)."""
        self._running.clear()

    def resume(self):
        self._running.set()

    def stop(self):
        self._stop.set()
        self._running.set()
        if self._thread is not None and self._thread != threading.get_ident():
            self._exited.wait(2.0)
        if self.end is None:
            self.end = time.time()

    def rel(self):
        return time.perf_counter() - self._t0

    def enter_own_work(self):
        """The calling thread does the agent's work (trace export, profiler
        start and steps, files) until leave_own_work: it is not sampled, so
        none of it shows up as the program's time."""
        ident = threading.get_ident()
        self.busy[ident] = self.busy.get(ident, 0) + 1

    def leave_own_work(self):
        ident = threading.get_ident()
        d = self.busy.get(ident, 0) - 1
        if d > 0:
            self.busy[ident] = d
        else:
            self.busy.pop(ident, None)

    def mark_step(self):
        """A step of the window ended: its samples so far are its steps'."""
        with self.lock:
            self._since_step, self._since_step_th, self._since_step_n = {}, {}, 0

    def end_step(self, slow, window_step=None):
        """A step ended (any step, window or not) with samples in it or
        before it (most short steps have none, and the step's thread skips
        the call): when it was slow, its samples count as the
        slow steps' too (slow_count); the first step's, and all before it,
        as start-up's (startup_count); when it was the window's step
        number window_step, its window samples are that step's."""
        with self.lock:
            for key, n in self.this_step.items():
                c = self.stacks[key]
                c[9] += n if slow else 0
                c[10] += 0 if self.stepped else n
            if window_step is not None:
                for key, n in self._window_step.items():
                    self.window_steps.setdefault(key, []).append([window_step, n])
            self.this_step, self.stepped, self._window_step = {}, True, {}

    def drop_since_step(self):
        """The window ends with the program, after its last step: the
        samples since that step's end were taken after the loop (an
        evaluation, a final print), not in a step, and leave the window."""
        with self.lock:
            for key, (n, cpu, wait) in self._since_step.items():
                c = self.stacks[key]
                c[1] -= n
                c[3] -= cpu
                c[5] -= wait
            for ti, n in self._since_step_th.items():
                self.threads[ti]["window_samples"] -= n
            self.window_samples -= self._since_step_n
            self._since_step, self._since_step_th, self._since_step_n = {}, {}, 0

    def drop_window(self):
        """The window's samples so far were not of steps (the steps became
        another source's): they leave the window counts."""
        with self.lock:
            for c in self.stacks.values():
                c[1] = c[3] = c[5] = 0
            for t in self.threads:
                t["window_samples"] = 0
            self.window_samples = 0
            self.windows = []
            self._window_step, self.window_steps = {}, {}
            self._since_step, self._since_step_th, self._since_step_n = {}, {}, 0

    def set_window(self, on):
        if on and not self.in_window:
            self.windows.append([self.rel(), None])
        elif not on and self.in_window and self.windows:
            self.windows[-1][1] = self.rel()
        self.in_window = on

    def _thread_index(self, ident, names):
        name = names.get(ident, "")
        key = (ident, name)
        i = self._thread_idx.get(key)
        if i is None:
            t = threading._active.get(ident) if hasattr(threading, "_active") else None
            native = getattr(t, "native_id", None) if t is not None else None
            i = len(self.threads)
            self._thread_idx[key] = i
            self.threads.append({
                "id": ident, "native_id": native, "name": name,
                "role": thread_role(ident, name, self.main_ident),
                "samples": 0, "window_samples": 0, "cpu_samples": 0.0, "cpu_s": 0.0,
            })
        return i

    @staticmethod
    def thread_stacks():
        """Every thread's stack by ident, read as a sample reads it."""
        return dict(read_atomically(stacks_iter()))

    def sample_once(self, skip_ident=None, weight=1):
        """Samples every thread's stack once; outside the window the sample
        counts weight times (the intervals since the previous one)."""
        if SAMPLING_PAUSED[0] or importing():
            self.paused_samples += 1
            return
        names = {}
        skip = {skip_ident}
        for ident, t in list(getattr(threading, "_active", {}).items()):
            names[ident] = t.name
            if t.name.startswith("bottleneck-"):
                skip.add(ident)  # the agent's own threads
        busy, stacks = snapshot(self.busy)
        in_window = self.in_window
        w = 1 if in_window else weight
        cache = self._frame_ids
        with self.lock:
            for ident, frames in stacks:
                if ident in skip or ident in busy:
                    self.agent_samples += ident in busy
                    continue
                ids = []
                for code, line, _ in frames:
                    fid = cache.get((id(code), line))
                    if fid is None:
                        fid = self._frame_id(code, line)
                    if fid >= 0:
                        ids.append(fid)
                if not ids:
                    continue
                ids.reverse()
                ti = self._thread_index(ident, names)
                key = (ti, tuple(ids))
                c = self.stacks.get(key)
                if c is None:
                    c = self.stacks[key] = [0, 0, 0.0, 0.0, 0.0, 0.0, 0, 0.0, 0.0, 0, 0]
                c[0] += w
                self.this_step[key] = self.this_step.get(key, 0) + w
                th = self.threads[ti]
                th["samples"] += w
                on_cpu, waiting = self._on_cpu(ident, th)
                c[2] += on_cpu * w
                c[4] += waiting * w
                if self._last_stack.get(ident) == key:
                    c[6] += w
                    c[7] += on_cpu * w
                    c[8] += waiting * w
                self._last_stack[ident] = key
                th["cpu_samples"] += on_cpu * w
                if ident == self.main_ident and self.on_main_sample is not None and self._span > 0:
                    self.on_main_sample(frames, on_cpu * self._span, waiting * self._span, self._span, self._gil_wait())
                if in_window:
                    c[1] += 1
                    th["window_samples"] += 1
                    c[3] += on_cpu
                    c[5] += waiting
                    self._window_step[key] = self._window_step.get(key, 0) + 1
                    p = self._since_step.setdefault(key, [0, 0.0, 0.0])
                    p[0] += 1
                    p[1] += on_cpu
                    p[2] += waiting
                    self._since_step_th[ti] = self._since_step_th.get(ti, 0) + 1
            self.samples += w
            if in_window:
                self.window_samples += 1
                self._since_step_n += 1

    def _frame_id(self, code, line):
        """The frames table's id of a frame at line of code, added when new;
        -1 for the agent's own frames (left out of stacks)."""
        fn = code.co_filename
        if fn in AGENT_FILES:
            fid = -1
        else:
            # one row per frame whatever code object it came from: equal
            # code objects (a function compiled twice from the same text)
            # were one key when the code object was the key
            row = (fn, getattr(code, "co_qualname", code.co_name), line or 0, code.co_firstlineno)
            fid = self._frame_rows.get(row)
            if fid is None:
                fid = self._frame_rows[row] = len(self.frames)
                self.frames.append(list(row))
        self._frame_ids[(id(code), line)] = fid
        self._codes.append(code)  # its id stays its own while the cache holds it
        return fid

    def _on_cpu(self, ident, th):
        """The shares (0..1) of the wall time since the thread's previous
        sample that it ran on a CPU and, for the main thread, that it was
        runnable but waiting for one (other threads or processes held the
        CPUs); 0 when they cannot be measured.

        The clock is the kernel thread's, named by its TID (Linux's
        per-thread CPU clock id): pthread_getcpuclockid would read the
        thread's pthread struct, gone if the thread has just exited. The
        main thread's schedstat gives both its CPU time and its run-queue
        wait, so that a line on a busy machine is not taken for a line
        that blocks."""
        self._span = 0.0
        tid = th.get("native_id")
        if not self._cpu_clock or not tid:
            return 0.0, 0.0
        wait = 0.0
        try:
            if ident == self.main_ident and self._sched_fd != -1:
                if self._sched_fd is None:
                    self._sched_fd = os.open("/proc/self/task/%d/schedstat" % tid, os.O_RDONLY)
                cpu_ns, wait_ns = os.pread(self._sched_fd, 128, 0).split()[:2]
                cpu, wait = int(cpu_ns) / 1e9, int(wait_ns) / 1e9
            else:
                cpu = time.clock_gettime((~tid << 3) | 6)  # MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)
        except (OSError, OverflowError, ValueError):
            if ident == self.main_ident and self._sched_fd is None:
                self._sched_fd = -1  # no schedstat: the CPU clock alone, from the next sample
            return 0.0, 0.0
        wall = time.perf_counter()
        last = self._cpu_last.get(ident)
        self._cpu_last[ident] = (wall, cpu, wait)
        if last is None or wall <= last[0]:
            return 0.0, 0.0
        d_cpu = max(0.0, cpu - last[1])
        th["cpu_s"] += d_cpu
        span = self._span = wall - last[0]
        return min(1.0, d_cpu / span), min(1.0, max(0.0, wait - last[2]) / span)

    def _gil_wait(self):
        """How long this thread waited for the GIL before this sample: how
        late it woke less its wait for a CPU since the previous reading
        (its schedstat; without it, the whole lateness)."""
        fd = self._own_sched
        try:
            if fd is None:
                fd = self._own_sched = os.open("/proc/self/task/%d/schedstat" % threading.get_native_id(), os.O_RDONLY)
            if fd == -1:
                return self._late
            rq = int(os.pread(fd, 128, 0).split()[1]) / 1e9
        except (OSError, AttributeError, ValueError, IndexError):
            self._own_sched = -1
            return self._late
        last, self._own_rq = self._own_rq, rq
        return self._late if last is None else max(0.0, self._late - (rq - last))

    def _run(self):
        me = threading.get_ident()
        nxt = time.perf_counter()
        last_tick = nxt
        while True:
            if not self._running.is_set():
                self._running.wait()
                if self._stop.is_set():
                    return
                nxt = time.perf_counter()
            weight = 1 if self.in_window else self.weight
            period = self.window_interval if self.in_window else self.interval * weight
            nxt += period
            delay = nxt - time.perf_counter()
            if delay <= 0:
                # Fell behind (the last sample waited for the GIL or a CPU,
                # as on a loaded machine): skip the missed ticks. Sampling
                # again at once would not release the GIL in between (a
                # zero-timeout wait keeps it), so the program's threads
                # would not run between the two samples, and the second
                # would show the line they stopped at as blocked.
                delay = period
                nxt = time.perf_counter() + delay
            if self._stop.wait(delay):
                return
            if not self._running.is_set():
                continue
            t0 = time.perf_counter()
            self._late = max(0.0, t0 - nxt)
            try:
                self.sample_once(skip_ident=me, weight=weight)
            except Exception:
                pass
            if self.after_sample is not None:
                try:
                    self.after_sample()
                except Exception:
                    pass
            t1 = time.perf_counter()
            self.sampling_cost += t1 - t0
            if self.budget > 0 and not self.in_window:
                self._within_budget(t1 - t0)
            if self.on_tick is not None and t1 - last_tick >= 1.0:
                last_tick = t1
                try:
                    self.on_tick()
                except Exception:
                    pass

    def _within_budget(self, cost):
        """Sets weight so that a sample's cost, smoothed over the samples
        outside the window, stays within budget of its period."""
        self._cost = cost if self._cost is None else 0.9 * self._cost + 0.1 * cost
        self._outside += 1
        if self._outside < self.FULL_SAMPLES:
            return
        want = self._cost / (self.budget * self.interval)
        self.weight = max(1, min(self.MAX_WEIGHT, int(-(-want // 1))))

    def to_json(self):
        with self.lock:
            stacks = []
            for k, v in self.stacks.items():
                st = {"thread": k[0], "frames": list(k[1]), "count": v[0], "window_count": v[1],
                      "cpu_count": round(v[2], 3), "window_cpu_count": round(v[3], 3),
                      "wait_count": round(v[4], 3), "window_wait_count": round(v[5], 3),
                      "repeat_count": v[6], "repeat_cpu_count": round(v[7], 3), "repeat_wait_count": round(v[8], 3),
                      "slow_count": v[9], "startup_count": v[10]}
                if k in self.window_steps:
                    st["window_steps"] = self.window_steps[k]
                stacks.append(st)
            stacks.sort(key=lambda s: -s["count"])
            end = self.end if self.end is not None else time.time()
            windows = [[w[0], w[1] if w[1] is not None else self.rel()] for w in self.windows]
            return {
                "format": "bottleneck.pyprofile",
                "version": FORMAT_VERSION,
                "profiler": "sample",
                "interval_s": self.interval,
                "window_interval_s": self.window_interval,
                "weight": self.weight,
                "start_unix": self.start,
                "duration_s": end - self.start,
                "samples": self.samples,
                "window_samples": self.window_samples,
                "windows": windows,
                "sampling_cost_s": self.sampling_cost,
                "agent_work_samples": self.agent_samples,
                "import_paused_samples": self.paused_samples,
                "cpu_clock": self._cpu_clock,
                "repeats": True,
                "pid": os.getpid(),
                "frames": [_frame_json(f) for f in self.frames],
                "threads": [dict(t) for t in self.threads],
                "stacks": stacks,
            }


def pstats_to_json(stats, start, duration, windows):
    """Convert pstats.Stats(...).stats into the cprofile variant of the
    pyprofile format: a frames table plus one record per function."""
    frames = []
    index = {}

    def fid(key):
        i = index.get(key)
        if i is None:
            i = index[key] = len(frames)
            fn, line, func = key
            frames.append({"file": fn, "func": func, "line": line, "fline": line})
        return i

    functions = []
    for key, (cc, nc, tt, ct, callers) in stats.items():
        if is_agent_file(key[0]):
            continue
        rec = {"frame": fid(key), "ncalls": nc, "pcalls": cc, "tottime_s": tt, "cumtime_s": ct, "callers": []}
        for ckey, cval in callers.items():
            if isinstance(cval, tuple):
                c_cc, c_nc, c_tt, c_ct = cval
            else:
                c_cc = c_nc = cval
                c_tt = c_ct = 0.0
            rec["callers"].append({"frame": fid(ckey), "ncalls": c_nc, "tottime_s": c_tt, "cumtime_s": c_ct})
        functions.append(rec)
    functions.sort(key=lambda r: -r["tottime_s"])
    return {
        "format": "bottleneck.pyprofile",
        "version": FORMAT_VERSION,
        "profiler": "cprofile",
        "interval_s": 0,
        "start_unix": start,
        "duration_s": duration,
        "windows": windows,
        "pid": os.getpid(),
        "frames": frames,
        "threads": [{"id": threading.main_thread().ident, "name": "MainThread", "role": "main"}],
        "functions": functions,
    }


def _frame_json(f):
    """A frame of the sampler's table; the program's own lines carry their
    source text, so that two runs of an edited program match lines that
    moved (bottleneck diff)."""
    d = {"file": f[0], "func": f[1], "line": f[2], "fline": f[3]}
    if f[2] and not f[0].startswith("<") and not is_library_file(f[0]) and not is_agent_file(f[0]):
        try:
            import linecache
            text = linecache.getline(f[0], f[2]).strip()
        except Exception:
            text = ""
        if text:
            d["text"] = text[:200]
    return d
