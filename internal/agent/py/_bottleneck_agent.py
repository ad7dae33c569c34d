"""bottleneck's in-process agent (embedded in the bottleneck binary).

It runs inside the user's Python process and records, without code changes:

* an environment summary (env-<tag>.json),
* a Python-level profile of the whole run: a wall-clock sampler of every
  thread's stack (default) or cProfile (pyprofile-<tag>.json, plus a
  standard .pstats file for cProfile),
* torch.profiler (Kineto) traces of a bounded window of steps, gzipped
  (trace-<tag>[.wN].pt.trace.json.gz),
* evidence for the diagnosis (evidence-<tag>.json): steps of the window with
  their DataLoader wait, DataLoader settings, CUDA implicit sync call sites.

<tag> is "rank<RANK>" (torchrun sets RANK), else "rank0"; when several
processes claim the same tag the later ones add "-pid<PID>".

Design rules: standard library only; Python 3.9+; torch 2.x (older torch and
no torch degrade: what cannot be recorded is listed under "missing" in
evidence-<tag>.json); never initialise CUDA on the program's behalf; every
file is written to a temporary name and renamed; forked children
(multiprocessing pools, any child) are never profiled by this module
(os.register_at_fork); DataLoader worker processes only are sampled by
_bottleneck_workers.py (pyworkers-<tag>/<pid>.json).

Documented in docs/run.md.
"""

import atexit
import gzip
import json
import os
import platform
import shutil
import signal
import sys
import threading
import time
import traceback
import types
import warnings

FORMAT_VERSION = 1
_AGENT_FILES = set()
_HERE = os.path.dirname(os.path.abspath(__file__))
for _name in ("_bottleneck_agent.py", "_bottleneck_boot.py", "sitecustomize.py", "_bottleneck_stepstats.py",
              "_bottleneck_inprocess.py", "_bottleneck_workers.py", "_bottleneck_frameworks.py"):
    _AGENT_FILES.add(os.path.join(_HERE, _name))

# Non-zero while `import torch` runs: the sampler then takes no sample.
# Two runs here ended with SIGSEGV inside that import while the sampler
# read the importing thread's frames (CPython 3.11 can crash following
# f_back of frames that C code creates and drops, as during extension
# module initialisation: python/cpython#111363).
_SAMPLING_PAUSED = [0]

_SYNC_MESSAGE = "called a synchronizing CUDA operation"
_LOCK_THRESHOLD = 8  # DataLoader batches / forwards before auto locks on them

