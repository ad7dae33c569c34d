"""Framework phases for bottleneck's agent: where the wall time of a
Lightning or Hugging Face Trainer run goes, by the framework's own
boundaries (docs/run.md, "Framework phases").

* Lightning: every profiler action (training_step, backward,
  optimizer_step, train_dataloader_next, each hook and callback, ...) is
  timed by wrapping start/stop of the Profiler class the Trainer uses,
  whichever it is (the default PassThroughProfiler, SimpleProfiler,
  AdvancedProfiler, the user's own); the wrappers call the originals with
  the same arguments, so the user's profiler records and prints what it
  would.
* Hugging Face Trainer: CallbackHandler.call_event (each event's
  callbacks) and a few Trainer methods (train, get_batch_samples,
  training_step, evaluate, predict, log, _save_checkpoint) are timed, and
  the events bound two phases: "step" (on_step_begin to on_step_end) and
  "optimizer_step" (on_pre_optimizer_step to on_optimizer_step).

Actions nest (Lightning's optimizer_step runs the closure that runs
training_step and backward): each thread keeps a stack, and an action's
self time is its time minus that of the actions nested in it, so the self
times plus the time outside any action add up to the wall time from the
first action to the last. The agent's own work inside an action (a trace
export in an optimizer step hook) is a phase of its own.

Standard library only; Python 3.9+; never changes what the program does:
every failure here is swallowed and reported in "errors".
"""

import functools
import os
import sys
import threading
import time

AGENT_PHASE = "(bottleneck agent)"
OTHER_PHASE = "(other actions)"
_MAX_PHASES = 300  # distinct names kept; later ones add to OTHER_PHASE
_MAX_ERRORS = 5

# Modules whose import completes the classes to wrap.
LIGHTNING_MODULES = ("lightning.pytorch.profilers.profiler", "pytorch_lightning.profilers.profiler")
TRANSFORMERS_MODULE = "transformers.trainer"

# Hugging Face Trainer methods timed as phases: method -> phase name.
_HF_METHODS = (("train", "train"), ("get_batch_samples", "get_batch_samples"), ("training_step", "training_step"),
               ("evaluate", "evaluate"), ("predict", "predict"), ("log", "log"),
               ("_save_checkpoint", "save_checkpoint"))
# Events that open a phase after their callbacks ran, and the events that
# close it before theirs run.
_HF_OPEN = {"on_step_begin": "step", "on_pre_optimizer_step": "optimizer_step"}
_HF_CLOSE = {"on_step_end": "step", "on_optimizer_step": "optimizer_step"}


class Phases(object):
    """Whole-run totals of nested, named actions: calls, total and self
    time per name, and the span from the first action's start to the last
    one's end."""

    def __init__(self, framework, clock=time.perf_counter, ranges=None):
        self.framework = framework
        self.clock = clock
        self.ranges = ranges  # _bottleneck_nvtx.Ranges (--nvtx): each action an NVTX range too
        self.rows = {}  # name -> [calls, total s, self s]
        self.first = None
        self.last = None
        self._local = threading.local()
        self._lock = threading.Lock()

    def _stack(self):
        s = getattr(self._local, "stack", None)
        if s is None:
            s = self._local.stack = []
        return s

    def depth(self):
        return len(self._stack())

    def wall(self):
        if self.first is None:
            return 0.0
        return max(0.0, (self.last if self.last is not None else self.first) - self.first)

    def start(self, name, t=None):
        t = self.clock() if t is None else t
        if self.first is None:
            self.first = t
        self._stack().append([name, t, 0.0])  # name, start, time of the actions nested in it
        if self.ranges is not None:
            self.ranges.begin(name)

    def stop(self, name, t=None):
        """Ends the innermost open action called name, and the actions
        opened inside it that are still open (a framework that skipped
        their end, an exception). An action that is not open is ignored."""
        stack = self._stack()
        i = len(stack) - 1
        while i >= 0 and stack[i][0] != name:
            i -= 1
        if i < 0:
            return False
        if self.ranges is not None:
            self.ranges.end(name)
        t = self.clock() if t is None else t
        while len(stack) > i:
            n, t0, nested = stack.pop()
            d = max(0.0, t - t0)
            if stack:
                stack[-1][2] += d
            self._add(n, d, max(0.0, d - nested))
        if self.last is None or t > self.last:
            self.last = t
        return True

    def _add(self, name, total, own):
        with self._lock:
            r = self.rows.get(name)
            if r is None:
                if len(self.rows) >= _MAX_PHASES:
                    name = OTHER_PHASE
                r = self.rows.setdefault(name, [0, 0.0, 0.0])
            r[0] += 1
            r[1] += total
            r[2] += own

    def evidence(self):
        with self._lock:
            rows = [(n, r[0], r[1], r[2]) for n, r in self.rows.items()]
        if not rows or self.first is None or self.last is None:
            return None
        wall = max(0.0, self.last - self.first)
        own = sum(r[3] for r in rows)
        rows.sort(key=lambda r: (-r[3], r[0]))
        return {
            "framework": self.framework,
            "wall_s": wall,
            # actions of several threads can overlap: then nothing is outside
            "outside_s": max(0.0, wall - own),
            "phases": [{"name": n, "calls": c, "total_s": tot, "self_s": s} for n, c, tot, s in rows],
        }


