"""bottleneck agent, DataLoader workers: sample the worker processes'
stacks (embedded in the bottleneck binary, loaded by _bottleneck_agent).

The agent replaces torch.utils.data._utils.worker._worker_loop (the
function DataLoader iterators look up as a module attribute when they start
their workers) with a WorkerLoop. In the worker, WorkerLoop runs the
original loop unchanged (same arguments, return value, exceptions, exit)
while the agent's Sampler records the worker's stacks, and writes them to
pyworkers-<tag>/<pid>.json in the run directory: when it starts, about
every second while it has new samples, as soon as it stops fetching
batches (a worker that DataLoader or the program's exit terminates loses
nothing it fetched: torch's SIGTERM handler in workers exits at once) and
when the loop returns or raises (workers leave it on shutdown). Only
DataLoader workers run a WorkerLoop: other multiprocessing children are
never sampled.

Fork workers call the WorkerLoop object inherited from the parent. Spawn
and forkserver workers unpickle it in a fresh interpreter that does not
have the agent on sys.path: WorkerLoop pickles as an expression that loads
this file by path and builds the loop again; if that fails (the file is
gone), the worker runs torch's own loop and records nothing (the main
process lists the missing worker profile in evidence-<tag>.json).

Documented in docs/run.md ("DataLoader workers").
"""
import os
import sys
import threading
import time

# An idle worker's write comes at most this often (see _after_sample).
_IDLE_WRITE_S = 0.5

_HERE = os.path.dirname(os.path.abspath(__file__))
WORKERS_DIR = "pyworkers-%s"  # in the run directory, per process tag
_agentmod = None  # _bottleneck_agent, set by it or loaded on first use

# Unpickled in spawn/forkserver workers: load this file by path and rebuild
# the loop, else fall back to torch's loop (never fail the worker).
_REBUILD_SRC = """
try:
    import importlib.util as _u
    _s = _u.spec_from_file_location("_bottleneck_workers", path)
    _m = _u.module_from_spec(_s)
    _s.loader.exec_module(_m)
    loop = _m.WorkerLoop(None, cfg)
except Exception as _e:
    import torch.utils.data._utils.worker as _w
    loop = getattr(_w._worker_loop, "orig", _w._worker_loop)
    try:
        import os as _os
        _d = _os.path.join(cfg["run_dir"], "pyworkers-%s" % cfg["tag"])
        _os.makedirs(_d, exist_ok=True)
        with open(_os.path.join(_d, "error-%d.txt" % _os.getpid()), "w") as _f:
            _f.write("%s: %s" % (type(_e).__name__, _e))
    except Exception:
        pass
"""
_REBUILD = "exec(src, ns) or ns['loop']"

_FETCH = os.path.join("torch", "utils", "data", "_utils", "fetch.py")

# _worker_loop's positional parameters (torch 2.x) the profile names
_ARG_NAMES = ("dataset_kind", "dataset", "index_queue", "data_queue", "done_event", "auto_collation",
              "collate_fn", "drop_last", "base_seed", "init_fn", "worker_id", "num_workers")


def agent_module():
    global _agentmod
    if _agentmod is None:
        import importlib.util
        spec = importlib.util.spec_from_file_location("_bottleneck_agent", os.path.join(_HERE, "_bottleneck_agent.py"))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _agentmod = mod
    return _agentmod


def install(agentmod, run_dir, tag, interval, flush_s):
    """Replace torch's worker loop with a WorkerLoop; returns it (None when
    this torch has no _worker_loop)."""
    global _agentmod
    _agentmod = agentmod
    import torch.utils.data._utils.worker as w
    orig = getattr(w, "_worker_loop", None)
    if orig is None or isinstance(orig, WorkerLoop):
        return None
    cfg = {"run_dir": run_dir, "tag": tag, "interval": float(interval), "flush_s": float(flush_s)}
    loop = WorkerLoop(orig, cfg)
    w._worker_loop = loop
    return loop


def uninstall(loop):
    import torch.utils.data._utils.worker as w
    if loop is not None and w._worker_loop is loop:
        w._worker_loop = loop.orig


class WorkerLoop(object):
    """Stands in for torch's _worker_loop; see the module docstring."""

    def __init__(self, orig, cfg):
        self.orig = orig
        self.cfg = cfg
        # pickle looks functions up by module and name: where torch keeps it
        self.__module__ = "torch.utils.data._utils.worker"
        self.__name__ = self.__qualname__ = "_worker_loop"

    def _original(self):
        if self.orig is not None:
            return self.orig
        import torch.utils.data._utils.worker as w
        f = w._worker_loop
        return getattr(f, "orig", f) if isinstance(f, WorkerLoop) else f

    def __call__(self, *args, **kwargs):
        orig = self._original()
        rec = None
        try:
            rec = Recorder(self.cfg, args, kwargs)
            rec.start()
        except Exception:
            rec = None
        try:
            return orig(*args, **kwargs)
        finally:
            if rec is not None:
                rec.stop()

    def __reduce__(self):
        return (eval, (_REBUILD, {"src": _REBUILD_SRC,
                                  "ns": {"path": os.path.join(_HERE, "_bottleneck_workers.py"), "cfg": self.cfg}}))