# Environment variables worth reporting (exact names and prefixes).
_ENV_NAMES = (
    "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING", "RANK", "LOCAL_RANK", "WORLD_SIZE",
    "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES", "TOKENIZERS_PARALLELISM",
)
_ENV_PREFIXES = ("NCCL_", "TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "CUDNN_", "KINETO_")
_PACKAGES = (
    "numpy", "torchvision", "torchaudio", "lightning", "pytorch-lightning",
    "transformers", "accelerate", "deepspeed", "triton", "apex", "timm",
    "datasets", "nvidia-cudnn-cu12", "nvidia-nccl-cu12",
)


def _now():
    return time.time()


def atomic_write(path, data):
    """Write bytes or str to path through a temporary file and a rename."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = "%s.tmp-%d-%d" % (path, os.getpid(), threading.get_ident())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def atomic_write_json(path, obj):
    atomic_write(path, json.dumps(obj, separators=(",", ":"), default=str))


def _is_agent_file(filename):
    return filename in _AGENT_FILES


# ---------------------------------------------------------------------------
# Python profile: wall-clock sampler


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
    """

    def __init__(self, interval, main_ident=None, window_interval=None):
        self.interval = float(interval)
        # faster inside the recording window (torch.profiler dominates the
        # cost there), slower outside it where overhead matters most
        self.window_interval = float(window_interval or interval)
        self.main_ident = main_ident if main_ident is not None else threading.main_thread().ident
        self.frames = []  # [file, func, line, fline]
        self._frame_ids = {}  # (code, line) -> id
        self.stacks = {}  # (thread index, ids tuple) -> [count, window_count, cpu_count, window_cpu_count]
        # on-CPU or waiting: each thread's CPU clock (Linux) is read at
        # every sample, and the sample's on-CPU weight is the share of the
        # wall time since the thread's previous sample that it ran on a CPU
        self._cpu_clock = sys.platform.startswith("linux") and hasattr(time, "clock_gettime")
        self._cpu_last = {}  # ident -> (wall, cpu)
        self.threads = []  # dicts
        self._thread_idx = {}  # (ident, name) -> index
        self.samples = 0
        self.window_samples = 0
        self.in_window = False
        self.windows = []  # [[start_rel, end_rel], ...]
        self.start = time.time()
        self._t0 = time.perf_counter()
        self.end = None
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self.sampling_cost = 0.0
        self.on_tick = None  # called from the sampler thread about every second
        self.after_sample = None  # called from the sampler thread after every sample
        self.busy = {}  # ident -> depth: threads doing the agent's own work now
        self.agent_samples = 0  # samples skipped because the thread did the agent's work
        self.paused_samples = 0  # samples not taken while torch was imported (_SAMPLING_PAUSED)

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

    def stop(self):
        self._stop.set()
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

    def _snapshot(self, skip):
        """Every thread's stack as (ident, [(code, line), ...]), innermost
        first; (ident, None) for a thread in skip.

        Another thread's frames must be read while it cannot run: on
        CPython 3.11 following f_back of a frame its thread has just
        popped can crash the interpreter (python/cpython#111363; the
        sampling profilers of sentry-sdk and ddtrace hit it). So the
        frames become plain (code, line) pairs at once, with nothing that
        could release the GIL in between, and the switch interval raised
        meanwhile so that no other thread asks for the GIL back."""
        old = sys.getswitchinterval()
        sys.setswitchinterval(1.0)
        try:
            out = []
            for ident, f in sys._current_frames().items():
                if ident in skip:
                    out.append((ident, None))
                    continue
                chain = []
                while f is not None:
                    chain.append((f.f_code, f.f_lineno))
                    f = f.f_back
                out.append((ident, chain))
            return out
        finally:
            sys.setswitchinterval(old)

    def sample_once(self, skip_ident=None):
        if _SAMPLING_PAUSED[0]:
            self.paused_samples += 1
            return
        busy = set(self.busy)
        names = {}
        skip = {skip_ident} | busy
        for ident, t in list(getattr(threading, "_active", {}).items()):
            names[ident] = t.name
            if t.name.startswith("bottleneck-"):
                skip.add(ident)  # the agent's own threads
        snap = self._snapshot(skip)
        in_window = self.in_window
        cache = self._frame_ids
        table = self.frames
        with self.lock:
            for ident, chain in snap:
                if chain is None:  # skipped
                    self.agent_samples += ident in busy
                    continue
                ids = []
                for code, line in chain:
                    fn = code.co_filename
                    if fn not in _AGENT_FILES:
                        line = line or 0
                        k = (code, line)
                        fid = cache.get(k)
                        if fid is None:
                            fid = len(table)
                            cache[k] = fid
                            table.append([fn, getattr(code, "co_qualname", code.co_name), line, code.co_firstlineno])
                        ids.append(fid)
                if not ids:
                    continue
                ids.reverse()
                ti = self._thread_index(ident, names)
                key = (ti, tuple(ids))
                c = self.stacks.get(key)
                if c is None:
                    c = self.stacks[key] = [0, 0, 0.0, 0.0]
                c[0] += 1
                th = self.threads[ti]
                th["samples"] += 1
                on_cpu = self._on_cpu(ident, th)
                c[2] += on_cpu
                th["cpu_samples"] += on_cpu
                if in_window:
                    c[1] += 1
                    th["window_samples"] += 1
                    c[3] += on_cpu
            self.samples += 1
            if in_window:
                self.window_samples += 1

    def _on_cpu(self, ident, th):
        """The share (0..1) of the wall time since the thread's previous
        sample that it ran on a CPU (0 when it cannot be measured).

        The clock is the kernel thread's, named by its TID (Linux's
        per-thread CPU clock id): pthread_getcpuclockid would read the
        thread's pthread struct, gone if the thread has just exited."""
        tid = th.get("native_id")
        if not self._cpu_clock or not tid:
            return 0.0
        try:
            cpu = time.clock_gettime((~tid << 3) | 6)  # MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)
        except (OSError, OverflowError, ValueError):
            return 0.0
        wall = time.perf_counter()
        last = self._cpu_last.get(ident)
        self._cpu_last[ident] = (wall, cpu)
        if last is None or wall <= last[0]:
            return 0.0
        d_cpu = max(0.0, cpu - last[1])
        th["cpu_s"] += d_cpu
        return min(1.0, d_cpu / (wall - last[0]))

    def _run(self):
        me = threading.get_ident()
        nxt = time.perf_counter()
        last_tick = nxt
        while True:
            nxt += self.window_interval if self.in_window else self.interval
            delay = nxt - time.perf_counter()
            if delay < 0:
                # fell behind (e.g. the GIL was held); do not burst
                nxt = time.perf_counter()
                delay = 0
            if self._stop.wait(delay):
                return
            t0 = time.perf_counter()
            try:
                self.sample_once(skip_ident=me)
            except Exception:
                pass
            if self.after_sample is not None:
                try:
                    self.after_sample()
                except Exception:
                    pass
            t1 = time.perf_counter()
            self.sampling_cost += t1 - t0
            if self.on_tick is not None and t1 - last_tick >= 1.0:
                last_tick = t1
                try:
                    self.on_tick()
                except Exception:
                    pass

    def to_json(self):
        with self.lock:
            stacks = [
                {"thread": k[0], "frames": list(k[1]), "count": v[0], "window_count": v[1],
                 "cpu_count": round(v[2], 3), "window_cpu_count": round(v[3], 3)}
                for k, v in self.stacks.items()
            ]
            stacks.sort(key=lambda s: -s["count"])
            end = self.end if self.end is not None else time.time()
            windows = [[w[0], w[1] if w[1] is not None else self.rel()] for w in self.windows]
            return {
                "format": "bottleneck.pyprofile",
                "version": FORMAT_VERSION,
                "profiler": "sample",
                "interval_s": self.interval,
                "window_interval_s": self.window_interval,
                "start_unix": self.start,
                "duration_s": end - self.start,
                "samples": self.samples,
                "window_samples": self.window_samples,
                "windows": windows,
                "sampling_cost_s": self.sampling_cost,
                "agent_work_samples": self.agent_samples,
                "import_paused_samples": self.paused_samples,
                "cpu_clock": self._cpu_clock,
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
        if _is_agent_file(key[0]):
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


# ---------------------------------------------------------------------------
# Environment summary


def _safe(fn, default=None):
    try:
        return fn()
    except Exception:
        return default


def package_versions():
    out = {}
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover
        return out
    for name in _PACKAGES:
        v = _safe(lambda: metadata.version(name))
        if v:
            out[name] = v
    return out


def env_vars():
    out = {}
    for k, v in os.environ.items():
        if k in _ENV_NAMES or any(k.startswith(p) for p in _ENV_PREFIXES):
            out[k] = v
    return out


def base_env():
    return {
        "format": "bottleneck.env",
        "version": FORMAT_VERSION,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            "gil_enabled": _safe(lambda: sys._is_gil_enabled(), True),
        },
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": _safe(lambda: len(os.sched_getaffinity(0))),
        # other work on the machine when the program started (1-minute load)
        "load_average": _safe(lambda: os.getloadavg()[0]),
        "pid": os.getpid(),
        "hostname": platform.node(),
        "env": env_vars(),
        "packages": {},
        "torch": None,
    }


def torch_env(torch, with_devices):
    """Versions and flags from torch itself. Device queries only when CUDA
    is already initialised (with_devices), so the agent never initialises it."""
    t = {"version": getattr(torch, "__version__", "?")}
    ver = getattr(torch, "version", None)
    t["cuda"] = getattr(ver, "cuda", None)
    t["hip"] = getattr(ver, "hip", None)
    t["debug"] = getattr(ver, "debug", None)
    t["git"] = getattr(ver, "git_version", None)
    t["build"] = "rocm" if t["hip"] else ("cuda" if t["cuda"] else "cpu")
    t["cudnn"] = _safe(lambda: torch.backends.cudnn.version())
    t["num_threads"] = _safe(lambda: torch.get_num_threads())
    t["num_interop_threads"] = _safe(lambda: torch.get_num_interop_threads())
    t["kineto_available"] = _safe(lambda: bool(torch.autograd.kineto_available()), False)
    t["profiler_activities"] = _safe(
        lambda: sorted(str(a).split(".")[-1] for a in torch.profiler.supported_activities()), [])
    t["flags"] = {
        "matmul_allow_tf32": _safe(lambda: bool(torch.backends.cuda.matmul.allow_tf32)),
        "cudnn_allow_tf32": _safe(lambda: bool(torch.backends.cudnn.allow_tf32)),
        "cudnn_benchmark": _safe(lambda: bool(torch.backends.cudnn.benchmark)),
        "cudnn_deterministic": _safe(lambda: bool(torch.backends.cudnn.deterministic)),
        "cudnn_enabled": _safe(lambda: bool(torch.backends.cudnn.enabled)),
        "deterministic_algorithms": _safe(lambda: bool(torch.are_deterministic_algorithms_enabled())),
        "float32_matmul_precision": _safe(lambda: torch.get_float32_matmul_precision()),
        "grad_enabled": _safe(lambda: bool(torch.is_grad_enabled())),
    }
    cuda = getattr(torch, "cuda", None)
    t["cuda_initialized"] = bool(_safe(lambda: cuda.is_initialized(), False))
    if with_devices and t["cuda_initialized"]:
        t["nccl"] = _safe(lambda: ".".join(str(x) for x in cuda.nccl.version())
                          if isinstance(cuda.nccl.version(), tuple) else str(cuda.nccl.version()))
        devs = []
        for i in range(_safe(lambda: cuda.device_count(), 0) or 0):
            p = _safe(lambda: cuda.get_device_properties(i))
            if p is None:
                continue
            devs.append({
                "index": i, "name": p.name, "total_memory": p.total_memory,
                "capability": "%d.%d" % (p.major, p.minor),
                "multi_processor_count": getattr(p, "multi_processor_count", None),
            })
        t["devices"] = devs
        t["device_count"] = len(devs)
    dist = _safe(lambda: torch.distributed)
    if dist is not None and _safe(lambda: dist.is_available() and dist.is_initialized(), False):
        t["distributed"] = {
            "backend": _safe(lambda: str(dist.get_backend())),
            "rank": _safe(lambda: dist.get_rank()),
            "world_size": _safe(lambda: dist.get_world_size()),
        }
    return t


# ---------------------------------------------------------------------------
# The agent


class StopAfterProfile(SystemExit):
    """Raised in the training thread once the last window is written when
    --stop-after-profile is on. Exits with status 0."""

    def __init__(self):
        SystemExit.__init__(self, 0)


class _TorchImportWatcher(object):
    """A sys.meta_path finder that runs a callback once `torch` (or the
    module name) finished importing (it wraps the real loader's
    exec_module on that one spec)."""

    def __init__(self, callback, name="torch"):
        self.callback = callback
        self.name = name
        self.busy = False
        self.done = False

    def find_spec(self, name, path=None, target=None):
        if name != self.name or self.busy or self.done:
            return None
        import importlib.util
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        except Exception:
            return None
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        orig = spec.loader.exec_module
        watcher = self

        def exec_module(module):
            pause = watcher.name == "torch"
            _SAMPLING_PAUSED[0] += pause
            try:
                orig(module)
            finally:
                _SAMPLING_PAUSED[0] -= pause
            watcher.done = True
            try:
                del spec.loader.exec_module
            except Exception:
                pass
            watcher.callback(module)

        try:
            spec.loader.exec_module = exec_module
        except Exception:
            return None
        return spec

    # Python 3.9 may still ask for the legacy API.
    def find_module(self, name, path=None):
        return None


class _RecordingQuitter(object):
    """builtins.exit/quit in a forked child: the same object to the user
    (repr, call), and the SystemExit it raises is remembered."""

    def __init__(self, quitter, agent):
        self._quitter = quitter
        self._agent = agent

    def __repr__(self):
        return repr(self._quitter)

    def __call__(self, code=None):
        try:
            self._quitter(code)
        except SystemExit as e:
            self._agent.child_exit = e
            raise


class _OwnWork(object):
    def __init__(self, agent):
        self.agent = agent

    def __enter__(self):
        a = self.agent
        if a.frameworks is not None:
            a.frameworks.enter_agent()
        if a.sampler is not None:
            a.sampler.enter_own_work()
        elif a.cprof is not None and threading.current_thread() is threading.main_thread():
            a._cprof_depth += 1
            if a._cprof_depth == 1:
                a.cprof.disable()

    def __exit__(self, *exc):
        a = self.agent
        if a.frameworks is not None:
            a.frameworks.leave_agent()
        if a.sampler is not None:
            a.sampler.leave_own_work()
        elif a.cprof is not None and threading.current_thread() is threading.main_thread():
            a._cprof_depth -= 1
            if a._cprof_depth == 0 and not a.finished:
                a.cprof.enable()
        return False


class Agent(object):
    def __init__(self, cfg, mode):
        self.cfg = cfg
        self.mode = mode
        self.run_dir = cfg["run_dir"]
        self.pid = os.getpid()
        self.t_start = _now()
        self.tag = None
        self.finished = False
        self.finish_lock = threading.Lock()
        self.sampler = None
        self.cprof = None
        self._cprof_depth = 0
        self.torch = None
        self.env = None
        self.missing = []
        self.errors = []
        self.notes = []
        self.exit = {}
        # steps
        pcfg = cfg.get("profiler", {})
        self.pcfg = pcfg
        self.step_source_req = cfg.get("step_source", "auto")
        self.step_source = None
        self.step_counts = {"optimizer": 0, "dataloader": 0, "forward": 0}
        self.first_optimizer = None
        self.optimizers = {}  # id -> _optimizer_params, at the first step of each
        self.first_loader = None
        self.step_thread = None
        self.steps = 0
        self.step_start = None
        self.step_dl_wait = 0.0
        self.step_dl_batches = 0
        self.window_steps = []
        self.step_stats = {"count": 0, "sum_s": 0.0, "min_s": None, "max_s": None}
        self.step_times = []  # (start_rel, dur) for every step, capped
        self.stepstats = None  # _bottleneck_stepstats.StepStats: memory and GC per step
        self.frameworks = None  # _bottleneck_frameworks.Frameworks: Lightning / HF Trainer phases
        # profiler
        self.prof = None
        self.prof_state = "off"  # off | waiting | recording | done | failed
        self.kineto_started = False
        self.compile_used = False  # the program called torch.compile (see _watch_torch_compile)
        self.program_profiler = None  # "file:line" where the program started its own profiler
        self.child_exit = None  # in a forked child: how its code ended
        self.child_exiting = False
        self.windows = []  # {"index","file","steps","partial","bytes","export_s"}
        self.window_index = 0
        self.window_target = int(pcfg.get("repeat", 1) or 0)
        self.stop_pending = False
        self.stopped_after_profile = False
        self.in_window = False
        # dataloader
        self.dl_total_wait = 0.0
        self.dl_total_batches = 0
        self.dl_window_wait = 0.0
        self.dl_window_batches = 0
        self.loaders = {}  # id(loader) -> info
        # syncs
        self.sync_sites = {}
        self.sync_total = 0
        self.sync_state = "not-attempted"
        self._sync_prev_mode = None
        self._orig_showwarning = None
        self._fwd_handles = []
        self._fwd_depth = threading.local()
        self.progress_path = None
        self._last_ckpt = time.perf_counter()
        self._t0 = time.perf_counter()
        self.window_spans = []  # [[start_rel, end_rel], ...] seconds since agent start

    # -- the agent's own work ---------------------------------------------------
    def own_work(self):
        """Context for the agent's work in a program thread: it is left out
        of the Python profile (sampler and cProfile alike)."""
        return _OwnWork(self)

    # -- files ------------------------------------------------------------
    def path(self, name):
        return os.path.join(self.run_dir, name)

    def claim_tag(self):
        rank = os.environ.get("RANK")
        base = "rank%s" % rank if rank not in (None, "") else "rank0"
        claims = self.path(".claims")
        try:
            os.makedirs(claims, exist_ok=True)
        except OSError:
            pass
        for tag in (base, "%s-pid%d" % (base, os.getpid())):
            try:
                fd = os.open(os.path.join(claims, tag), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                return tag
            except FileExistsError:
                continue
            except OSError:
                break
        return "%s-pid%d" % (base, os.getpid())

    def progress(self, phase, **kw):
        if self.progress_path is None:
            return
        d = {"phase": phase, "tag": self.tag, "step": self.steps, "time": _now()}
        d.update(kw)
        try:
            atomic_write_json(self.progress_path, d)
        except Exception:
            pass

    # -- start --------------------------------------------------------------
    def start(self):
        os.makedirs(self.run_dir, exist_ok=True)
        self.tag = self.claim_tag()
        try:
            os.makedirs(self.path(".progress"), exist_ok=True)
            self.progress_path = self.path(os.path.join(".progress", self.tag + ".json"))
        except OSError:
            self.progress_path = None
        self.env = base_env()
        self.write_env()
        self._enable_crash_dump()
        prof_kind = self.cfg.get("python_profiler", "sample")
        if prof_kind == "sample":
            self.sampler = Sampler(self.cfg.get("sample_interval", 0.02),
                                   window_interval=self.cfg.get("window_sample_interval", 0.005))
            self.sampler.on_tick = self._tick
        elif prof_kind == "cprofile":
            import cProfile
            self.cprof = cProfile.Profile()
            self.cprof.enable()
        with self.own_work():
            self._start_in_own_work()

    def _start_in_own_work(self):
        if self.sampler is not None:
            self.sampler.start_thread()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork_child)
        self.stepstats = _load_stepstats(self.errors)
        try:
            self.frameworks = _load_sibling("_bottleneck_frameworks").Frameworks(
                lambda name, fn: sys.meta_path.insert(0, _TorchImportWatcher(fn, name)))
        except Exception as e:
            self.errors.append("framework phases: %s: %s" % (type(e).__name__, e))
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._on_sigterm)
        if "torch" in sys.modules and hasattr(sys.modules["torch"], "__version__"):
            self.on_torch(sys.modules["torch"])
        else:
            sys.meta_path.insert(0, _TorchImportWatcher(self.on_torch))
        self.progress("starting")

    def _enable_crash_dump(self):
        """On a fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGABRT, SIGILL),
        faulthandler writes every thread's Python stack to
        crash-<tag>.txt, then the signal takes its course (same exit
        status). Not when the program enabled faulthandler itself, nor
        around a block of a running program (bottleneck_profiler.profile():
        the process outlives the block)."""
        try:
            import faulthandler
            if faulthandler.is_enabled() or self.mode == "in-process":
                return
            self._crash_path = self.path("crash-%s.txt" % self.tag)
            self._crash_file = open(self._crash_path, "w")
            faulthandler.enable(file=self._crash_file, all_threads=True)
        except Exception as e:
            self.errors.append("crash dump: %s: %s" % (type(e).__name__, e))

    def _read_packages(self):
        # In the program's own thread, never a daemon thread: a daemon thread
        # caught inside an import at interpreter shutdown can deadlock it.
        # Called once torch is imported (tens of ms next to seconds) or at finish.
        if self.env is not None and not getattr(self, "_packages_read", False):
            self._packages_read = True
            self.env["packages"] = package_versions()

    def write_env(self):
        if os.getpid() != self.pid:
            return
        try:
            atomic_write_json(self.path("env-%s.json" % self.tag), self.env)
        except Exception as e:
            self.errors.append("writing env: %s" % e)

    def _tick(self):
        # sampler thread, about once a second: periodic checkpoint so a kill
        # loses at most checkpoint_interval seconds of Python profile
        iv = float(self.cfg.get("checkpoint_interval", 15))
        if iv > 0 and time.perf_counter() - self._last_ckpt >= iv:
            self._last_ckpt = time.perf_counter()
            self.write_pyprofile()
            self.write_evidence(final=False)

    # -- torch --------------------------------------------------------------
    def on_torch(self, torch):
        with self.own_work():
            return self._on_torch(torch)

    def _on_torch(self, torch):
        if os.getpid() != self.pid:
            return
        self.torch = torch
        try:
            self.env["torch"] = torch_env(torch, with_devices=False)
            self._read_packages()
            self.write_env()
        except Exception as e:
            self.errors.append("torch env: %s" % e)
        if self.stepstats is not None:
            try:
                self.stepstats.on_torch(torch)
            except Exception as e:
                self.errors.append("thread settings hook: %s" % e)
        try:
            self._install_dataloader_hook(torch)
        except Exception as e:
            self.errors.append("dataloader hook: %s" % e)
        self._install_worker_sampler()
        try:
            self._install_optimizer_hook(torch)
        except Exception as e:
            self.errors.append("optimizer hook: %s" % e)
        try:
            self._watch_torch_compile(torch)
        except Exception as e:
            self.errors.append("torch.compile hook: %s" % e)
        try:
            self._watch_program_profilers()
        except Exception as e:
            self.errors.append("profiler hook: %s" % e)
        if self.step_source_req == "forward":
            self._install_forward_hooks()
        elif self.step_source_req == "auto":
            # outermost nn.Module forward calls are the last fallback; they
            # are removed as soon as another source locks
            self._install_forward_hooks()

    def _install_optimizer_hook(self, torch):
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook
        except ImportError:
            self.missing.append({
                "what": "optimizer step detection",
                "why": "torch %s has no torch.optim.optimizer.register_optimizer_step_post_hook (needs torch>=2.0); "
                       "steps fall back to DataLoader batches or module forwards" % torch.__version__,
            })
            return
        self.optimizer_hook = register_optimizer_step_post_hook(self._on_optimizer_step)

    def _watch_torch_compile(self, torch):
        """Dynamo guards on the number of global module hooks: the agent's
        forward hooks, removed later when another step source locks, would
        force a recompile (and warn "Using torch.compile(module) when there
        are global hooks"). In auto step detection they go before the
        program's first torch.compile() (nn.Module.compile calls it too),
        and module forwards are no longer a step source."""
        orig = getattr(torch, "compile", None)
        if orig is None or getattr(orig, "_bottleneck_wrapped", False):
            return
        agent = self

        def compile(*args, **kwargs):
            # hooks that stay for the whole run (forward steps) guard nothing away
            if os.getpid() == agent.pid and not agent.compile_used and agent.step_source_req == "auto" \
                    and agent.step_source is None:
                agent.compile_used = True
                agent._remove_forward_hooks()
            return orig(*args, **kwargs)

        compile._bottleneck_wrapped = True
        compile.__wrapped__ = orig
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(compile, attr, getattr(orig, attr, None))
        torch.compile = compile

    def _watch_program_profilers(self):
        """Only one Kineto profiler can be active in a process: when the
        program starts its own (torch.profiler.profile, _KinetoProfile or
        the legacy torch.autograd.profiler.profile), the agent's steps
        aside for good, before the program's starts."""
        import torch.autograd.profiler as legacy
        import torch.profiler.profiler as tpp
        agent = self
        for cls, name in ((tpp.profile, "start"), (tpp._KinetoProfile, "start"), (legacy.profile, "__enter__")):
            orig = cls.__dict__.get(name)
            if orig is None or getattr(orig, "_bottleneck_wrapped", False):
                continue

            def wrapper(prof, *args, _orig=orig, **kwargs):
                if prof is not agent.prof and os.getpid() == agent.pid:
                    agent._yield_to_program_profiler(type(prof), sys._getframe(1))
                return _orig(prof, *args, **kwargs)

            wrapper._bottleneck_wrapped = True
            wrapper.__wrapped__ = orig
            for attr in ("__name__", "__qualname__", "__doc__"):
                setattr(wrapper, attr, getattr(orig, attr, None))
            setattr(cls, name, wrapper)

    def _yield_to_program_profiler(self, cls, frame):
        with self.own_work():
            return self._step_aside(cls, frame)

    def _step_aside(self, cls, frame):
        if self.program_profiler is not None:
            return
        while frame is not None and (_is_agent_file(frame.f_code.co_filename)
                                     or _is_library_file(frame.f_code.co_filename)):
            frame = frame.f_back
        where = "%s:%d" % (frame.f_code.co_filename, frame.f_lineno) if frame is not None else "?"
        self.program_profiler = where
        prof = self.prof
        dropped = ""
        if prof is not None:
            self.prof = None
            if self.prof_state in ("waiting", "recording") and self.in_window:
                dropped = "; the window being recorded was dropped"
            try:
                prof.on_trace_ready = None
                prof.stop()
            except Exception as e:
                self.errors.append("stopping torch.profiler for the program's own: %s: %s" % (type(e).__name__, e))
            self._set_window(False)
        if self.prof_state in ("off", "waiting", "recording"):
            self.prof_state = "yielded"
        if not self.windows:
            self.missing.append({
                "what": "torch.profiler trace",
                "why": "the program runs its own torch profiler (%s at %s) and only one can be active in a "
                       "process, so bottleneck stepped aside%s; the Python sampler still recorded the whole run"
                       % (cls.__name__, where, dropped)})
        else:
            self.notes.append("the program started its own torch profiler (%s at %s) after bottleneck's window; "
                              "bottleneck's profiler was stopped first%s" % (cls.__name__, where, dropped))

    def _install_dataloader_hook(self, torch):
        import torch.utils.data.dataloader as dlmod
        cls = dlmod._BaseDataLoaderIter
        orig = cls.__next__
        if getattr(orig, "_bottleneck_wrapped", False):
            return
        agent = self
        perf = time.perf_counter

        def __next__(it):
            if os.getpid() != agent.pid:
                return orig(it)
            agent._on_dl_enter(it)
            t0 = perf()
            ok = False
            try:
                r = orig(it)
                ok = True
                return r
            finally:
                agent._on_dl_batch(it, perf() - t0, ok)

        __next__._bottleneck_wrapped = True
        __next__.__wrapped__ = orig
        cls.__next__ = __next__

    def _install_worker_sampler(self):
        """Sample DataLoader worker processes (_bottleneck_workers.py)."""
        if self.cfg.get("python_profiler", "sample") == "off" or not self.cfg.get("worker_profiler", True):
            return
        try:
            mod = _load_sibling("_bottleneck_workers")
            iv = float(self.cfg.get("sample_interval", 0.02))
            flush = float(self.cfg.get("worker_flush_interval", 1.0))
            self.workers_mod = mod
            # the agent's module is not in sys.modules: hand over what the
            # worker side reuses
            api = types.SimpleNamespace(Sampler=Sampler, atomic_write_json=atomic_write_json)
            self.worker_loop = mod.install(api, self.run_dir, self.tag, iv, flush)
        except Exception as e:
            self.missing.append({"what": "DataLoader worker profile",
                                 "why": "the worker hook could not be installed: %s: %s" % (type(e).__name__, e)})

    def _install_forward_hooks(self):
        torch = self.torch
        if torch is None or self._fwd_handles or self.compile_used:
            return
        try:
            from torch.nn.modules.module import register_module_forward_pre_hook, register_module_forward_hook
        except ImportError:
            return
        agent = self
        depth = self._fwd_depth

        def pre(module, args):
            d = getattr(depth, "d", 0)
            depth.d = d + 1
            if d == 0 and os.getpid() == agent.pid:
                agent._on_forward()

        def post(module, args, out):
            depth.d = max(0, getattr(depth, "d", 1) - 1)

        self._fwd_handles = [register_module_forward_pre_hook(pre), register_module_forward_hook(post)]

    def _remove_forward_hooks(self):
        for h in self._fwd_handles:
            try:
                h.remove()
            except Exception:
                pass
        self._fwd_handles = []

    # -- step detection -------------------------------------------------------
    def _lock(self, source):
        with self.own_work():
            return self._lock_in_own_work(source)

    def _lock_in_own_work(self, source):
        self.step_source = source
        if source != "forward":
            self._remove_forward_hooks()
        self.step_thread = threading.get_ident()
        self._start_profiler()

    def _on_optimizer_step(self, opt, args, kwargs):
        if os.getpid() != self.pid:
            return
        self.step_counts["optimizer"] += 1
        if id(opt) not in self.optimizers and len(self.optimizers) < 8:
            self.optimizers[id(opt)] = info = _optimizer_params(opt)
            f = sys._getframe(1)
            while f is not None and (_is_agent_file(f.f_code.co_filename) or _is_library_file(f.f_code.co_filename)):
                f = f.f_back
            if f is not None:  # the program's line that called step()
                info["step_site"] = {"file": f.f_code.co_filename, "line": f.f_lineno or 0,
                                     "func": getattr(f.f_code, "co_qualname", f.f_code.co_name)}
        if self.step_source is None and self.step_source_req in ("auto", "optimizer"):
            self.first_optimizer = id(opt)
            self._lock("optimizer")
            self.step_start = time.perf_counter()
            return
        if self.step_source == "optimizer" and id(opt) == self.first_optimizer:
            self._step()

    def _on_dl_enter(self, it):
        loader = getattr(it, "_bottleneck_loader", None)
        if loader is None:
            loader = self._register_loader(it)
        self.step_counts["dataloader"] += 1
        if self.step_source is None and self.step_source_req in ("auto", "dataloader"):
            if self.first_loader is None:
                self.first_loader = loader
            if loader == self.first_loader and (self.step_source_req == "dataloader"
                                                or self.step_counts["dataloader"] >= _LOCK_THRESHOLD):
                self._lock("dataloader")
                self.step_start = time.perf_counter()
                return
        if self.step_source == "dataloader" and loader == self.first_loader:
            self._step()

    def _register_loader(self, it):
        key = id(it)
        info = {
            "id": len(self.loaders),
            "iterator": type(it).__name__,
            "num_workers": getattr(it, "_num_workers", None),
            "pin_memory": getattr(it, "_pin_memory", None),
            "persistent_workers": getattr(it, "_persistent_workers", None),
            "prefetch_factor": getattr(it, "_prefetch_factor", None),
            "batch_size": None,
            "dataset": type(getattr(it, "_dataset", None)).__name__,
            "drop_last": getattr(it, "_drop_last", None),
            "batches": 0,
            "wait_s": 0.0,
            "max_wait_s": 0.0,
        }
        bs = getattr(getattr(it, "_index_sampler", None), "batch_size", None)
        info["batch_size"] = bs
        workers = getattr(it, "_workers", None)
        if workers:
            # ForkProcess / SpawnProcess / ForkServerProcess
            kind = type(workers[0]).__name__
            if kind.endswith("Process"):
                info["multiprocessing_context"] = kind[:-len("Process")].lower()
        # iterators of one DataLoader are the same loader (persistent
        # workers reuse the iterator; otherwise a new one per epoch): key by
        # dataset + settings
        sig = (id(getattr(it, "_dataset", None)), info["num_workers"], info["batch_size"])
        for v in self.loaders.values():
            if v.get("_sig") == sig:
                try:
                    it._bottleneck_loader = v["id"]
                except Exception:
                    pass
                return v["id"]
        info["_sig"] = sig
        self.loaders[key] = info
        try:
            it._bottleneck_loader = info["id"]
        except Exception:
            pass
        return info["id"]

    def _on_dl_batch(self, it, dt, ok):
        if not ok:
            return  # StopIteration or an error: not a batch
        lid = getattr(it, "_bottleneck_loader", None)
        for v in self.loaders.values():
            if v["id"] == lid:
                v["batches"] += 1
                v["wait_s"] += dt
                if dt > v["max_wait_s"]:
                    v["max_wait_s"] = dt
                break
        self.dl_total_wait += dt
        self.dl_total_batches += 1
        self.step_dl_wait += dt
        self.step_dl_batches += 1
        if self.in_window:
            self.dl_window_wait += dt
            self.dl_window_batches += 1

    def _on_forward(self):
        self.step_counts["forward"] += 1
        if self.step_source is None and self.step_source_req in ("auto", "forward"):
            if self.step_source_req == "forward" or (
                    self.step_counts["forward"] >= _LOCK_THRESHOLD
                    and self.step_counts["optimizer"] == 0 and self.step_counts["dataloader"] == 0):
                self._lock("forward")
                self.step_start = time.perf_counter()
                return
        if self.step_source == "forward":
            self._step()

    def _step(self):
        """One step ended (and the next begins) at this instant."""
        if threading.get_ident() != self.step_thread:
            return
        now = time.perf_counter()
        dur = now - self.step_start if self.step_start is not None else None
        self.steps += 1
        if dur is not None:
            s = self.step_stats
            s["count"] += 1
            s["sum_s"] += dur
            s["min_s"] = dur if s["min_s"] is None else min(s["min_s"], dur)
            s["max_s"] = dur if s["max_s"] is None else max(s["max_s"], dur)
            if len(self.step_times) < 20000:
                rel = self.step_start - self._t0
                self.step_times.append([self.steps, round(rel, 6), round(dur, 6), self.in_window])
            if self.in_window:
                self.window_steps.append({
                    "window": self.window_index + 1,
                    "step": self.steps,
                    "duration_s": dur,
                    "dataloader_wait_s": self.step_dl_wait,
                    "dataloader_batches": self.step_dl_batches,
                    "syncs": self._step_syncs,
                })
        if self.stepstats is not None:
            self.stepstats.on_step(self.steps, self.in_window)
        self.step_start = now
        self.step_dl_wait = 0.0
        self.step_dl_batches = 0
        self._step_syncs = 0
        prof = self.prof
        if prof is not None and self.prof_state == "waiting":
            with self.own_work():
                try:
                    prof.step()
                except Exception as e:
                    self._profiler_failed("profiler step", e)
                    return
                self._after_profiler_step()
        if self.stop_pending:
            self.stop_pending = False
            self.stopped_after_profile = True
            self.progress("stopping")
            raise StopAfterProfile()

    _step_syncs = 0

    # -- profiler window ----------------------------------------------------
    def _start_profiler(self):
        torch = self.torch
        p = self.pcfg
        if self.program_profiler is not None:
            return  # the program's own profiler runs (see _yield_to_program_profiler)
        if not p.get("enabled", True):
            self.prof_state = "off"
            self.missing.append({"what": "torch.profiler trace", "why": "disabled (--no-trace)"})
            return
        if torch is None:
            return
        if not _safe(lambda: bool(torch.autograd.kineto_available()), False):
            self.prof_state = "failed"
            self.missing.append({
                "what": "torch.profiler trace",
                "why": "this torch build (%s) has no Kineto profiler (torch.autograd.kineto_available() is False); "
                       "the Python profile is still recorded" % getattr(torch, "__version__", "?"),
            })
            return
        try:
            import torch.profiler as tp
            acts = [tp.ProfilerActivity.CPU]
            supported = _safe(lambda: set(tp.supported_activities()), set())
            if _safe(lambda: torch.cuda.is_available(), False) and tp.ProfilerActivity.CUDA in supported:
                acts.append(tp.ProfilerActivity.CUDA)
            for extra in ("XPU", "MTIA", "HPU"):
                a = getattr(tp.ProfilerActivity, extra, None)
                if a is not None and a in supported:
                    acts.append(a)
            self.activities = [str(a).split(".")[-1] for a in acts]
            kw = dict(skip_first=int(p.get("skip_first", 5)))
            sched = tp.schedule(wait=int(p.get("wait", 0)), warmup=int(p.get("warmup", 2)),
                                active=int(p.get("active", 5)), repeat=int(p.get("repeat", 1)), **kw)
            opts = dict(activities=acts, schedule=sched, on_trace_ready=self._on_trace_ready,
                        record_shapes=bool(p.get("record_shapes")), profile_memory=bool(p.get("profile_memory")),
                        with_stack=bool(p.get("with_stack")), with_flops=bool(p.get("with_flops")),
                        with_modules=bool(p.get("with_modules")))
            self.prof = tp.profile(**opts)
            self.kineto_started = True
            self.prof.start()
            self.prof_state = "waiting"
            self._after_profiler_step()
        except Exception as e:
            self._profiler_failed("starting torch.profiler", e)

    def _profiler_failed(self, what, e):
        self.prof_state = "failed"
        self.errors.append("%s: %s: %s" % (what, type(e).__name__, e))
        self.missing.append({"what": "torch.profiler trace", "why": "%s failed: %s" % (what, e)})
        self._set_window(False)
        try:
            if self.prof is not None:
                self.prof.on_trace_ready = None
                self.prof.stop()
        except Exception:
            pass
        self.prof = None

    def _after_profiler_step(self):
        prof = self.prof
        if prof is None:
            return
        action = str(getattr(prof, "current_action", ""))
        recording = action.endswith("RECORD") or action.endswith("RECORD_AND_SAVE")
        warm = action.endswith("WARMUP")
        self._set_window(recording)
        p = self.pcfg
        if recording:
            self.progress("recording", window=self.window_index + 1,
                          active_step=len([s for s in self.window_steps if s["window"] == self.window_index + 1]) + 1,
                          active=int(p.get("active", 5)))
        elif warm:
            self.progress("warming up", window=self.window_index + 1)
        elif self.window_index == 0:
            self.progress("waiting", skip_first=int(p.get("skip_first", 5)))

    def _set_window(self, on):
        if on == self.in_window:
            return
        self.in_window = on
        rel = time.perf_counter() - self._t0
        if on:
            self.window_spans.append([rel, None])
        elif self.window_spans:
            self.window_spans[-1][1] = rel
        if self.sampler is not None:
            self.sampler.set_window(on)
        if on:
            self._sync_on()
            if self.env is not None and self.torch is not None and not self.env.get("torch_at_window"):
                self.env["torch_at_window"] = True
                self.env["torch"] = _safe(lambda: torch_env(self.torch, with_devices=True), self.env.get("torch"))
                self.write_env()
        else:
            self._sync_off()

    def _on_trace_ready(self, prof):
        with self.own_work():
            return self._write_trace(prof)

    def _write_trace(self, prof):
        # called inside prof.step() (or prof.stop()) in the training thread
        self.window_index += 1
        idx = self.window_index
        partial = self.finished or self._finishing
        self.progress("writing trace", window=idx)
        name = "trace-%s.pt.trace.json.gz" % self.tag if idx == 1 else "trace-%s.w%d.pt.trace.json.gz" % (self.tag, idx)
        final = self.path(name)
        t0 = time.perf_counter()
        rec = {"index": idx, "file": name, "partial": bool(partial),
               "steps": [s["step"] for s in self.window_steps if s["window"] == idx]}
        try:
            try:
                prof.add_metadata_json("bottleneck", json.dumps({"tag": self.tag, "window": idx,
                                                                 "partial": bool(partial), "step_source": self.step_source}))
            except Exception:
                pass
            tmp_json = final + ".tmp-%d.json" % os.getpid()
            tmp_gz = final + ".tmp-%d" % os.getpid()
            prof.export_chrome_trace(tmp_json)
            with open(tmp_json, "rb") as fin, gzip.open(tmp_gz, "wb", compresslevel=3) as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
            os.remove(tmp_json)
            os.replace(tmp_gz, final)
            rec["bytes"] = os.path.getsize(final)
        except Exception as e:
            rec["error"] = "%s: %s" % (type(e).__name__, e)
            self.errors.append("exporting trace: %s" % rec["error"])
        rec["export_s"] = time.perf_counter() - t0
        self.windows.append(rec)
        self._set_window(False)
        if self.window_target and idx >= self.window_target:
            self.prof_state = "done"
            if self.cfg.get("stop_after_profile") and not self._finishing:
                self.stop_pending = True
        self.write_evidence(final=False)
        self.progress("recorded", window=idx)

    _finishing = False

    def _stop_profiler(self):
        prof = self.prof
        if prof is None:
            return
        self.prof = None
        try:
            if self.prof_state in ("waiting",):
                if threading.get_ident() != self.step_thread and self.step_thread is not None:
                    self.notes.append("program ended in another thread than the one that ran the steps; "
                                      "a partial window could not be saved")
                    prof.on_trace_ready = None
                prof.stop()
            elif self.prof_state == "done":
                prof.on_trace_ready = None
                prof.stop()
        except Exception as e:
            self.errors.append("stopping torch.profiler: %s: %s" % (type(e).__name__, e))
        self._set_window(False)

    # -- CUDA sync call sites -------------------------------------------------
    def _sync_on(self):
        if not self.cfg.get("sync_debug", True):
            self.sync_state = "disabled"
            return
        torch = self.torch
        if torch is None or not _safe(lambda: torch.cuda.is_initialized(), False):
            self.sync_state = "no-cuda"
            return
        if not hasattr(torch.cuda, "set_sync_debug_mode"):
            self.sync_state = "unsupported"
            return
        try:
            self._sync_prev_mode = torch.cuda.get_sync_debug_mode()
            if self._sync_prev_mode != 0:
                self.sync_state = "user-set"
                return
            warnings.filterwarnings("always", message=_SYNC_MESSAGE)
            self._orig_showwarning = warnings.showwarning
            warnings.showwarning = self._showwarning
            torch.cuda.set_sync_debug_mode(1)
            self.sync_state = "on"
        except Exception as e:
            self.sync_state = "failed: %s" % e

    def _sync_off(self):
        if self.sync_state != "on":
            return
        try:
            self.torch.cuda.set_sync_debug_mode(self._sync_prev_mode or 0)
        except Exception:
            pass
        if self._orig_showwarning is not None and warnings.showwarning == self._showwarning:
            warnings.showwarning = self._orig_showwarning
        try:
            warnings.filters[:] = [f for f in warnings.filters
                                   if not (f[0] == "always" and getattr(f[1], "pattern", None) == _SYNC_MESSAGE)]
            warnings._filters_mutated()
        except Exception:
            pass
        self.sync_state = "recorded"

    def _showwarning(self, message, category, filename, lineno, file=None, line=None):
        if _SYNC_MESSAGE in str(message):
            self.record_sync(sys._getframe(1))
            return
        orig = self._orig_showwarning or warnings._showwarning_orig
        return orig(message, category, filename, lineno, file, line)

    def record_sync(self, frame):
        """Record the user call site of an implicit sync: the innermost frame
        outside torch, the warnings machinery and the agent."""
        user = []
        f = frame
        while f is not None and len(user) < 6:
            fn = f.f_code.co_filename
            if not (_is_agent_file(fn) or _is_library_file(fn)):
                user.append({"file": fn, "line": f.f_lineno or 0, "func": getattr(f.f_code, "co_qualname", f.f_code.co_name)})
            f = f.f_back
        if not user:
            user = [{"file": "?", "line": 0, "func": "?"}]
        site = user[0]
        key = (site["file"], site["line"])
        rec = self.sync_sites.get(key)
        if rec is None:
            rec = self.sync_sites[key] = {"file": site["file"], "line": site["line"], "func": site["func"],
                                          "count": 0, "stack": user}
        rec["count"] += 1
        self.sync_total += 1
        self._step_syncs += 1

    # -- signals & fork --------------------------------------------------------
    def _after_fork_child(self):
        # forked children (DataLoader workers, pools) are never profiled:
        # the sampler thread does not exist there, and every hook checks pid
        self.finished = True
        try:
            if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
        except Exception:
            pass
        if self.kineto_started:
            self._record_child_exit()
            atexit.register(_exit_forked_child, self)

    def _record_child_exit(self):
        """Remember how a forked child's code ends (see _exit_forked_child).
        multiprocessing and DataLoader children end with os._exit and never
        get there."""
        agent = self
        orig_exit, orig_hook = sys.exit, sys.excepthook

        def exit(*args):
            try:
                orig_exit(*args)
            except SystemExit as e:
                agent.child_exit = e
                raise

        def excepthook(t, v, tb):
            agent.child_exit = v
            orig_hook(t, v, tb)

        sys.exit, sys.excepthook = exit, excepthook
        import builtins
        for name in ("exit", "quit"):
            q = getattr(builtins, name, None)
            if q is not None and hasattr(q, "__call__"):
                setattr(builtins, name, _RecordingQuitter(q, self))

    def _on_sigterm(self, signum, frame):
        if os.getpid() == self.pid:
            self.finish("terminated", signal_name="SIGTERM")
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)

    # -- finish -------------------------------------------------------------
    def finish(self, reason, exit_code=None, signal_name=None, exc=None):
        with self.own_work():
            return self._finish(reason, exit_code=exit_code, signal_name=signal_name, exc=exc)

    def _finish(self, reason, exit_code=None, signal_name=None, exc=None):
        """Stop everything and write every file. Idempotent."""
        if os.getpid() != self.pid:
            return
        with self.finish_lock:
            if self.finished:
                return
            self._finishing = True
            self.exit = {"reason": reason, "code": exit_code, "signal": signal_name,
                         "exception": exc, "stopped_after_profile": self.stopped_after_profile}
            self.progress("saving")
            try:
                self._stop_profiler()
            except Exception as e:
                self.errors.append("profiler stop: %s" % e)
            self._remove_forward_hooks()
            if self.sampler is not None:
                self.sampler.stop()
            if self.stepstats is not None:
                self.stepstats.stop()
            if self.env is not None:
                if self.torch is not None and not self.env.get("torch_at_window"):
                    self.env["torch"] = _safe(lambda: torch_env(self.torch, with_devices=True), self.env.get("torch"))
                _safe(self._read_packages)
                self.write_env()
            self.finished = True
            self.write_pyprofile()
            self.write_evidence(final=True)
            self.progress("done")
            # no crash so far: an empty dump file is not kept (a crash
            # later in the interpreter's shutdown is not recorded then)
            path = getattr(self, "_crash_path", None)
            if path and _safe(lambda: os.path.getsize(path), 1) == 0:
                _safe(lambda: os.remove(path))

    def write_pyprofile(self):
        if os.getpid() != self.pid:
            return
        try:
            if self.sampler is not None:
                atomic_write_json(self.path("pyprofile-%s.json" % self.tag), self.sampler.to_json())
            elif self.cprof is not None and self.finished:
                import pstats
                self.cprof.disable()
                ps = self.path("pyprofile-%s.pstats" % self.tag)
                tmp = ps + ".tmp-%d" % os.getpid()
                self.cprof.dump_stats(tmp)
                os.replace(tmp, ps)
                st = pstats.Stats(self.cprof)
                windows = [[w[0], w[1] if w[1] is not None else w[0]] for w in self.window_spans]
                atomic_write_json(self.path("pyprofile-%s.json" % self.tag),
                                  pstats_to_json(st.stats, self.t_start, _now() - self.t_start, windows))
        except Exception as e:
            self.errors.append("writing python profile: %s: %s" % (type(e).__name__, e))

    def evidence(self, final):
        torch_missing = []
        if self.torch is None:
            torch_missing.append({"what": "torch.profiler trace",
                                  "why": "the program did not import torch" if "torch" not in sys.modules
                                  else "torch import did not complete"})
        elif self.step_source is None and self.pcfg.get("enabled", True):
            torch_missing.append({
                "what": "torch.profiler trace",
                "why": "no step was detected (%s): no optimizer.step(), DataLoader batch or nn.Module forward "
                       "was seen often enough; see --step-source%s" % (
                           self._counts_text(),
                           " (module forwards are not counted once the program uses torch.compile: "
                           "a global module hook would make it recompile)" if self.compile_used else "")})
        elif final and self.step_source is not None and not self.windows and self.prof_state not in ("failed", "off", "yielded"):
            torch_missing.append({
                "what": "torch.profiler trace",
                "why": "the program ended after %d %s steps, before the window (skip-first %d + wait %d + warmup %d) "
                       "reached its first active step" % (
                           self.steps, self.step_source, int(self.pcfg.get("skip_first", 5)),
                           int(self.pcfg.get("wait", 0)), int(self.pcfg.get("warmup", 2)))})
        sync_missing = []
        if self.sync_state == "no-cuda" and self.torch is not None and self.cfg.get("sync_debug", True) \
                and _safe(lambda: self.torch.cuda.is_initialized(), False):
            sync_missing.append({"what": "CUDA sync call sites",
                                 "why": "CUDA was first used after the window started"})
        elif self.sync_state == "user-set":
            sync_missing.append({"what": "CUDA sync call sites", "why": "the program set its own sync debug mode"})
        elif self.sync_state.startswith("failed") or self.sync_state == "unsupported":
            sync_missing.append({"what": "CUDA sync call sites", "why": self.sync_state})
        seen = set()
        missing = []
        wm = getattr(self, "workers_mod", None)
        if final and wm is not None:
            m = _safe(lambda: wm.missing(self.run_dir, self.tag, list(self.loaders.values())))
            if m:
                sync_missing.append(m)
        fw = self.frameworks
        for m in self.missing + torch_missing + sync_missing + (fw.missing if fw is not None else []):
            k = (m["what"], m["why"])
            if k not in seen:
                seen.add(k)
                missing.append(m)
        loaders = []
        for v in self.loaders.values():
            d = dict(v)
            d.pop("_sig", None)
            loaders.append(d)
        s = self.step_stats
        return {
            "format": "bottleneck.evidence",
            "version": FORMAT_VERSION,
            "tag": self.tag,
            "pid": self.pid,
            "mode": self.mode,
            "final": final,
            "argv": list(sys.argv),
            "start_unix": self.t_start,
            "end_unix": _now(),
            "exit": self.exit,
            "step_source": self.step_source,
            "step_source_requested": self.step_source_req,
            "step_counts": dict(self.step_counts),
            "steps": self.steps,
            "step_stats": {"count": s["count"], "sum_s": s["sum_s"], "min_s": s["min_s"], "max_s": s["max_s"],
                           "mean_s": (s["sum_s"] / s["count"]) if s["count"] else None},
            "step_times": self.step_times,
            "per_step": self.stepstats.evidence() if self.stepstats is not None else None,
            "cpu_wait": self.stepstats.sched.evidence() if self.stepstats is not None else None,
            "framework_phases": fw.evidence() if fw is not None else None,
            "profiler": {
                "state": self.prof_state,
                "schedule": {k: self.pcfg.get(k) for k in ("skip_first", "wait", "warmup", "active", "repeat")},
                "options": {k: bool(self.pcfg.get(k)) for k in
                            ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")},
                "activities": getattr(self, "activities", []),
                "windows": self.windows,
            },
            "window_steps": self.window_steps,
            "dataloader": {
                "batches": self.dl_total_batches,
                "wait_s": self.dl_total_wait,
                "window_batches": self.dl_window_batches,
                "window_wait_s": self.dl_window_wait,
                "loaders": loaders,
            },
            "optimizers": list(self.optimizers.values()),
            "syncs": {
                "state": self.sync_state,
                "total": self.sync_total,
                "sites": sorted(self.sync_sites.values(), key=lambda r: -r["count"]),
            },
            "python_profiler": self.cfg.get("python_profiler", "sample"),
            "missing": missing,
            "errors": self.errors + (fw.errors if fw is not None else []),
            "notes": self.notes,
        }

    def _counts_text(self):
        c = self.step_counts
        return "optimizer steps %d, DataLoader batches %d, module forwards %d" % (
            c["optimizer"], c["dataloader"], c["forward"])

    def write_evidence(self, final):
        if os.getpid() != self.pid:
            return
        # Checkpoints run in the sampler thread while the program mutates
        # the agent's dicts: a "changed size during iteration" is retried,
        # and a failed checkpoint is not an error (the next write replaces it).
        for attempt in range(3):
            try:
                atomic_write_json(self.path("evidence-%s.json" % self.tag), self.evidence(final))
                return
            except Exception as e:
                if attempt == 2 and final:
                    self.errors.append("writing evidence: %s" % e)


def _load_sibling(name):
    """Load the agent file name.py beside this one (not put in sys.modules:
    the program's modules stay as without bottleneck)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _load_stepstats(errors):
    """The per-step memory and GC recorder (_bottleneck_stepstats.py beside
    this file), or None when it cannot start."""
    try:
        mod = _load_sibling("_bottleneck_stepstats")
        return mod.StepStats(lambda fn: _is_agent_file(fn) or _is_library_file(fn))
    except Exception as e:
        errors.append("step statistics: %s: %s" % (type(e).__name__, e))
        return None


_LIB_DIRS = None


def _is_library_file(fn):
    """True for files of torch, the standard library and site-packages."""
    global _LIB_DIRS
    if _LIB_DIRS is None:
        dirs = set()
        import sysconfig
        for k in ("stdlib", "platstdlib", "purelib", "platlib"):
            p = _safe(lambda: sysconfig.get_paths()[k])
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
    return fn.startswith(_LIB_DIRS) or (os.sep + "site-packages" + os.sep) in fn


# ---------------------------------------------------------------------------
# Entry points


def load_config(path):
    with open(path) as f:
        return json.load(f)


_agent = None


def get_agent():
    return _agent


def _trim_agent_frames(tb):
    """Drop the agent's frames from a traceback: the boot frames at its
    start, and hook frames at its end (a Ctrl-C can land while an optimizer
    hook of the agent runs)."""
    kept = []
    while tb is not None:
        if not _is_agent_file(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _install_trimming_excepthook():
    """Make the traceback Python prints for an uncaught exception start at
    the user's code, through whatever excepthook is current."""
    orig = sys.excepthook

    def hook(t, v, tb):
        sys.excepthook = orig
        tb = _trim_agent_frames(tb)
        try:
            v.__traceback__ = tb
        except Exception:
            pass
        orig(t, v, tb)

    sys.excepthook = hook


def _exit_code_of(e):
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


def run_main(cfg_path, mode, target, args):
    """Run target as the real __main__ (mode "script" or "module"), the way
    `python script.py` / `python -m module` do, with the agent recording."""
    global _agent
    import types
    cfg = load_config(cfg_path)
    # sys.path[0] is the agent's directory now; replace it as Python would.
    if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
        del sys.path[0]
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = sys.modules["builtins"]
    if mode == "module":
        sys.argv = ["-m"] + list(args)
        sys.path.insert(0, os.getcwd())
    else:
        sys.argv = [target] + list(args)
        is_pkg_dir = os.path.isdir(target) or _is_zip(target)
        sys.path.insert(0, target if is_pkg_dir else os.path.dirname(os.path.realpath(target)))
    sys.modules["__main__"] = main
    _agent = Agent(cfg, mode)
    _agent.start()
    # The program's frames sit under two of the agent's (the boot module
    # and this function), as few as possible: its recursion limit is 2
    # frames lower than under python (docs/run.md).
    try:
        if mode == "module":
            import runpy
            runpy._run_module_as_main(target, alter_argv=True)
        elif os.path.isdir(target) or _is_zip(target):
            import runpy
            runpy._run_module_as_main("__main__", alter_argv=False)
        else:
            exec(_compile_script(main, target), main.__dict__)
    except BaseException as e:
        if os.getpid() != _agent.pid:
            _agent.child_exit = e  # a forked child ending (see _exit_forked_child)
            raise
        if isinstance(e, StopAfterProfile):
            _agent.finish("stopped-after-profile", 0)
            raise SystemExit(0)
        if isinstance(e, SystemExit):
            _agent.finish("exit", _exit_code_of(e))
        elif isinstance(e, KeyboardInterrupt):
            _agent.finish("interrupted", 130, signal_name="SIGINT", exc="KeyboardInterrupt")
            _install_trimming_excepthook()
        else:
            _agent.finish("exception", 1, exc="%s: %s" % (type(e).__name__, e))
            _install_trimming_excepthook()
        raise
    else:
        _agent.finish("ok", 0)




def _frame_json(f):
    """A frame of the sampler's table; the program's own lines carry their
    source text, so that two runs of an edited program match lines that
    moved (bottleneck diff)."""
    d = {"file": f[0], "func": f[1], "line": f[2], "fline": f[3]}
    if f[2] and not f[0].startswith("<") and not _is_library_file(f[0]) and not _is_agent_file(f[0]):
        try:
            import linecache
            text = linecache.getline(f[0], f[2]).strip()
        except Exception:
            text = ""
        if text:
            d["text"] = text[:200]
    return d

def _optimizer_params(opt):
    """What an optimizer updates: its class, implementation flags, the
    number and elements of its parameters and the largest ones (a dense
    embedding table shows as one parameter holding most elements)."""
    out = {"class": type(opt).__name__, "params": 0, "numel": 0, "largest": []}
    try:
        ps = [p for g in opt.param_groups for p in g["params"]]
        defaults = getattr(opt, "defaults", {})
        for k in ("foreach", "fused"):
            if k in defaults:
                out[k] = defaults[k]
        out["params"] = len(ps)
        out["numel"] = sum(p.numel() for p in ps)
        for p in sorted(ps, key=lambda p: -p.numel())[:3]:
            g = p.grad
            out["largest"].append({"shape": list(p.shape), "numel": p.numel(), "dtype": str(p.dtype).replace("torch.", ""),
                                   "sparse_grad": bool(g is not None and g.is_sparse)})
    except Exception as e:  # an optimizer-like object without param_groups
        out["error"] = "%s: %s" % (type(e).__name__, e)
    return out

def _exit_forked_child(agent):
    """atexit handler of a child forked from the profiled process after
    Kineto started there: ends the child as Python would (its other atexit
    handlers run, stdio is flushed, same status) but without the C++ static
    destructors, because Kineto's config loader lost its thread in the fork
    and its destructor waits for it forever (pthread_cond_destroy).

    The status comes from how the child's code ended: sys.exit()/exit()/
    quit() and, under `bottleneck run python script.py`, the exception seen
    by sys.excepthook; a bare `raise SystemExit(n)` in a launcher-mode child
    is not seen and ends with 0 (documented in docs/run.md)."""
    if agent.child_exiting:
        return  # re-entered from _run_exitfuncs below
    agent.child_exiting = True
    exc = agent.child_exit
    code = 0
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None:
            code = 0
        elif not isinstance(code, int):
            code = 1  # Python printed the message already
    elif exc is not None:
        code = 1
    _safe(lambda: atexit._run_exitfuncs())
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        _safe(lambda: f.flush())
    if isinstance(exc, KeyboardInterrupt):
        _safe(lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _is_zip(path):
    import zipfile
    return os.path.isfile(path) and not path.endswith(".py") and _safe(lambda: zipfile.is_zipfile(path), False)


def _compile_script(main, target):
    """Set main up as `python target` does and return target's code."""
    try:
        with open(target, "rb") as f:  # io.open_code is what Python uses; same for plain files
            source = f.read()
    except OSError as e:
        sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n" % (sys.executable, target, e.errno, e.strerror))
        sys.stderr.flush()
        raise SystemExit(2)
    path = os.path.abspath(target)
    from importlib.machinery import SourceFileLoader
    main.__dict__.update({
        "__name__": "__main__",
        "__file__": path,
        "__cached__": None,
        "__doc__": None,
        "__package__": None,
        "__spec__": None,
        "__loader__": SourceFileLoader("__main__", path),
    })
    return compile(source, path, "exec", dont_inherit=True)


def activate_launcher(cfg_path):
    """Called from sitecustomize in processes that run the user's program
    under a launcher (`bottleneck run -- torchrun ...`). Python runs the
    program itself; the agent finishes from atexit."""
    global _agent
    cfg = load_config(cfg_path)
    os.environ["BOTTLENECK_AGENT_ACTIVE"] = str(os.getpid())
    _agent = Agent(cfg, "launcher")
    _agent.start()
    orig_hook = sys.excepthook

    def hook(t, v, tb):
        # runs before atexit for uncaught exceptions
        if issubclass(t, StopAfterProfile):
            _agent.finish("stopped-after-profile", 0)
            return
        if issubclass(t, KeyboardInterrupt):
            _agent.exit_hint = ("interrupted", 130, "SIGINT", "KeyboardInterrupt")
        else:
            _agent.exit_hint = ("exception", 1, None, "%s: %s" % (t.__name__, v))
        orig_hook(t, v, tb)

    sys.excepthook = hook
    atexit.register(_launcher_atexit)


def _launcher_atexit():
    a = _agent
    if a is None:
        return
    hint = getattr(a, "exit_hint", None)
    if a.stopped_after_profile:
        a.finish("stopped-after-profile", 0)
    elif hint:
        a.finish(hint[0], hint[1], signal_name=hint[2], exc=hint[3])
    else:
        a.finish("exit", None)