class Frameworks(object):
    """Installs the hooks for the frameworks the program imports and
    keeps their phases. watch(module_name, callback) must call
    callback(module) once that module finished importing."""

    def __init__(self, watch, ranges=None):
        self.pid = os.getpid()
        self.ranges = ranges  # NVTX ranges for the actions (--nvtx), or None
        self._forked = False  # in a forked child (a DataLoader worker) nothing is recorded
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork)
        self.recorders = {}  # framework -> Phases
        self.errors = []
        self.missing = []
        self._undo = []  # (owner, attribute, original)
        self._guard = threading.local()
        self._installed = set()
        for name in LIGHTNING_MODULES:
            self._when_imported(name, self._on_lightning, watch)
        self._when_imported(TRANSFORMERS_MODULE, self._on_transformers, watch)

    def _when_imported(self, name, fn, watch):
        def call(module):
            try:
                fn(module)
            except Exception as e:
                self._error("%s hooks" % name, e)

        m = sys.modules.get(name)
        if m is not None:
            call(m)
        else:
            watch(name, call)

    def _error(self, what, e):
        if len(self.errors) < _MAX_ERRORS:
            self.errors.append("framework phases: %s: %s: %s" % (what, type(e).__name__, e))

    def _recorder(self, framework):
        r = self.recorders.get(framework)
        if r is None:
            r = self.recorders[framework] = Phases(framework, ranges=self.ranges)
        return r

    @property
    def phases(self):
        """The Phases of the framework that ran longest (a Lightning
        program may import transformers, and the reverse)."""
        best = None
        for p in list(self.recorders.values()):
            if p.first is not None and (best is None or p.wall() > best.wall()):
                best = p
        return best

    def evidence(self):
        try:
            p = self.phases
            return p.evidence() if p is not None else None
        except Exception as e:
            self._error("evidence", e)
            return None

    # -- the agent's own work -------------------------------------------------
    def enter_agent(self):
        """The agent's work begins in this thread (Agent.own_work): inside
        an action it is a phase of its own, not the action's."""
        g = self._guard
        d = getattr(g, "agent", 0)
        g.agent = d + 1
        if d == 0:
            g.agent_in = None
            for p in list(self.recorders.values()):
                if p.depth() > 0:
                    g.agent_in = p
                    p.start(AGENT_PHASE)
                    break

    def leave_agent(self):
        g = self._guard
        g.agent = max(0, getattr(g, "agent", 1) - 1)
        p = getattr(g, "agent_in", None)
        if g.agent == 0 and p is not None:
            g.agent_in = None
            p.stop(AGENT_PHASE)

    # -- wrapping ---------------------------------------------------------------
    def _set(self, owner, attr, fn):
        self._undo.append((owner, attr, owner.__dict__[attr]))
        fn._bottleneck_phase = True
        setattr(owner, attr, fn)

    def uninstall(self):
        """Restores every wrapped attribute (the in-process API's end)."""
        while self._undo:
            owner, attr, orig = self._undo.pop()
            try:
                setattr(owner, attr, orig)
            except Exception as e:
                self._error("restoring %s" % attr, e)

    def _mine(self):
        return not self._forked

    def _after_fork(self):
        self._forked = True

    def _begin(self, rec, name):
        """Start name unless a wrapper of this thread is already running
        (a subclass's start calling super().start: one action). Returns
        whether it started."""
        g = self._guard
        if getattr(g, "inside", 0) or not self._mine():
            return False
        g.inside = 1
        try:
            rec.start(name)
        except Exception as e:
            self._error("start", e)
        return True

    def _end(self, rec, name):
        try:
            rec.stop(name)
        except Exception as e:
            self._error("stop", e)

    def _timed(self, rec, name, orig):
        """orig timed as the action name."""
        hooks = self

        @functools.wraps(orig)
        def wrapper(*args, **kwargs):
            if not hooks._mine():
                return orig(*args, **kwargs)
            try:
                rec.start(name)
            except Exception as e:
                hooks._error("start", e)
            try:
                return orig(*args, **kwargs)
            finally:
                hooks._end(rec, name)

        return wrapper

    # -- Lightning --------------------------------------------------------------
    def _on_lightning(self, module):
        base = getattr(module, "Profiler", None)
        if base is None or base in self._installed:
            return
        rec = self._recorder("lightning")
        self._installed.add(base)
        hooks = self
        orig_init = base.__dict__["__init__"]

        # the Trainer's profiler is made after this import: wrap the class
        # of each profiler when it is made, and the classes already made
        @functools.wraps(orig_init)
        def __init__(prof, *args, **kwargs):
            orig_init(prof, *args, **kwargs)
            hooks._wrap_profiler_class(type(prof), base, rec)

        self._set(base, "__init__", __init__)
        todo = [base]
        while todo:
            for c in todo.pop().__subclasses__():
                todo.append(c)
                self._wrap_profiler_class(c, base, rec)

    def _wrap_profiler_class(self, cls, base, rec):
        try:
            for meth in ("start", "stop"):
                owner = next((c for c in cls.__mro__ if meth in c.__dict__), None)
                if owner is None or owner is base:
                    continue
                fn = owner.__dict__[meth]
                if getattr(fn, "_bottleneck_phase", False) or getattr(fn, "__isabstractmethod__", False) \
                        or not callable(fn):
                    continue
                self._set(owner, meth, self._profiler_method(rec, meth, fn))
        except Exception as e:
            self._error("wrapping %s" % getattr(cls, "__name__", "?"), e)

    def _profiler_method(self, rec, meth, orig):
        hooks = self
        if meth == "start":
            @functools.wraps(orig)
            def start(prof, action_name, *args, **kwargs):
                if not hooks._begin(rec, str(action_name)):
                    return orig(prof, action_name, *args, **kwargs)
                try:
                    return orig(prof, action_name, *args, **kwargs)
                finally:
                    hooks._guard.inside = 0
            return start

        @functools.wraps(orig)
        def stop(prof, action_name, *args, **kwargs):
            g = hooks._guard
            if getattr(g, "inside", 0) or not hooks._mine():
                return orig(prof, action_name, *args, **kwargs)
            g.inside = 1
            try:
                return orig(prof, action_name, *args, **kwargs)
            finally:
                g.inside = 0
                hooks._end(rec, str(action_name))
        return stop

    # -- Hugging Face Trainer ---------------------------------------------------
    def _on_transformers(self, module):
        trainer = getattr(module, "Trainer", None)
        cb = sys.modules.get("transformers.trainer_callback")
        handler = getattr(cb, "CallbackHandler", None)
        if trainer is None or trainer in self._installed:
            return
        rec = self._recorder("transformers")
        self._installed.add(trainer)
        for meth, name in _HF_METHODS:
            fn = trainer.__dict__.get(meth)
            if fn is None or not callable(fn):
                self.missing.append({"what": "Trainer phase %s" % name,
                                     "why": "transformers.Trainer has no %s method" % meth})
                continue
            self._set(trainer, meth, self._timed(rec, name, fn))
        fn = handler.__dict__.get("call_event") if handler is not None else None
        if fn is None:
            self.missing.append({"what": "Trainer callback phases",
                                 "why": "transformers.trainer_callback.CallbackHandler has no call_event"})
            return
        self._set(handler, "call_event", self._call_event(rec, fn))

    def _call_event(self, rec, orig):
        hooks = self

        @functools.wraps(orig)
        def call_event(handler, event, *args, **kwargs):
            if not hooks._mine():
                return orig(handler, event, *args, **kwargs)
            ev = str(event)
            try:
                closes = _HF_CLOSE.get(ev)
                if closes is not None:
                    rec.stop(closes)
                rec.start("callbacks." + ev)
            except Exception as e:
                hooks._error("event %s" % ev, e)
            try:
                return orig(handler, event, *args, **kwargs)
            finally:
                try:
                    rec.stop("callbacks." + ev)
                    opens = _HF_OPEN.get(ev)
                    if opens is not None:
                        rec.start(opens)
                except Exception as e:
                    hooks._error("event %s" % ev, e)

        return call_event
