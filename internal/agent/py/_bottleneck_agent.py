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

This module is the entry point (`run_main` for script and -m modes,
`activate_launcher` for launcher mode) and the Agent's core: start, hooks
on torch, step detection, signals, fork and finish. The other jobs are
modules beside it: _bottleneck_sampler (the Python profile and which files
are the agent's), _bottleneck_env (environment summary), _bottleneck_window
(steps, torch.profiler window, sync call sites), _bottleneck_evidence
(evidence and Python profile files), _bottleneck_files (format version,
atomic writes), and, loaded once the agent runs, _bottleneck_stepstats,
_bottleneck_workers and _bottleneck_frameworks (and _bottleneck_changes and
_bottleneck_nvtx when asked for).

Documented in docs/run.md.
"""

import atexit
import json
import os
import signal
import sys
import threading
import time
import types
import weakref

_HERE = os.path.dirname(os.path.abspath(__file__))


class _Siblings(object):
    """`with _Siblings(): from _bottleneck_x import ...` imports the agent's
    modules from beside this file: the agent's directory is not on the
    program's sys.path. A module imported here leaves sys.modules at the
    end of the block (the program's sys.modules holds no bottleneck module;
    the imported names keep it alive); one that was there already (the
    unit tests import them from the directory) is used as it is."""

    NAMES = ("_bottleneck_files", "_bottleneck_env", "_bottleneck_sampler", "_bottleneck_window",
             "_bottleneck_evidence", "_bottleneck_overhead")

    def find_spec(self, name, path=None, target=None):
        if name not in self.NAMES:
            return None
        import importlib.util
        return importlib.util.spec_from_file_location(name, os.path.join(_HERE, name + ".py"))

    def __enter__(self):
        self.present = [n for n in self.NAMES if n in sys.modules]
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc):
        sys.meta_path.remove(self)
        for n in self.NAMES:
            if n not in self.present:
                sys.modules.pop(n, None)
        return False


with _Siblings():
    from _bottleneck_env import base_env, package_versions, safe, torch_env
    from _bottleneck_evidence import Evidence
    from _bottleneck_files import atomic_write_json
    import _bottleneck_files as files
    from _bottleneck_overhead import OverheadAB
    from _bottleneck_sampler import SAMPLING_PAUSED, Sampler, is_agent_file, is_library_file
    from _bottleneck_window import StopAfterProfile, Window

_LOCK_THRESHOLD = 8  # DataLoader batches / forwards before auto locks on them
# Forwards with autograd on before auto locks on them: a training loop
# calls its modules several times before its first optimizer.step() (an
# unrolled RNN cell, per-sample calls, gradient accumulation), and those
# calls are not its steps.
_GRAD_LOCK_THRESHOLD = 64
# ... and a forward whose inputs carry autograd history does not lock them
# (_has_autograd_history) until this many forwards ran.
_HISTORY_LOCK_LIMIT = 1024
# ... but _LOCK_THRESHOLD do once this long has passed since the first
# forward with no gradient in the parameters of the modules called: no
# backward ran, so it is inference that forgot torch.no_grad() (an
# evaluation of 60 batches of 270 ms each recorded no trace at all; at
# 3 s, neither did 40 batches in 2.2 s), not training (whose frozen
# modules, a text encoder beside a trained UNet, have no gradients either,
# hence all of them; and a training program has made its optimizer, see
# _UNSTEPPED_OPTIMIZER_WAIT_S).
_NO_BACKWARD_LOCK_S = 1.0
# Once the program made an optimizer (torch.optim) that has not stepped
# yet, forwards lock only after this long since the first: it trains, and
# a reinforcement-learning rollout (a DQN's 256 forwards filling its
# replay buffer, a PPO rollout of 512), an evaluation before training or
# 64 per-sample forwards before the first backward come before its first
# optimizer.step(); those forwards are not its steps (each was a step).
_UNSTEPPED_OPTIMIZER_WAIT_S = 10.0
# An optimizer.step(closure) that evaluated its closure this many times
# and has not returned, before any optimizer step ended, makes each
# evaluation a step: the program trains in one long step (a PINN's
# L-BFGS with max_iter=50000: its whole training one optimizer.step(),
# no step ever ended, no trace). L-BFGS's default evaluates at most 25
# times a step (max_eval = max_iter * 5 / 4), and its steps stay the steps.
_CLOSURE_LOCK_EVALS = 32
_PROGRESS_EVERY_S = 0.25  # the same phase's progress, at most this often (see progress)


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
            SAMPLING_PAUSED[0] += pause
            try:
                orig(module)
            finally:
                SAMPLING_PAUSED[0] -= pause
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
        a._own.depth = getattr(a._own, "depth", 0) + 1
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
        a._own.depth -= 1
        if a.frameworks is not None:
            a.frameworks.leave_agent()
        if a.sampler is not None:
            a.sampler.leave_own_work()
        elif a.cprof is not None and threading.current_thread() is threading.main_thread():
            a._cprof_depth -= 1
            if a._cprof_depth == 0 and not a.finished:
                a.cprof.enable()
        return False


class Agent(Window, Evidence):
    """The agent of one process: starts the Python profiler, hooks torch
    (step detection, DataLoader, optimizers, torch.compile, the program's
    own profilers), and finishes the run's files. Steps and the profiler
    window are Window's; the files Evidence writes."""

    def __init__(self, cfg, mode):
        self.cfg = cfg
        self.mode = mode
        self.run_dir = cfg["run_dir"]
        self.pid = os.getpid()
        self.t_start = time.time()
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
        pcfg = cfg.get("profiler", {})
        self.pcfg = pcfg
        self.step_source_req = cfg.get("step_source", "auto")
        self.step_source = None
        # the step source auto detection locked first (module forwards, a
        # DataLoader's batches) when an optimizer stepped later: see
        # _switch_to_optimizer
        self.step_source_switch = None
        self.step_counts = {"optimizer": 0, "dataloader": 0, "forward": 0, "closure": 0}
        self._step_evals = 0  # closure evaluations of the optimizer.step() in progress (_on_closure)
        self.first_optimizer = None  # _Identity of the optimizer whose steps are the steps
        # another optimizer's steps since the first's last one ([_Identity,
        # count]), and the later stages of training taken as the steps
        # (_later_stage)
        self._other_run = None
        self.step_stages = []
        self._stepped_optimizers = _IdentitySet()  # the optimizers seen stepping
        self.optimizers = {}  # id -> _optimizer_params, at the first step of each
        self.models = {}  # (class, file, line) -> the outermost modules the program calls, and where
        self._model_calls = 0  # outermost forwards looked at for self.models (the first _MODEL_CALLS)
        self.first_loader = None
        self.step_thread = None
        self._init_window()
        self.stepstats = None  # _bottleneck_stepstats.StepStats: memory and GC per step
        self.frameworks = None  # _bottleneck_frameworks.Frameworks: Lightning / HF Trainer phases
        self.changes = None  # _bottleneck_changes.Changes: the run-time changes asked for (cfg "set")
        self.program_options = None  # _bottleneck_options.Options: the program's command-line options
        self.live = None  # _bottleneck_live.Live: the --live view's feed (cfg "live")
        self.nvtx = None  # _bottleneck_nvtx.Ranges: NVTX ranges (--nvtx), loaded only then
        self.children = None  # _bottleneck_children.Children: the processes the program starts (with the sampler)
        self.compile_used = False  # the program called torch.compile (see _watch_torch_compile)
        self.compile_called = False  # ... at any time, whatever the step source
        self.program_profiler = None  # "file:line" where the program started its own profiler
        self.child_exit = None  # in a forked child: how its code ended
        self.child_exiting = False
        # dataloader
        self.dl_total_wait = 0.0
        self.dl_total_batches = 0
        self.dl_window_wait = 0.0
        self.dl_window_batches = 0
        self.loaders = {}  # id(loader) -> info
        self._fwd_handles = []
        self._item_modules, self._item_handles = [], []  # _count_items
        self.calls = None  # _count_calls
        self._fwd_depth = threading.local()
        # outermost forward calls per module (id) until steps lock, and the
        # module whose calls are the steps (forward step source)
        self._forward_calls, self.step_module = {}, None
        self._forward_modules = {}  # id -> weakref of the modules in _forward_calls (_has_grads)
        # ... of them, the calls with autograd on whose inputs carried no
        # autograd history, per module, and whether any carried some: then
        # only a fresh call of the step module starts a step
        self._fresh_calls, self._history_calls, self._fresh_steps_only = {}, 0, False
        # the tensor shapes the step module's call got at the first and the
        # latest step (forward steps only): a model fed more every step (a
        # generation loop re-running the whole sequence) slows the run
        self.step_inputs = {"first": None, "last": None}
        self._own = threading.local()  # .depth: this thread does the agent's own work (_OwnWork)
        self._grad_forwards = False  # a forward ran with autograd on (see _GRAD_LOCK_THRESHOLD)
        self._optimizer_made = False  # a torch.optim.Optimizer was constructed (_UNSTEPPED_OPTIMIZER_WAIT_S)
        self._optimizer_step_begun = False  # an optimizer.step() entered and not returned (_forwards_to_lock)
        self.optimizer_pre_hook = None
        self._first_forward_t = None
        self.progress_path = None
        self._progress_phase, self._progress_at = None, 0.0
        self._last_ckpt = time.perf_counter()
        self._t0 = time.perf_counter()
        self._finishing = False
        self._sigterm_in_finish = False  # a SIGTERM came during the save

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
        """Write the progress file the CLI polls (runner.pollProgress, every
        250 ms): a new phase at once, the same phase's counters at most
        every _PROGRESS_EVERY_S. Written at every step, it cost 0.85 ms a
        step inside the Optimizer.step region (the step hook runs there),
        which made the recorded steps 1.5x the others and the optimizer
        look 1.3 ms slower."""
        if self.progress_path is None:
            return
        now = time.perf_counter()
        if phase == self._progress_phase and now - self._progress_at < _PROGRESS_EVERY_S:
            return
        self._progress_phase, self._progress_at = phase, now
        d = {"phase": phase, "tag": self.tag, "step": self.steps, "time": time.time()}
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
            os.makedirs(self.path(files.PROGRESS_DIR), exist_ok=True)
            self.progress_path = self.path(os.path.join(files.PROGRESS_DIR, self.tag + ".json"))
        except OSError:
            self.progress_path = None
        self.env = base_env()
        self.write_env()
        self._enable_crash_dump()
        prof_kind = self.cfg.get("python_profiler", "sample")
        if prof_kind == "sample":
            self.sampler = Sampler(self.cfg.get("sample_interval", 0.02),
                                   window_interval=self.cfg.get("window_sample_interval", 0.005),
                                   budget=self.cfg.get("sample_budget", 0.0))
            self.sampler.on_tick = self._tick
        elif prof_kind == "cprofile":
            import cProfile
            self.cprof = cProfile.Profile()
            self.cprof.enable()
        self.overhead_ab = OverheadAB.from_env(self.sampler)
        with self.own_work():
            self._start_in_own_work()

    def _start_in_own_work(self):
        if self.sampler is not None:
            self._watch_children()
            self.sampler.start_thread()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork_child)
            default_sigterm_in_children(self._on_sigterm)
        self.stepstats = _load_stepstats(self.errors)
        if self.cfg.get("live"):
            try:
                self.live = _load_sibling("_bottleneck_live").Live(self.run_dir, self.tag, self._t0)
                self.live.start_thread()
                if self.sampler is not None:
                    self.live.attach_sampler(self.sampler)  # the step's on-CPU and blocked time split
            except Exception as e:
                self.errors.append("live view: %s: %s" % (type(e).__name__, e))
        if self.cfg.get("set"):
            self.changes = _load_changes(self.cfg["set"], self.errors)
        self.program_options = _load_options(self.pid, self.errors, lambda name, fn: sys.meta_path.insert(0, _TorchImportWatcher(fn, name)))
        if self.cfg.get("nvtx"):
            self.nvtx = _load_nvtx(self.cfg["nvtx"], self.errors)
        if self.stepstats is not None:
            self.stepstats.agent_busy = lambda: getattr(self._own, "depth", 0) > 0
        try:
            self.frameworks = _load_sibling("_bottleneck_frameworks").Frameworks(
                lambda name, fn: sys.meta_path.insert(0, _TorchImportWatcher(fn, name)), ranges=self.nvtx)
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
            self._crash_path = self.path(files.crash_name(self.tag))
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
            atomic_write_json(self.path(files.env_name(self.tag)), self.env)
        except Exception as e:
            self.errors.append("writing env: %s" % e)

    def _watch_children(self):
        """Reads the scheduling of the processes the program starts at each
        of the sampler's ticks (_bottleneck_children.py)."""
        try:
            mod = _load_sibling("_bottleneck_children")
            children = mod.Children()
            if mod.install(children, self.pid) is not None:
                self.children = children
        except Exception as e:
            self.errors.append("multiprocessing children: %s: %s" % (type(e).__name__, e))

    def _tick(self):
        # sampler thread, about once a second
        if self.children is not None:
            try:
                self.children.read()
            except Exception:
                pass
        # periodic checkpoint so a kill loses at most checkpoint_interval
        # seconds of Python profile
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
        if self.changes is not None:
            # first: the environment read below and the program see the changed settings
            self.changes.on_torch(torch)
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
        if self.nvtx is not None:
            try:
                self.nvtx.on_torch(torch)  # its optimizer hook before the agent's: see Ranges.on_torch
            except Exception as e:
                self.errors.append("nvtx hooks: %s: %s" % (type(e).__name__, e))
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
        elif self.step_source_req == "auto" or self.nvtx is not None or \
                (self.changes is not None and self.changes.wants_model()):
            # outermost nn.Module forward calls are the last fallback; they
            # are removed as soon as another source locks (unless --nvtx
            # keeps them for its "forward" ranges: _nvtx_forwards); the
            # model changes are made at a model's first call
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
        if self.step_source_req == "auto":
            self._watch_optimizer_init(torch)
        if self.step_source_req in ("auto", "closure"):
            try:
                from torch.optim.optimizer import register_optimizer_step_pre_hook
                self.optimizer_pre_hook = register_optimizer_step_pre_hook(self._on_optimizer_step_begin)
            except ImportError:
                pass

    def _on_optimizer_step_begin(self, opt, args, kwargs):
        # an optimizer.step(closure) in progress: the closure's forwards are
        # inside one step (see _forwards_to_lock); the post hook ends it
        if os.getpid() != self.pid:
            return None
        self._optimizer_step_begun = True
        self._step_evals = 0
        if not (self.step_source == "closure" or self.step_source is None and (
                self.step_counts["optimizer"] == 0 or self.step_source_req == "closure")):
            return None
        # the closure, wrapped to count its evaluations (_on_closure); the
        # hook hands torch the arguments to call step() with, the
        # optimizer first among them
        closure = args[1] if len(args) > 1 else kwargs.get("closure")
        if not callable(closure):
            return None
        agent = self

        def closure_evaluated(*a, **k):
            agent._on_closure()
            return closure(*a, **k)

        if len(args) > 1:
            return (args[0], closure_evaluated) + tuple(args[2:]), kwargs
        return args, dict(kwargs, closure=closure_evaluated)

    def _on_closure(self):
        """An evaluation of the closure of the optimizer.step() in
        progress begins: a step boundary once they are the steps
        (_CLOSURE_LOCK_EVALS)."""
        self.step_counts["closure"] += 1
        self._step_evals += 1
        if self.step_source == "closure":
            self._step()
        elif self.step_source is None and self.step_source_req == "closure":
            # asked for (--step-source closure): from the first evaluation
            self.notes.append("steps: the closure's evaluations inside optimizer.step(closure) (--step-source closure); "
                              "the optimizer's work between two is the step before")
            self._lock("closure")
            self.step_start = time.perf_counter()
        elif self.step_source is None and self._step_evals >= _CLOSURE_LOCK_EVALS and self.step_counts["optimizer"] == 0:
            self.notes.append("steps: the closure's evaluations inside optimizer.step(closure), which evaluated it %d times "
                              "without returning (an optimizer such as L-BFGS given a large max_iter: the whole training "
                              "one step); each evaluation is a step, and the optimizer's work between two is the step "
                              "before" % self._step_evals)
            self._lock("closure")
            self.step_start = time.perf_counter()

    def _watch_optimizer_init(self, torch):
        """Notes that the program made an optimizer (every torch.optim class
        calls Optimizer.__init__): its forwards before the first step may
        be a rollout, not steps (_UNSTEPPED_OPTIMIZER_WAIT_S)."""
        cls = torch.optim.Optimizer
        orig, agent = cls.__init__, self

        def __init__(opt, *args, **kwargs):
            orig(opt, *args, **kwargs)
            agent._optimizer_made = True
        __init__.__wrapped__ = orig
        for a in ("__name__", "__qualname__", "__doc__", "__module__"):
            setattr(__init__, a, getattr(orig, a, None))
        cls.__init__ = __init__

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
            agent.compile_called = True
            agent._stop_counting_items()  # a hook's count would break the compiled graph
            # hooks that stay for the whole run (forward steps) guard nothing away
            if os.getpid() == agent.pid and not agent.compile_used and (
                    (agent.step_source_req == "auto" and agent.step_source is None)
                    or (agent._nvtx_forwards() and "forward" not in (agent.step_source, agent.step_source_req))):
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
        aside for good, before the program's starts. A legacy profiler
        made with enabled=False starts nothing: programs wrap their loop
        in one behind a flag (facebookresearch/dlrm's --enable-profiling),
        and stepping aside for it cost them their trace."""
        import torch.autograd.profiler as legacy
        import torch.profiler.profiler as tpp
        agent = self
        for cls, name in ((tpp.profile, "start"), (tpp._KinetoProfile, "start"), (legacy.profile, "__enter__")):
            orig = cls.__dict__.get(name)
            if orig is None or getattr(orig, "_bottleneck_wrapped", False):
                continue

            def wrapper(prof, *args, _orig=orig, **kwargs):
                if prof is not agent.prof and os.getpid() == agent.pid and getattr(prof, "enabled", True) is not False:
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
        while frame is not None and (is_agent_file(frame.f_code.co_filename)
                                     or is_library_file(frame.f_code.co_filename)):
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
        ranges = self.nvtx
        depth = self._fwd_depth

        def __next__(it):
            if os.getpid() != agent.pid:
                return orig(it)
            agent._on_dl_enter(it)
            if ranges is not None:
                ranges.begin("DataLoader wait")
            # modules called while a batch loads in this process (the
            # transforms of a loader without workers: torchvision's
            # Normalize is a module) are not outermost forwards: they
            # were pytorch/examples' mnist's only "model", 64 calls a
            # batch, and could have been the steps of a loop without an
            # optimizer
            d = getattr(depth, "d", 0)
            depth.d = d + 1
            t0 = perf()
            r = None
            ok = False
            try:
                r = orig(it)
                ok = True
                return r
            finally:
                depth.d = d
                agent._on_dl_batch(it, perf() - t0, ok, r)
                if ranges is not None:
                    ranges.end("DataLoader wait")

        __next__._bottleneck_wrapped = True
        __next__.__wrapped__ = orig
        cls.__next__ = __next__

        # the multiprocessing iterator starts its worker processes when it
        # is made (once per epoch unless they persist): time it
        mp = getattr(dlmod, "_MultiProcessingDataLoaderIter", None)
        init = getattr(mp, "__init__", None)
        if init is None or getattr(init, "_bottleneck_wrapped", False):
            return

        def __init__(it, *args, **kwargs):
            t0 = perf()
            init(it, *args, **kwargs)
            try:
                it._bottleneck_start_s = perf() - t0
                # the first iterator of this DataLoader object (a mark on
                # it, not its id: a loader made again per pass can reuse
                # the address of the one it replaced)
                loader = args[0] if args else kwargs.get("loader")
                if loader is not None and not getattr(loader, "_bottleneck_iterated", False):
                    loader._bottleneck_iterated = True
                    it._bottleneck_new_loader = True
            except Exception:
                pass

        __init__._bottleneck_wrapped = True
        __init__.__wrapped__ = init
        mp.__init__ = __init__

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
        ranges = self.nvtx

        changes = self.changes

        def pre(module, args):
            d = getattr(depth, "d", 0)
            depth.d = d + 1
            if d == 0 and os.getpid() == agent.pid:
                agent._on_forward(module, args)
                if ranges is not None:
                    ranges.begin("forward")
                if changes is not None:
                    with agent.own_work():
                        changes.on_model(module, torch)

        def post(module, args, out):
            d = depth.d = max(0, getattr(depth, "d", 1) - 1)
            if d == 0 and ranges is not None:
                ranges.end("forward")

        self._fwd_handles = [register_module_forward_pre_hook(pre), register_module_forward_hook(post)]

    def _remove_forward_hooks(self):
        _remove_handles(self._fwd_handles)
        self._fwd_handles = []

    def _stop_counting_items(self):
        _remove_handles(self._item_handles)
        self._item_handles, self.step_items = [], None
        if self.calls is not None:
            self.calls.close()

    # -- step detection -------------------------------------------------------
    def _step(self):
        ranges = self.nvtx
        if ranges is not None:
            ranges.end_step()
        calls = self.calls if threading.get_ident() == self.step_thread else None
        if calls is not None:
            self.step_calls = calls.stop()
        try:
            Window._step(self)
        finally:
            ab = self.overhead_ab  # its blocks with the agent off count nothing
            if calls is not None and not (self.in_window or self.warming or (ab is not None and not ab.on)):
                calls.start_if_due(self.steps)
            if self.changes is not None and threading.get_ident() == self.step_thread:
                self.changes.on_step(self.steps)  # gc_freeze after the first step
            if ranges is not None:
                ranges.begin_step(self.steps + 1)

    def _lock(self, source):
        with self.own_work():
            return self._lock_in_own_work(source)

    def _lock_in_own_work(self, source):
        self.step_source = source
        self.step_thread = threading.get_ident()
        if source != "forward":
            if self.nvtx is not None and not self.compile_used:
                self._nvtx_forward_hooks()
            else:
                self._remove_forward_hooks()
            self._count_items()
            self._count_calls()
        if self.nvtx is not None:
            self.nvtx.begin_step(self.steps + 1)
        self._start_profiler()

    def _count_items(self):
        """Counts, from the step the steps locked on, the calls of the
        models whose first call got one sample (a policy called once per
        environment step): a step that does more of them as the run goes
        on (an RL episode lasting longer as its policy learns) does more
        items, not work that grows with what the run keeps. A hook on
        those modules only: their calls alone take torch's slower path."""
        mods = [m for m in (r() for r in self._item_modules) if m is not None]
        if not mods or self.compile_called:
            return

        def count(module, args):
            # the calls on one sample only: a DQN's network is also called
            # on the replay batch it learns from
            if self.step_items is not None and args:
                shape = getattr(args[0], "shape", None)
                if shape is not None and (len(shape) == 1 or (len(shape) > 1 and shape[0] == 1)):
                    self.step_items += 1

        for m in mods:
            try:
                self._item_handles.append(m.register_forward_pre_hook(count))
            except Exception:
                pass  # a module that takes no hooks (scripted): its calls go uncounted
        if self._item_handles:
            self.step_items = 0

    def _count_calls(self):
        """Counts the outermost module calls of one step in every few
        (_bottleneck_calls.py): a run whose steps grow by doing more of
        them does more of the same work. Not with --nvtx's module hooks,
        nor once the program compiled (a global hook breaks its graphs)."""
        if self.compile_called or self.nvtx is not None or self.calls is not None:
            return
        try:
            from torch.nn.modules.module import register_module_forward_pre_hook, register_module_forward_hook
        except ImportError:
            return  # torch before 1.13: not counted
        try:
            self.calls = _load_sibling("_bottleneck_calls").CallCounter(register_module_forward_pre_hook, register_module_forward_hook)
        except Exception as e:
            self.errors.append("module call counts: %s: %s" % (type(e).__name__, e))

    def _nvtx_forward_hooks(self):
        """--nvtx's "forward" ranges once the steps locked on another
        source than forwards: the global module hooks give way to hooks on
        the modules called outermost so far (the model, a loss module).
        Global hooks send every module call through torch's slow path (3
        us a module call, 50 us a forward of 17 modules, on this
        project's CPU machine); these cost a few us a step. Modules first
        called after the lock get no range."""
        mods = [r() for r in self._forward_modules.values() if r is not None]
        self._remove_forward_hooks()
        ranges, depth = self.nvtx, self._fwd_depth

        def pre(module, args):
            d = getattr(depth, "d", 0)
            depth.d = d + 1
            if d == 0:
                ranges.begin("forward")

        def post(module, args, out):
            d = depth.d = max(0, getattr(depth, "d", 1) - 1)
            if d == 0:
                ranges.end("forward")

        for m in mods:
            if m is None:
                continue
            try:
                self._fwd_handles.append(m.register_forward_pre_hook(pre))
                try:  # the range ends when the forward raises too (torch >= 2.1)
                    self._fwd_handles.append(m.register_forward_hook(post, always_call=True))
                except TypeError:
                    self._fwd_handles.append(m.register_forward_hook(post))
            except Exception as e:
                self.errors.append("nvtx forward hooks: %s: %s" % (type(e).__name__, e))
                return

    def _nvtx_forwards(self):
        """Whether forward hooks stay after the steps locked on another
        source, for --nvtx's "forward" ranges (_nvtx_forward_hooks). Not
        once the program uses torch.compile (see _watch_torch_compile)."""
        return self.nvtx is not None and bool(self._fwd_handles) and not self.compile_used

    def _on_optimizer_step(self, opt, args, kwargs):
        if os.getpid() != self.pid:
            return
        self._optimizer_step_begun = False
        self.step_counts["optimizer"] += 1
        if self.in_window:
            self.check_window_bounds()  # another optimizer's steps: not this window's
        if id(opt) not in self.optimizers and len(self.optimizers) < 8:
            with self.own_work():  # grad_rows reads a table's gradient once
                self.optimizers[id(opt)] = info = _optimizer_params(opt)
            site = _program_site(sys._getframe(1))
            if site is not None:  # the program's line that called step()
                info["step_site"] = site
        if self.step_source is None and self.step_source_req in ("auto", "optimizer"):
            self.first_optimizer = _Identity(opt)
            self._lock("optimizer")
            self.step_start = time.perf_counter()
            return
        if self.step_source in ("forward", "dataloader") and self.step_source_req == "auto" \
                and self.step_source_switch is None and threading.get_ident() == self.step_thread \
                and self.program_profiler is None:
            with self.own_work():
                self._switch_to_optimizer(opt)
            return
        # one identity test a step: each Python call at a step boundary
        # costs the program about a microsecond (docs/performance.md)
        first = self.step_source == "optimizer" and self.first_optimizer.of(opt)
        if self.window_index == 0 and not self.window_steps:
            if self.step_source == "optimizer" and not first and not self.in_window and self.steps >= 2 \
                    and not self._stepped_optimizers.has(opt):
                # A second optimizer's first step after the first one
                # stepped 3 times or more: the first is an inner loop (a
                # GAN's critic, stepped 5 times per generator step), and an
                # iteration ends with this one. Before the window only, so
                # that it records iterations.
                self.first_optimizer, first = _Identity(opt), True
            self._stepped_optimizers.add(opt)  # read by the test above alone
        if self.step_source != "optimizer":
            return
        if first:
            self._other_run = None
            self._step()
        elif self._later_stage(opt):
            with self.own_work():
                self._stage_to(opt)

    def _later_stage(self, opt):
        """Whether opt, not the steps' optimizer, has taken over: it
        stepped _STAGE_STEPS times in a row, none of the steps' optimizer
        between, for _STAGE_IDLE median steps or more (training in stages:
        a classifier's head, then the whole model with a new optimizer;
        layers trained one after another). A GAN's critic steps a few times
        per generator step, and stays an inner loop. Outside the window, in
        the steps' thread."""
        run = self._other_run
        if run is None or not run[0].of(opt):
            self._other_run = run = [_Identity(opt), 0]
        run[1] += 1
        if run[1] < _STAGE_STEPS or self.in_window or self.warming or threading.get_ident() != self.step_thread:
            return False
        recent = sorted(d for d in self._recent_steps if d is not None)
        return bool(recent) and time.perf_counter() - self.step_start >= _STAGE_IDLE * recent[len(recent) // 2]

    def _stage_to(self, opt):
        """The steps are opt's from now on (_later_stage): its steps since
        the last step are not timed."""
        now = time.perf_counter()
        untimed = self._other_run[1]
        self.first_optimizer, self._other_run = _Identity(opt), None
        stage = {"after_step": self.steps, "at_s": round(now - self._t0, 6), "untimed": untimed,
                 "optimizer": type(opt).__name__}
        site = self.optimizers.get(id(opt), {}).get("step_site")
        if site is not None:
            stage["site"] = site
        self.step_stages.append(stage)
        self.notes.append("steps: another optimizer's (%s) optimizer.step() calls from step %d on: the first "
                          "stopped stepping and this one stepped %d times in a row (a later stage of training); "
                          "those %d are not timed" % (type(opt).__name__, self.steps + 1, untimed, untimed))
        self.step_start = now

    def _switch_to_optimizer(self, opt):
        """An optimizer stepped after the steps locked on module forwards or
        DataLoader batches: those were not the steps (an evaluation before
        training, a slow first batch, a busy machine that made the wait for
        the first optimizer.step() run out). The steps become this
        optimizer's from now on: the steps so far, their profiler window and
        its trace are dropped, and the window starts again on optimizer
        steps. Once, in the thread of the steps (the profiler can only be
        stopped there)."""
        old, n = self.step_source, self.steps
        now = time.perf_counter()
        self.step_source_switch = {
            "from": old, "to": "optimizer", "after_steps": n, "at_s": round(now - self._t0, 6),
            "windows_dropped": len(self.windows) + (1 if self.in_window else 0),
            "why": "an optimizer stepped after %d %s were taken for steps; those were not training "
                   "iterations (an evaluation before training, a long first batch, micro-batches of "
                   "gradient accumulation)" % (n, {"forward": "module forwards",
                                                   "dataloader": "DataLoader batches"}[old]),
        }
        prof = self.prof
        self.prof = None
        self._remove_close_hooks()
        if prof is not None:
            try:
                prof.on_trace_ready = None
                prof.stop()
            except Exception as e:
                self.errors.append("stopping torch.profiler for the optimizer's steps: %s: %s" % (type(e).__name__, e))
        self._set_window(False)
        for w in self.windows:
            safe(lambda: os.remove(self.path(w["file"])))
        if self.sampler is not None:
            self.sampler.drop_window()
        if self.stepstats is not None:
            safe(self.stepstats.restart)
        gen = self._window_gen
        self._init_window()
        self._window_gen = gen + 1  # the old window's bounds thread ends
        self.dl_window_wait, self.dl_window_batches = 0.0, 0
        self.step_module, self.step_inputs = None, {"first": None, "last": None}
        self.notes.append("steps: %s, then optimizer.step() calls from step %d on: %s; the window and step "
                          "times are the optimizer's steps" % (old, n, self.step_source_switch["why"]))
        self.first_optimizer = _Identity(opt)
        self._stepped_optimizers.add(opt)
        missing = list(self.missing)
        if self.compile_called and self._fwd_handles:
            # removing global hooks would recompile the program's compiled
            # model: they stay, counting forwards only
            self._lock_keeping_hooks("optimizer")
        else:
            self._lock_in_own_work("optimizer")
        # a trace not recorded (--no-trace, no Kineto) is said once
        self.missing = missing + [m for m in self.missing[len(missing):] if m not in missing]
        self.step_start = time.perf_counter()

    def _lock_keeping_hooks(self, source):
        self.step_source = source
        self.step_thread = threading.get_ident()
        if self.nvtx is not None:
            self.nvtx.begin_step(self.steps + 1)
        self._start_profiler()

    def _on_dl_enter(self, it):
        loader = getattr(it, "_bottleneck_loader", None)
        if loader is None:
            loader = self._register_loader(it)
        self.step_counts["dataloader"] += 1
        if self.in_window:
            self.check_window_bounds()
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
            # an IterableDataset yields its samples from __iter__
            "iterable": safe(lambda: isinstance(it._dataset, self.torch.utils.data.IterableDataset), False),
            "drop_last": getattr(it, "_drop_last", None),
            "batches": 0,
            "wait_s": 0.0,
            "max_wait_s": 0.0,
            # iterators made (one per epoch unless the workers persist);
            # making each (the worker processes' start) and the call that
            # ended its epoch (their shutdown), outside wait_s; the wait
            # for each one's first batch, inside it
            "iterators": 1,
            # DataLoader objects among them: a loader made anew for each
            # pass (an evaluation's, in the loop) starts its workers each
            # time, whatever persistent_workers says
            "loaders": 1,
            "restart_s": 0.0,
            "first_wait_s": 0.0,
            # [step, s since the agent's start] of each iterator's making
            # (the first _MAX_STARTS): a fork's copy-on-write faults and
            # the new workers' start slow the steps after it beyond restart_s
            "starts": [self._iterator_start(it)],
            # the calls that ended the epochs (in restart_s too), before
            # the next iterator's making, which starts lets be timed
            "stop_s": 0.0,
            # the program's line that took the first batch: its loop
            "site": _program_site(sys._getframe(1)),
        }
        bs = getattr(getattr(it, "_index_sampler", None), "batch_size", None)
        info["batch_size"] = bs
        info.update(_dataset_in_memory(getattr(it, "_dataset", None)))
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
                v["iterators"] += 1
                v["loaders"] += getattr(it, "_bottleneck_new_loader", False)
                if len(v["starts"]) < _MAX_STARTS:
                    v["starts"].append(self._iterator_start(it))
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

    def _iterator_start(self, it):
        """[the step in progress, when the iterator it was made] (seconds
        since the agent's start, step_times' clock): its first batch is
        asked for right after it is made."""
        made = time.perf_counter() - getattr(it, "_bottleneck_start_s", 0.0)
        return [self.steps + 1, round(made - self._t0, 6)]

    def _on_dl_batch(self, it, dt, ok, batch=None):
        lid = getattr(it, "_bottleneck_loader", None)
        loader = next((v for v in self.loaders.values() if v["id"] == lid), None)
        if not ok:
            # StopIteration or an error: not a batch; the end of an epoch
            # shuts the workers down
            if loader is not None and sys.exc_info()[0] is StopIteration:
                loader["restart_s"] += dt
                loader["stop_s"] += dt
            return
        if not getattr(it, "_bottleneck_seen", False):
            try:
                it._bottleneck_seen = True
                if loader is not None:
                    loader["restart_s"] += getattr(it, "_bottleneck_start_s", 0.0)
                    loader["first_wait_s"] += dt
                    if "batch_bytes" not in loader:
                        # what a worker hands over a batch (the main process
                        # maps and faults in its shared memory)
                        loader["batch_bytes"] = _tensor_bytes(self.torch, batch)
            except Exception:
                pass
        if loader is not None:
            loader["batches"] += 1
            loader["wait_s"] += dt
            if dt > loader["max_wait_s"]:
                loader["max_wait_s"] = dt
        self.dl_total_wait += dt
        self.dl_total_batches += 1
        self.step_dl_wait += dt
        self.step_dl_batches += 1
        if loader is not None and loader.get("batch_size"):
            self.step_dl_samples += loader["batch_size"]
        if self.in_window:
            self.dl_window_wait += dt
            self.dl_window_batches += 1

    def _on_forward(self, module, args):
        self.step_counts["forward"] += 1
        if self._model_calls < _MODEL_CALLS:
            self._note_model(module, args)
        if self.in_window:
            self.check_window_bounds()
        if self.step_source is None and self.nvtx is not None and self.step_source_req not in ("auto", "forward") \
                and len(self._forward_modules) < 64 and id(module) not in self._forward_modules:
            self._forward_modules[id(module)] = safe(lambda: weakref.ref(module), None)  # _nvtx_forward_hooks
        if self.step_source is None and self.step_source_req in ("auto", "forward"):
            calls = self._forward_calls
            if len(calls) < 64 or id(module) in calls:
                calls[id(module)] = calls.get(id(module), 0) + 1
                if id(module) not in self._forward_modules:
                    self._forward_modules[id(module)] = safe(lambda: weakref.ref(module), None)
            grad = safe(lambda: self.torch.is_grad_enabled(), False)
            self._grad_forwards = self._grad_forwards or grad
            history = grad and _has_autograd_history(args, self.torch.Tensor)
            if history:
                self._history_calls += 1
            elif grad and id(module) in calls:
                self._fresh_calls[id(module)] = self._fresh_calls.get(id(module), 0) + 1
            if self._first_forward_t is None:
                self._first_forward_t = time.perf_counter()
            need = self._forwards_to_lock()
            if self.step_source_req == "forward" or (
                    self.step_counts["forward"] >= need
                    and self.step_counts["optimizer"] == 0 and self.step_counts["dataloader"] == 0
                    and not (history and self.step_counts["forward"] < _HISTORY_LOCK_LIMIT)):
                # A step is one call of the module called most so far (the
                # first of them on a tie): a program that calls a backbone
                # and then a head, each outermost, made two steps of every
                # request, every other one a thousandth of the step.
                self.step_module = max(calls, key=calls.get)
                if self._history_calls and self._fresh_calls:
                    # Calls that continue a graph are inside a step: a
                    # training loop without torch.optim (an RNN cell fed
                    # its own hidden state, then backward and an update by
                    # hand; pytorch/tutorials' char-RNN made a step of
                    # each letter's call). A step is a fresh call of the
                    # module called most so (a seq2seq's encoder, not the
                    # decoder fed its output).
                    self.step_module = max(self._fresh_calls, key=self._fresh_calls.get)
                    self._fresh_steps_only = True
                self._lock("forward")
                self.step_start = time.perf_counter()
                if id(module) == self.step_module:
                    self._note_step_input(args)
                return
        if self.step_source == "forward" and id(module) == self.step_module and not (
                self._fresh_steps_only and _has_autograd_history(args, self.torch.Tensor)):
            self._step()
            self._note_step_input(args)

    def _note_model(self, module, args):
        """Count an outermost module call by the module's class and the
        program's line that made it: the change texts name the model so.
        The first call's first tensor argument's shape is kept: a model
        called on one sample at a time (a policy once per environment
        step) has no batch dimension, or one of 1."""
        self._model_calls += 1
        site = _program_site(sys._getframe(2))
        if site is None:
            return
        cls = type(module)
        key = (cls.__qualname__, site["file"], site["line"])
        rec = self.models.get(key)
        if rec is None:
            if len(self.models) >= _MAX_MODELS:
                return
            rec = self.models[key] = dict(site, **{"class": cls.__qualname__, "module": cls.__module__, "calls": 0})
            if not self.torch.is_grad_enabled():
                rec["no_grad"] = True  # a frozen model (a teacher), or an evaluation's
            with self.own_work():
                rec.update(_conv_counts(module, self.torch))
                shapes = _tensor_shapes(args, self.torch.Tensor, limit=1)
                if shapes:
                    rec["input"] = shapes[0]
                    if (len(shapes[0]) == 1 or shapes[0][:1] == [1]) and len(self._item_modules) < 4:
                        self._item_modules.append(weakref.ref(module))
        rec["calls"] += 1
        pad = rec.get("padding")
        if (pad is None or pad["calls"] < _PADDING_CALLS) and not self.in_window:
            with self.own_work():
                got = _padding(_call_kwargs(sys._getframe(1)), self.torch)
            if got is not None:
                pad = rec.setdefault("padding", {"calls": 0, "tokens": 0, "real": 0, "longest": 0})
                pad["calls"] += 1
                for k, v in zip(("tokens", "real", "longest"), got):
                    pad[k] += v

    def _forwards_to_lock(self):
        """How many forwards lock them as the step source by now (none:
        float("inf")); see the constants' comments."""
        n, waited = self.step_counts["forward"], time.perf_counter() - self._first_forward_t
        if n < _LOCK_THRESHOLD:
            return _LOCK_THRESHOLD
        if self._optimizer_made and waited < _UNSTEPPED_OPTIMIZER_WAIT_S:
            return float("inf")  # a training program: its first optimizer.step() is coming
        if self._optimizer_step_begun:
            # inside optimizer.step(closure): LBFGS calls the model up to
            # max_iter times in one step (pytorch/examples'
            # time_sequence_prediction: 20 forwards of a 999-step LSTMCell
            # loop, minutes before the step returns); they are one step
            return float("inf")
        if not self._grad_forwards:
            return _LOCK_THRESHOLD
        if n < _GRAD_LOCK_THRESHOLD and waited >= _NO_BACKWARD_LOCK_S \
                and not _has_grads(self._forward_modules.values()):
            return _LOCK_THRESHOLD  # forwards with autograd on, and no backward so far
        return _GRAD_LOCK_THRESHOLD

    def _note_step_input(self, args):
        """Keep the shapes of the tensors the step's forward got, for the
        step this call begins (self.steps ended before it): its positional
        arguments', else its keyword arguments' (model(**inputs), as
        Hugging Face's generate() calls it), which the global hook does not
        get and Module._call_impl holds."""
        shapes = _tensor_shapes(args, self.torch.Tensor)
        if not shapes:
            shapes = _tensor_shapes(_call_kwargs(sys._getframe(1)).values(), self.torch.Tensor)
        if shapes:
            rec = {"step": self.steps + 1, "shapes": shapes}
            if self.step_inputs["first"] is None:
                self.step_inputs["first"] = rec
            self.step_inputs["last"] = rec

    # -- signals & fork --------------------------------------------------------
    def _after_fork_child(self):
        # forked children (DataLoader workers, pools) are never profiled:
        # the sampler thread does not exist there, and every hook checks pid
        self.finished = True
        if self.calls is not None:
            self.calls.close()  # a worker forked during a counted step keeps no global hook
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
            if self._finishing:
                # a SIGTERM during the save (a second one, or the program
                # ending): saving again in this handler would wait for
                # the lock the interrupted save holds, forever; the save
                # ends with this SIGTERM instead (_finish)
                self._sigterm_in_finish = True
                return
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
            if self.live is not None:
                safe(lambda: self.live.finish(self.steps, "ended"))
            if self.nvtx is not None:
                safe(self.nvtx.close)  # the ranges still open (the program ended mid-step)
            try:
                self._stop_profiler()
            except Exception as e:
                self.errors.append("profiler stop: %s" % e)
            self._remove_forward_hooks()
            self._stop_counting_items()
            if self.sampler is not None:
                self.sampler.stop()
            if self.stepstats is not None:
                self.stepstats.stop()
            if self.env is not None:
                if self.torch is not None and not self.env.get("torch_at_window"):
                    self.env["torch"] = safe(lambda: torch_env(self.torch, with_devices=True), self.env.get("torch"))
                safe(self._read_packages)
                self.write_env()
            self.finished = True
            self.write_pyprofile()
            self.write_evidence(final=True)
            if self.overhead_ab is not None:
                safe(lambda: self.overhead_ab.write(self.path("overhead-ab-%s.json" % self.tag)))
            self.progress("done")
            # no crash so far: an empty dump file is not kept (a crash
            # later in the interpreter's shutdown is not recorded then)
            path = getattr(self, "_crash_path", None)
            if path and safe(lambda: os.path.getsize(path), 1) == 0:
                safe(lambda: os.remove(path))
        if self._sigterm_in_finish:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

def default_sigterm_in_children(handler):
    """Forked children get SIGTERM's default action back in place of
    handler (the agent's), as without the agent.

    A SIGTERM that reaches a child before that (multiprocessing.Pool's
    terminate() can send it to a worker that has just been forked) would
    run handler's Python half after the reset, and CPython drops a
    signal whose handler is by then SIG_DFL: the worker lives on, blocked
    on the pool's queue lock, and the pool's join waits for it forever.
    So SIGTERM is held blocked across the fork, and the child unblocks it
    once the default action is back: a pending one then ends it."""
    held = threading.local()

    def ours():
        try:
            return signal.getsignal(signal.SIGTERM) == handler
        except Exception:
            return False

    def before():
        held.mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}) if ours() else None

    def restore():
        mask, held.mask = getattr(held, "mask", None), None
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def in_child():
        try:
            if ours():
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
        except Exception:
            pass
        restore()

    if hasattr(signal, "pthread_sigmask"):
        os.register_at_fork(before=before, after_in_parent=restore, after_in_child=in_child)
    else:
        os.register_at_fork(after_in_child=in_child)


