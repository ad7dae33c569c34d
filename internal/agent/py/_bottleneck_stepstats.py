"""Whole-run per-step statistics for bottleneck's agent: memory at every step
boundary, Python garbage-collection pauses, and the call sites of torch's
thread settings (docs/run.md, "Step statistics").

The agent calls StepStats.on_step at each step boundary from the step's
thread. It reads the process RSS (Linux /proc/self/statm) and, once CUDA is
initialised by the program, the bytes torch's allocator holds for tensors
(at every step of the first 32 and of the window, else now and then: see
_READ_EVERY_S), and adds per step the garbage-collection pauses that
gc.callbacks timed during the step. It
also looks, twice in the run, at the containers and autograd graphs held by
the training loop's frame, to name the variable (and its line) that grows
every step when memory grows.

Standard library only; Python 3.9+; everything is best-effort: an error
disables the part that failed and is reported in "errors".
"""

import gc
import linecache
import os
import re
import sys
import threading
import time

_MAX_ROWS = 20000  # rows kept; beyond, the stride doubles and rows off it are dropped
_SITE_PAUSE_S = 0.0002  # collections at least this long record their calling line
_PROBE_STEPS = (8, 16)  # steps at which the loop frame's variables are measured
_GRAPH_CAP = 5000  # autograd nodes counted per tensor, at most
# A graph kept across steps (total += loss, an RNN state never detached)
# holds every step's nodes: twice as many at the second probe as at the
# first. A graph built anew each step varies only with the data (an MoE's
# routing: 253 nodes, then 295), and is no leak.
_KEPT_GRAPH_GROWTH = 1.5
_MAX_SITES = 20
# What a step boundary reads (memory; the step thread's schedstat,
# SchedMeter) is read at every step of the window and its warm-up (memory
# also in the first _MEMORY_FIRST), else at most every _READ_EVERY_S (the
# steps between have no memory, and share the next schedstat reading):
# read right after a step the calls cost far more than in a loop. On the
# 2-core CPU, after a 4 ms step of a CNN: schedstat 38 us (1 us in a
# loop); on an H100 machine, after a 1.5 ms CUDA step: schedstat 10-15
# us, /proc/self/statm 12-20, torch.cuda.memory_allocated() 280-300 (it
# flattens and sorts every allocator statistic in Python), the nested
# statistics read here 76-92. The memory trend needs 8 readings.
_MEMORY_FIRST = 32
_READ_EVERY_S = 0.05