class Recorder(object):
    """One worker's sampler and its profile file."""

    def __init__(self, cfg, args, kwargs):
        am = agent_module()
        self.am = am
        self.cfg = cfg
        self.path = os.path.join(cfg["run_dir"], WORKERS_DIR % cfg["tag"], "%d.json" % os.getpid())
        info = dict(zip(_ARG_NAMES, args))
        info.update((k, v) for k, v in kwargs.items() if k in _ARG_NAMES)
        ds = info.get("dataset")
        if type(ds) is list and len(ds) == 1:
            ds = ds[0]  # newer torch passes a holder list the loop pops
        self.worker = {
            "worker_id": info.get("worker_id") if isinstance(info.get("worker_id"), int) else None,
            "num_workers": info.get("num_workers") if isinstance(info.get("num_workers"), int) else None,
            "dataset": type(ds).__name__ if ds is not None else None,
            "start_method": _start_method(),
            "ppid": os.getppid(),
        }
        self.sampler = am.Sampler(cfg["interval"], main_ident=threading.get_ident())
        self.sampler.on_tick = self._tick
        self.sampler.after_sample = self._after_sample
        self._main = threading.get_ident()
        self._idle = 0  # samples since the worker last fetched
        self._dirty = False  # fetch samples not yet written
        self._last = time.perf_counter()
        self._written = -1
        self._write_lock = threading.Lock()
        self.done = False

    def start(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.write()  # the worker started sampling (see missing())
        self.sampler.start_thread()

    def _tick(self):
        # sampler thread, about once a second. DataLoader ends workers that
        # do not leave the loop in time with SIGTERM, and torch's own
        # SIGTERM handler in the worker exits at once (_exit): what was
        # written last is what remains
        if self.sampler.samples != self._written and time.perf_counter() - self._last >= self.cfg.get("flush_s", 1.0):
            self.write()

    def _after_sample(self):
        # a worker that stops fetching (the epoch's indices are done, or
        # the program ends and will terminate it) writes at once: a
        # terminated worker loses nothing it fetched
        # the stacks read as the sampler reads them, in one call of C code:
        # a walk of f_back in Python gives the GIL away at its switch
        # points, and CPython 3.11 can crash on a frame popped meanwhile
        stack = self.sampler.thread_stacks().get(self._main, ())
        if any(frame[0].co_filename.endswith(_FETCH) for frame in stack):
            self._idle = 0
            self._dirty = True
            self.sampler.weight = 1
        else:
            # three idle samples in a row, or one when the last write is
            # _IDLE_WRITE_S old: a program that ends right after its last
            # batch has its persistent workers terminated two samples
            # after they went idle (CI), and a worker idling between
            # batches still writes at most every _IDLE_WRITE_S
            self._idle += 1
            if self._dirty and (self._idle >= 3 or time.perf_counter() - self._last >= _IDLE_WRITE_S):
                self._dirty = False
                self.write()
            if not self._dirty:
                # idle, its fetches written: sampled less often, each
                # sample counting the intervals since the last
                # (Sampler.weight), up to MAX_WEIGHT; a worker that keeps
                # up is idle most of the time, and its samples cost the
                # step a CPU (4 workers feeding minGPT's adder on 2 CPUs:
                # 254 us each, 50 a second, 5% of a CPU in all)
                self.sampler.weight = min(self.sampler.MAX_WEIGHT, self.sampler.weight + 1)

    def write(self):
        with self._write_lock:
            d = self.sampler.to_json()
            d["worker"] = self.worker
            self.am.atomic_write_json(self.path, d)
            self._written = d["samples"]
            self._last = time.perf_counter()

    def stop(self):
        if self.done:
            return
        self.done = True
        try:
            self.sampler.stop()
            self.write()
        except Exception:
            pass


def _start_method():
    # the worker's process class names its start method (ForkProcess ...)
    try:
        import multiprocessing
        kind = type(multiprocessing.current_process()).__name__
        if kind.endswith("Process") and kind != "Process":
            return kind[:-len("Process")].lower()
        return multiprocessing.get_start_method(allow_none=True)
    except Exception:
        return None


def missing(run_dir, tag, loaders):
    """The "missing" entry of evidence-<tag>.json when loaders with workers
    ran but no worker wrote a profile (None otherwise)."""
    if not any((v.get("num_workers") or 0) > 0 for v in loaders):
        return None
    d = os.path.join(run_dir, WORKERS_DIR % tag)
    try:
        names = os.listdir(d)
    except OSError:
        names = []
    if any(n.endswith(".json") for n in names):
        return None
    why = "no DataLoader worker wrote a profile"
    for n in sorted(names):
        if n.startswith("error-"):
            try:
                with open(os.path.join(d, n)) as f:
                    why += " (%s)" % f.read(300).strip()
            except OSError:
                pass
            break
    return {"what": "DataLoader worker profile", "why": why}