def _load_sibling(name):
    """Load the agent file name.py beside this one (not put in sys.modules:
    the program's modules stay as without bottleneck)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _load_changes(wanted, errors):
    """The run-time changes (_bottleneck_changes.py beside this file),
    started: the ones made at start are made now."""
    try:
        ch = _load_sibling("_bottleneck_changes").Changes(wanted, lambda fn: is_agent_file(fn) or is_library_file(fn))
        ch.start()
        return ch
    except Exception as e:
        errors.append("run-time changes: %s: %s" % (type(e).__name__, e))
        return None


def _load_options(pid, errors, watch):
    """The recorder of the program's command-line options
    (_bottleneck_options.py beside this file), started; watch(name, fn)
    runs fn once the module name is imported."""
    try:
        opts = _load_sibling("_bottleneck_options").Options(pid, errors, watch)
        opts.start()
        return opts
    except Exception as e:
        errors.append("program options: %s: %s" % (type(e).__name__, e))
        return None


def _load_nvtx(mode, errors):
    """The NVTX ranges (_bottleneck_nvtx.py beside this file) for --nvtx
    mode ("steps" or "ops"), or None when they cannot start."""
    try:
        return _load_sibling("_bottleneck_nvtx").Ranges(mode)
    except Exception as e:
        errors.append("nvtx: %s: %s" % (type(e).__name__, e))
        return None


def _load_stepstats(errors):
    """The per-step memory and GC recorder (_bottleneck_stepstats.py beside
    this file), or None when it cannot start."""
    try:
        mod = _load_sibling("_bottleneck_stepstats")
        return mod.StepStats(lambda fn: is_agent_file(fn) or is_library_file(fn))
    except Exception as e:
        errors.append("step statistics: %s: %s" % (type(e).__name__, e))
        return None


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
        if not is_agent_file(tb.tb_frame.f_code.co_filename):
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
            if not isinstance(e, SystemExit):
                # its traceback without the agent's frames, as the parent's
                _install_trimming_excepthook()
            raise
        if isinstance(e, StopAfterProfile):
            _agent.finish("stopped-after-profile", 0)
            raise SystemExit(0)
        if isinstance(e, SystemExit):
            _agent.finish("exit", _exit_code_of(e))
        elif isinstance(e, KeyboardInterrupt):
            # One Ctrl-C can arrive twice: sent to the process group (a
            # scheduler, a script's kill -INT -PGID) and forwarded by
            # bottleneck, which cannot tell. A second one must not break the
            # save; bottleneck kills on a second Ctrl-C of its own.
            prev = safe(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
            _agent.finish("interrupted", 130, signal_name="SIGINT", exc="KeyboardInterrupt")
            if prev is not None:
                safe(lambda: signal.signal(signal.SIGINT, prev))
            _install_trimming_excepthook()
        else:
            _agent.finish("exception", 1, exc="%s: %s" % (type(e).__name__, e))
            _install_trimming_excepthook()
        raise
    else:
        _agent.finish("ok", 0)


def _has_autograd_history(args, tensor):
    """Whether a forward's inputs (one level into tuples and lists) were
    computed with autograd on: such a call continues a graph that a
    backward has yet to consume (an RNN cell fed its own hidden state, a
    decoder fed an encoder's output), so it is inside a step, not one. A
    cell unrolled over more than _GRAD_LOCK_THRESHOLD time steps made a
    step of every call before its first optimizer.step(). Only instances
    of tensor (torch.Tensor) are looked at: the program's own objects may
    do anything on getattr."""
    try:
        for a in args:
            for t in (a if isinstance(a, (tuple, list)) else (a,)):
                if isinstance(t, tensor) and t.grad_fn is not None:
                    return True
    except Exception:
        pass
    return False


# outermost module calls looked at for the models the program calls (the
# first ones: the model is called from the start; later calls cost the
# walk up to the program's frame for nothing new), and the (class, line)
# pairs kept
_MODEL_CALLS = 64
_MAX_STARTS = 64  # a loader's iterators whose start is kept (starts)
_MAX_MODELS = 8
_MAX_MODULES = 20000  # modules of a model walked for its convolutions (_conv_counts)
_PADDING_CALLS = 16  # calls of a model whose attention_mask is read (_padding): each a sync on a GPU


# A later stage of training (_later_stage): another optimizer's steps in
# a row, over at least this many median steps, before it makes the steps.
_STAGE_STEPS = 16
_STAGE_IDLE = 8


def _conv_counts(module, torch):
    """The model's layers (Linear and convolution modules: one call of
    the model runs each once, unless it loops), its convolutions, how
    many of them are depthwise (one filter per input channel), and how
    many of those have a stride: on a CPU, bf16 autocast leaves depthwise
    convolutions' backward no faster (slower at a 7 x 7 kernel) and made
    it 2.5-8x slower with a stride (docs/diagnosis.md, cpu.native). Empty
    for a model without layers; at most _MAX_MODULES walked."""
    layers = convs = dw = strided_dw = 0
    try:
        conv, linear = torch.nn.modules.conv._ConvNd, torch.nn.Linear
        for i, m in enumerate(module.modules()):
            if i >= _MAX_MODULES:
                break
            if isinstance(m, (conv, linear)):
                layers += 1
            if isinstance(m, conv) and not m.transposed:
                convs += 1
                if 1 < m.groups == m.in_channels:
                    dw += 1
                    if any(st > 1 for st in m.stride):
                        strided_dw += 1
    except Exception:
        pass
    out = {"layers": layers} if layers else {}
    if convs:
        out.update({"convs": convs, "depthwise": dw, "strided_depthwise": strided_dw})
    return out


class _Identity(object):
    """Which object, without keeping it alive: id() alone is reused once
    the object is freed, so a program that makes a new optimizer every
    iteration had its new optimizers taken for the first one whenever
    one landed at the freed one's address (and its window recorded on
    without bound)."""
    __slots__ = ("_ref",)

    def __init__(self, obj):
        try:
            self._ref = weakref.ref(obj)
        except TypeError:  # no __weakref__ slot: held, one object
            self._ref = lambda: obj

    def of(self, obj):
        return self._ref() is obj


class _IdentitySet(object):
    """Objects seen, by identity, without keeping them alive (see
    _Identity); freed ones are forgotten."""

    def __init__(self):
        self._by_id = {}

    def has(self, obj):
        seen = self._by_id.get(id(obj))
        return seen is not None and seen.of(obj)

    def add(self, obj):
        if self.has(obj):  # every step adds the steps' optimizer: no new weakref then
            return
        if len(self._by_id) >= 64:  # an optimizer per iteration: drop the freed
            self._by_id = {k: v for k, v in self._by_id.items() if v._ref() is not None}
        self._by_id[id(obj)] = _Identity(obj)


# the modules of torchvision's datasets (MNIST's and CIFAR's hold every
# sample in one array, .data, and make each a PIL image in __getitem__)
_TORCHVISION_DATASETS = "torchvision.datasets."


def _dataset_in_memory(ds):
    """For a torchvision dataset that holds its samples as one array
    (MNIST's and CIFAR's .data): the array's shape, the names of its
    transform's parts (a Compose's, in order) and whether it transforms
    its targets too. Its __getitem__ makes a PIL image of one sample and
    transforms it: a batch of 128 is 128 of those (docs/diagnosis.md,
    input.loader). Empty for any other dataset."""
    try:
        if not type(ds).__module__.startswith(_TORCHVISION_DATASETS):
            return {}
        shape = tuple(getattr(getattr(ds, "data", None), "shape", ()))
        if len(shape) < 3 or shape[0] != len(ds):
            return {}
        t = getattr(ds, "transform", None)
        parts = getattr(t, "transforms", None)
        if not isinstance(parts, (list, tuple)):
            parts = [] if t is None else [t]
        return {"memory_shape": [int(n) for n in shape], "transforms": [type(x).__name__ for x in parts[:16]],
                "target_transform": getattr(ds, "target_transform", None) is not None}
    except Exception:
        return {}


def _tensor_bytes(torch, obj, depth=0):
    """The bytes of the tensors in a batch: a tensor, or lists, tuples
    and dicts of them (3 levels deep)."""
    if isinstance(obj, torch.Tensor):
        return obj.element_size() * obj.nelement()
    if depth < 3 and isinstance(obj, (list, tuple)):
        return sum(_tensor_bytes(torch, v, depth + 1) for v in obj)
    if depth < 3 and isinstance(obj, dict):
        return sum(_tensor_bytes(torch, v, depth + 1) for v in obj.values())
    return 0


def _program_site(f):
    """The program's own frame at f or above it (past the agent's and the
    libraries' frames), as file, line and function; None when there is
    none."""
    while f is not None and (is_agent_file(f.f_code.co_filename) or is_library_file(f.f_code.co_filename)):
        f = f.f_back
    if f is None:
        return None
    return {"file": f.f_code.co_filename, "line": f.f_lineno or 0,
            "func": getattr(f.f_code, "co_qualname", f.f_code.co_name)}


def _padding(kwargs, torch):
    """What a model call's attention_mask keyword argument (Hugging Face's:
    a [batch, length] tensor of 1 for a token, 0 for padding) says of its
    batch: the positions it computes (batch x length), the real tokens,
    and the positions of a batch padded to its own longest sequence
    (batch x longest); None without such a mask. Read outside CUDA graph
    capture only: the sums are a sync on a GPU."""
    m = kwargs.get("attention_mask") if kwargs else None
    try:
        if not isinstance(m, torch.Tensor) or m.dim() != 2 or m.is_floating_point() or m.is_complex() \
                or (m.is_cuda and torch.cuda.is_current_stream_capturing()):
            return None
        with torch.no_grad():
            rows = (m != 0).sum(dim=1)
            real, longest = torch.stack((rows.sum(), rows.max())).tolist()  # one sync
        b, n = m.shape
        return b * n, real, b * longest
    except Exception:  # a fake tensor (torch.compile tracing), an empty batch
        return None


def _call_kwargs(frame, depth=6):
    """The keyword arguments of the nn.Module call that frame is inside
    (its Module._call_impl frame's kwargs; {} when there is none)."""
    try:
        for _ in range(depth):
            if frame is None:
                break
            if frame.f_code.co_name == "_call_impl":
                kwargs = frame.f_locals.get("kwargs")
                return kwargs if isinstance(kwargs, dict) else {}
            frame = frame.f_back
    except Exception:
        pass
    return {}


def _remove_handles(handles):
    for h in handles:
        try:
            h.remove()
        except Exception:
            pass


def _tensor_shapes(args, tensor, limit=4):
    """The shapes of the first `limit` tensors among a call's arguments
    (one level into tuples and lists), as lists of ints."""
    out = []
    try:
        for a in args:
            for t in (a if isinstance(a, (tuple, list)) else (a,)):
                if isinstance(t, tensor):
                    out.append([int(d) for d in t.shape])
                    if len(out) == limit:
                        return out
    except Exception:
        pass
    return out


def _has_grads(refs):
    """Whether a backward has left a gradient in a parameter of one of the
    modules (weak references)."""
    try:
        for r in refs:
            m = r() if r is not None else None
            if m is not None and any(p.grad is not None for p in m.parameters()):
                return True
        return False
    except Exception:
        return True  # unknown: keep waiting for an optimizer step


def _optimizer_params(opt):
    """What an optimizer updates: its class, implementation flags, the
    number and elements of its parameters, how many have a sparse gradient
    (fused=True raises on them) and the largest ones (a dense embedding
    table shows as one parameter holding most elements), with, for a 2-D
    dense gradient, the rows the step's batches touched."""
    out = {"class": type(opt).__name__, "params": 0, "numel": 0, "sparse_grads": 0, "largest": []}
    try:
        ps = [p for g in opt.param_groups for p in g["params"]]
        defaults = getattr(opt, "defaults", {})
        for k in ("foreach", "fused"):
            if k in defaults:
                out[k] = defaults[k]
        out["params"] = len(ps)
        out["numel"] = sum(p.numel() for p in ps)
        out["sparse_grads"] = sum(1 for p in ps if p.grad is not None and p.grad.is_sparse)
        for p in sorted(ps, key=lambda p: -p.numel())[:3]:
            g = p.grad
            rec = {"shape": list(p.shape), "numel": p.numel(), "dtype": str(p.dtype).replace("torch.", ""),
                   "sparse_grad": bool(g is not None and g.is_sparse)}
            if g is not None and not g.is_sparse and g.dim() == 2:
                rec["grad_rows"] = _rows_with_grad(g)
            out["largest"].append(rec)
    except Exception as e:  # an optimizer-like object without param_groups
        out["error"] = "%s: %s" % (type(e).__name__, e)
    return out

def _rows_with_grad(g):
    """The rows of a 2-D dense gradient that are not all zero: for an
    embedding table, the rows the step's batches looked up (sparse
    gradients pay only when that is a small part of the table). A
    reduction per row, never a copy of the table; None when it fails."""
    try:
        import torch
        with torch.no_grad():
            return int((torch.linalg.vector_norm(g, float("inf"), dim=1) > 0).sum())
    except Exception:
        return None


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
    safe(lambda: atexit._run_exitfuncs())
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        safe(lambda: f.flush())
    if isinstance(exc, KeyboardInterrupt):
        safe(lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def _is_zip(path):
    import zipfile
    return os.path.isfile(path) and not path.endswith(".py") and safe(lambda: zipfile.is_zipfile(path), False)


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
    ex = a.cfg.get("job_exchange")
    if ex and a.finished:
        # a multi-node run without --job-dir: this rank's summary travels
        # over torchrun's store, after the program's own work
        with a.own_work():
            safe(lambda: _load_sibling("_bottleneck_jobexchange").exchange(a, ex, atomic_write_json))