class StepStats:
    def __init__(self, is_internal_file):
        """is_internal_file(filename) -> True for agent, standard-library and
        torch files: the responsible line is the innermost other frame."""
        self._internal = is_internal_file
        self.pid = os.getpid()
        self.rows = []  # [step, rss bytes, cuda allocated bytes or None, gc s, collections, in window]
        self.stride = 1
        self.last_gc_s = 0.0  # the latest step's GC pause
        self.memory, self._memory_at = (None, None), 0.0  # the latest (rss, cuda) read, and when
        self.errors = []
        self.gc_total_s = 0.0
        self.gc_by_gen = {}  # generation -> [collections, seconds]
        self.gc_sites = {}  # (file, line) -> {"file","line","func","count","pause_s","explicit"}
        self._gc_step_s = 0.0
        self._gc_step_n = 0
        self._gc_start = None
        # the agent sets it: true while the calling thread does the agent's
        # own work (the profiler's start, trace export), whose collections
        # are not the step's
        self.agent_busy = lambda: False
        self._statm = None
        self._page = 4096
        self._torch = None
        self._no_cuda = False
        self._probe = {}  # name -> (kind, size, site) from the first probe
        self.growth = []  # variables of the loop frame that grow every step
        self.thread_calls = []  # torch.set_num_threads / set_num_interop_threads call sites
        self.setting_calls = []  # torch.set_default_dtype / set_anomaly_enabled call sites
        try:
            self._page = os.sysconf("SC_PAGE_SIZE")
            self._statm = os.open("/proc/self/statm", os.O_RDONLY)
        except (OSError, ValueError, AttributeError):
            self._statm = None
        self.sched = SchedMeter()
        gc.callbacks.append(self._on_gc)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self.stop)

    def on_torch(self, torch):
        """Record the call sites of the settings the diagnosis points at:
        torch.set_num_threads and set_num_interop_threads (thread_calls),
        torch.set_default_dtype and torch.set_anomaly_enabled (setting_calls;
        torch.autograd.set_detect_anomaly and detect_anomaly call the latter).
        The wrappers call the originals unchanged."""
        for name, calls, key, value in (
                ("set_num_threads", self.thread_calls, "value", _int_arg),
                ("set_num_interop_threads", self.thread_calls, "value", _int_arg),
                ("set_default_dtype", self.setting_calls, "arg", _str_arg),
                ("set_anomaly_enabled", self.setting_calls, "arg", _str_arg)):
            orig = getattr(torch, name, None)
            if orig is None or getattr(orig, "_bottleneck_wrapped", False):
                continue
            setattr(torch, name, self._call_recorder(name, orig, calls, key, value))

    def _call_recorder(self, name, orig, calls, key, value):
        import functools

        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            if len(calls) < _MAX_SITES and os.getpid() == self.pid:
                try:
                    f = sys._getframe(1)
                    while f is not None and self._internal(f.f_code.co_filename):
                        f = f.f_back
                    if f is not None:
                        calls.append({
                            "call": name, key: value(args),
                            "file": f.f_code.co_filename, "line": f.f_lineno or 0,
                            "func": getattr(f.f_code, "co_qualname", f.f_code.co_name)})
                except Exception:
                    pass
            return orig(*args, **kwargs)
        wrapper._bottleneck_wrapped = True
        return wrapper

    def restart(self):
        """The steps so far were not steps (the step source switched to the
        optimizer): their rows, loop probe and window CPU wait go."""
        self.rows, self.stride = [], 1
        self._probe, self.growth = {}, []
        self.sched.window, self.sched._window_load = None, None

    def stop(self):
        """Stop timing collections (forked children, program end)."""
        self.sched.stop()
        try:
            gc.callbacks.remove(self._on_gc)
        except ValueError:
            pass

    # -- garbage collection -------------------------------------------------
    def _on_gc(self, phase, info, _clock=time.perf_counter):
        # runs at every collection (gen 0 ones included): kept minimal
        if phase == "start":
            self._gc_start = _clock()
            return
        start = self._gc_start
        if start is None:
            return
        dur = _clock() - start
        self._gc_start = None
        self.gc_total_s += dur
        g = self.gc_by_gen.get(info["generation"])
        if g is None:
            g = self.gc_by_gen[info["generation"]] = [0, 0.0]
        g[0] += 1
        g[1] += dur
        if self.agent_busy():
            return
        self._gc_step_s += dur
        self._gc_step_n += 1
        # sites only once the loop runs: start-up collections (imports,
        # building data) are not the step's
        if dur >= _SITE_PAUSE_S and self.rows and os.getpid() == self.pid:
            self._gc_site(sys._getframe().f_back, dur)

    def _gc_site(self, frame, dur):
        f = frame
        while f is not None and self._internal(f.f_code.co_filename):
            f = f.f_back
        if f is None:
            return
        key = (f.f_code.co_filename, f.f_lineno or 0)
        rec = self.gc_sites.get(key)
        if rec is None:
            if len(self.gc_sites) >= 4 * _MAX_SITES:
                return
            src = linecache.getline(key[0], key[1])
            rec = self.gc_sites[key] = {"file": key[0], "line": key[1],
                                        "func": getattr(f.f_code, "co_qualname", f.f_code.co_name),
                                        "count": 0, "pause_s": 0.0, "explicit": "collect(" in src}
        rec["count"] += 1
        rec["pause_s"] += dur

    # -- memory ---------------------------------------------------------------
    def _rss(self):
        if self._statm is None:
            return None
        try:
            return int(os.pread(self._statm, 128, 0).split()[1]) * self._page
        except (OSError, ValueError, IndexError):
            self._statm = None
            return None

    def _cuda(self):
        if self._no_cuda:
            return None
        t = self._torch
        if t is None:
            t = sys.modules.get("torch")
            if t is None or not hasattr(t, "cuda"):
                return None
            self._torch = t
            # a build without CUDA never has it: not asked again (4 us a step)
            v = getattr(t, "version", None)
            self._no_cuda = getattr(v, "cuda", None) is None and getattr(v, "hip", None) is None
        try:
            if t.cuda.is_initialized():
                # the allocator's nested statistics, not memory_allocated():
                # that flattens and sorts all of them in Python first
                return int(t.cuda.memory_stats_as_nested_dict()["allocated_bytes"]["all"]["current"])
        except Exception:
            pass
        return None

    # -- step boundary --------------------------------------------------------
    def on_step(self, step, in_window, exact=True, now=None, warming=False):
        """One step ended, at now (the caller's perf_counter: one clock
        read a boundary, 1.5 us each right after a step on an H100
        machine); called from the step's thread. Returns the step thread's time waiting for a
        CPU over that step (None: unknown; see SchedMeter.on_step for exact
        and the steps a wait covers)."""
        if now is None:
            now = time.perf_counter()
        sched = self.sched
        if exact or now >= sched.next_read:
            wait = sched.on_step(in_window, exact, now, warming)
        else:  # its on_step, without the call
            sched.unread += 1
            wait = None
        self.last_gc_s = self._gc_step_s  # the --live view's (_bottleneck_live)
        if step % self.stride == 0:
            # a tuple of numbers: the collector stops tracking it at its
            # first collection, so thousands of rows neither add to the
            # older generations' work nor bring a full collection forward
            # (as lists, an 8000-step run made one more full collection)
            rss = cuda = None
            if exact or step <= _MEMORY_FIRST or now - self._memory_at >= _READ_EVERY_S:
                rss, cuda = self._rss(), self._cuda()
                self.memory, self._memory_at = (rss, cuda), now
            self.rows.append((step, rss, cuda, round(self._gc_step_s, 6), self._gc_step_n, bool(in_window)))
            if len(self.rows) >= _MAX_ROWS:
                self.stride *= 2
                self.rows = [r for r in self.rows if r[0] % self.stride == 0]
        self._gc_step_s = 0.0
        self._gc_step_n = 0
        if step in _PROBE_STEPS:
            try:
                self._probe_loop(step, sys._getframe(1))
            except Exception as e:
                self.errors.append("memory probe: %s: %s" % (type(e).__name__, e))
        return wait

    def _probe_loop(self, step, frame):
        """Measure the loop frame's containers and autograd graphs; at the
        second probe, keep those that grew."""
        f = frame
        while f is not None and self._internal(f.f_code.co_filename):
            f = f.f_back
        if f is None:
            return
        sizes = {}
        local = f.f_locals
        for scope, names in (("local", local), ("global", f.f_globals if f.f_globals is not local else {})):
            for name, v in list(names.items()):
                kind, size = _measure(v)
                if kind is not None:
                    sizes[(scope, name)] = (kind, size, v)
        if sys.version_info < (3, 13) and local is not f.f_globals:
            # before 3.13, f_locals is a snapshot dict cached on the frame: it
            # would keep this step's tensors alive until the loop ends (a
            # trace function refreshes it before it reads it)
            local.clear()
        del local
        if step == _PROBE_STEPS[0]:
            self._probe = {k: (kind, size) for k, (kind, size, _) in sizes.items()}
            return
        steps = _PROBE_STEPS[1] - _PROBE_STEPS[0]
        for (scope, name), (kind, size, v) in sizes.items():
            before = self._probe.get((scope, name))
            if before is None or before[0] != kind or size <= before[1]:
                continue
            if kind == "autograd graph" and size < _KEPT_GRAPH_GROWTH * before[1]:
                continue
            holds, nbytes = _holds(v, kind)
            if holds is None:
                continue  # a growing list of floats or strings costs no tensor memory
            file, line = _writer_line(f, name, kind)
            self.growth.append({"name": name, "scope": scope, "kind": kind,
                                "per_step": (size - before[1]) / steps, "size": size,
                                "holds": holds, "item_bytes": nbytes,
                                "file": file, "line": line,
                                "func": getattr(f.f_code, "co_qualname", f.f_code.co_name)})
        self._probe = {}

    def evidence(self):
        gens = {str(k): {"collections": v[0], "pause_s": v[1]} for k, v in sorted(self.gc_by_gen.items())}
        sites = sorted(self.gc_sites.values(), key=lambda r: -r["pause_s"])[:_MAX_SITES]
        return {
            "columns": ["step", "rss_bytes", "cuda_allocated_bytes", "gc_pause_s", "gc_collections", "in_window"],
            "stride": self.stride,
            "rows": self.rows,
            "gc": {"pause_s": self.gc_total_s, "generations": gens, "sites": sites,
                   "frozen": gc.get_freeze_count() if hasattr(gc, "get_freeze_count") else None},
            "growth": self.growth,
            "thread_calls": self.thread_calls,
            "setting_calls": self.setting_calls,
            "errors": self.errors,
        }


def _int_arg(args):
    return args[0] if args and isinstance(args[0], int) else None


def _str_arg(args):
    """The first argument as the program wrote it: torch.float64, True."""
    return str(args[0])[:64] if args else None


def _is_tensor(v):
    t = sys.modules.get("torch")
    return t is not None and isinstance(v, t.Tensor)


def _graph_size(t):
    """Autograd nodes reachable from a tensor's grad_fn (capped)."""
    fn = getattr(t, "grad_fn", None)
    if fn is None:
        return 0
    seen, todo = {id(fn)}, [fn]
    while todo and len(seen) < _GRAPH_CAP:
        n = todo.pop()
        for nxt, _ in getattr(n, "next_functions", ()):
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                todo.append(nxt)
    return len(seen)


def _measure(v):
    """(kind, size) of a value that can grow across steps, else (None, 0)."""
    if isinstance(v, (list, dict, set)) or type(v).__name__ == "deque":
        try:
            return type(v).__name__, len(v)
        except Exception:
            return None, 0
    if _is_tensor(v) and getattr(v, "grad_fn", None) is not None:
        return "autograd graph", _graph_size(v)
    return None, 0


def _holds(v, kind):
    """What a grown container's newest item holds ("tensor with autograd
    graph", "tensor") and its tensor bytes; None when it holds no tensor."""
    if kind == "autograd graph":
        return "tensor with autograd graph", 0
    try:
        if isinstance(v, dict):
            item = v[next(reversed(v))]
        elif isinstance(v, set):
            item = next(iter(v))
        else:
            item = v[-1]
    except Exception:
        return None, 0
    items = list(item.values()) if isinstance(item, dict) else list(item) if isinstance(item, (list, tuple)) else [item]
    tensors = [x for x in items[:16] if _is_tensor(x)]
    if not tensors:
        return None, 0
    nbytes = 0
    for x in tensors:
        try:
            nbytes += x.element_size() * x.nelement()
        except Exception:
            pass
    graph = any(getattr(x, "grad_fn", None) is not None for x in tensors)
    return ("tensor with autograd graph" if graph else "tensor"), nbytes


def _writer_line(frame, name, kind):
    """The line of frame's function that adds to the variable name."""
    code = frame.f_code
    file = code.co_filename
    n = re.escape(name)
    if kind == "autograd graph":
        pat = re.compile(r"(^|[^\w.])%s\s*(\+=|-=|\*=|=\s*%s\s*[-+*])" % (n, n))
    else:
        pat = re.compile(r"(^|[^\w.])%s\s*(\.(append|extend|insert|add|update|setdefault|appendleft)\s*\(|\[.*\]\s*=[^=]|\+=)" % n)
    first = code.co_firstlineno
    last = max((ln for _, _, ln in code.co_lines() if ln), default=frame.f_lineno) if hasattr(code, "co_lines") else first + 500
    for ln in range(first, last + 1):
        src = linecache.getline(file, ln)
        if pat.search(src.split("#", 1)[0]):
            return file, ln
    return file, frame.f_lineno or 0


class SchedMeter:
    """The step thread's scheduling (Linux schedstat: time on a CPU, time
    runnable but waiting for one), the process's CPU time and the load
    average, from the first step boundary to the end and over the steps
    recorded in the profiler's window (docs/run.md, "CPU wait")."""

    def __init__(self):
        self._fd = None
        self._stat_fd = None  # /proc/self/stat (_minor_faults)
        self._first = None  # reading at the first step boundary
        self._last = None  # reading at the last boundary read
        self.unread = 0  # boundaries passed since it
        self.next_read = 0.0  # perf_counter from which a boundary is read again
        self.covered = 1  # the steps the last wait returned is the mean of
        self.window = None  # summed over the window's steps
        # summed over the readings of the other steps, but for the
        # profiler's warm-up and the one after its trace's export (dirty):
        # the profiler's own allocations fault pages in too
        self.steps = None
        self.dirty = False
        self._window_load = None
        self.last_cpu = None  # the step thread's CPU time over the last step (the --live view's)
        self._off = not os.path.isdir("/proc/self/task")
        if self._off:
            self.next_read = float("inf")

    def _read(self, now):
        """(wall s, thread cpu s, thread wait s, process cpu s, process
        system s, process minor faults) or None."""
        try:
            cpu_ns, wait_ns = os.pread(self._fd, 128, 0).split()[:2]
            t = os.times()
            return (now, int(cpu_ns) / 1e9, int(wait_ns) / 1e9, t[0] + t[1], t[1], self._minor_faults())
        except (OSError, ValueError, TypeError):
            self.stop()
            return None

    def _minor_faults(self):
        """The process's minor page faults so far (/proc/self/stat's minflt:
        pages first touched, each one zeroed by the kernel), 0 when
        unreadable. The file stays open: one pread a reading."""
        if self._stat_fd is None:
            try:
                self._stat_fd = os.open("/proc/self/stat", os.O_RDONLY)
            except OSError:
                self._stat_fd = -1
        if self._stat_fd < 0:
            return 0
        try:
            # after the command's closing parenthesis: state ppid pgrp session tty_nr tpgid flags minflt
            return int(os.pread(self._stat_fd, 512, 0).rsplit(b")", 1)[1].split()[7])
        except (OSError, ValueError, IndexError):
            return 0

    def on_step(self, in_window, exact=True, now=None, warming=False):
        """Reads at a step boundary (now: its perf_counter); returns the
        time the step thread waited for a CPU over the step that just ended
        (None: not measured). Unless exact (the steps recorded and
        warming up for the window), a step that ends before next_read,
        _READ_EVERY_S after the last reading, is not read:
        the next reading returns the mean wait of the steps since it, and
        covered says how many (the caller gives the others that mean)."""
        if self._off:
            return None
        if now is None:
            now = time.perf_counter()
        if not exact and now < self.next_read:
            self.unread += 1
            return None
        if self._fd is None:  # the step thread, at its first step boundary
            try:
                self._fd = os.open("/proc/self/task/%d/schedstat" % threading.get_native_id(), os.O_RDONLY)
            except (OSError, AttributeError):
                self.stop()
                return None
        cur = self._read(now)
        if cur is None:
            return None
        wait = None
        self.covered, self.unread = self.unread + 1, 0
        self.next_read = now + _READ_EVERY_S
        if self._first is None:
            self._first = cur
        else:
            wait = round((cur[2] - self._last[2]) / self.covered, 6)
            self.last_cpu = (cur[1] - self._last[1]) / self.covered
            if in_window:  # the step that just ended was recorded (its share, when it shared the reading)
                self.window = _span(self._last, cur, self.window, 1 / self.covered)
                self._window_load = _loadavg()
            elif not warming and not self.dirty:
                self.steps = _span(self._last, cur, self.steps)
            self.dirty = False
        self._last = cur
        return wait

    def stop(self):
        """No more readings (a forked child's file would be the parent's)."""
        self._off, self.next_read = True, float("inf")
        for fd in (self._fd, self._stat_fd):
            if fd is not None and fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._fd = self._stat_fd = None

    def evidence(self):
        """The "cpu_wait" record, or None when nothing was measured."""
        end = self._read(time.perf_counter()) if self._fd is not None else self._last
        if self._first is None or end is None:
            return None
        run = _span(self._first, end, None)
        run["load_average"] = _loadavg()
        if self.window is not None:
            self.window["load_average"] = self._window_load
        return {"run": run, "window": self.window, "steps": self.steps}


def _span(a, b, acc, share=1.0):
    """Adds share of the readings' difference to acc (a new record when
    None)."""
    acc = acc or {"wall_s": 0.0, "cpu_s": 0.0, "wait_s": 0.0, "process_cpu_s": 0.0, "process_system_s": 0.0,
                  "minor_faults": 0.0}
    for k, i in (("wall_s", 0), ("cpu_s", 1), ("wait_s", 2), ("process_cpu_s", 3), ("process_system_s", 4),
                 ("minor_faults", 5)):
        acc[k] = round(acc[k] + share * (b[i] - a[i]), 6)
    return acc


def _loadavg():
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None
