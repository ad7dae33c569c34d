"""NVTX ranges for bottleneck's agent (`bottleneck run --nvtx`), so that
`nsys profile bottleneck run --nvtx train.py` gives a labelled timeline
(docs/run.md, "NVTX ranges for Nsight Systems").

Loaded only when --nvtx is on: without it nothing here runs, nothing of
torch.cuda.nvtx is called and no hook of this module is installed.

* One range per step, "step N" (N as in the evidence's step_times), from
  the step's start to its end as the agent's step detection sees them.
* Inside it, the phases the agent sees: "DataLoader wait" (a DataLoader
  iterator's __next__), "forward" (the outermost nn.Module call),
  "backward" (torch.autograd.backward, which Tensor.backward calls),
  "optimizer step" (an optimizer's step, by torch's global step hooks),
  and the Lightning / Hugging Face Trainer actions the framework phases
  time (_bottleneck_frameworks.py), by their names.
* --nvtx=ops also enters torch.autograd.profiler.emit_nvtx() at the first
  step: every op a range (costly; it replaces the agent's own
  torch.profiler window, as only one autograd profiler can be active).

Ranges are pushed and popped (torch.cuda.nvtx.range_push / range_pop) in
the thread that runs the steps only (NVTX push/pop ranges are a stack per
thread), and only inside a step: a step's end pops whatever it still holds
(a forward that raised never ran its post hook; Lightning's optimizer_step
action, inside which optimizer.step() ends the step), and the agent's
finish pops what is open when the program ends mid-step (an exception,
Ctrl-C, sys.exit). A phase's end pops the ranges opened inside it that
are still open, as the framework phases do.

Standard library only; Python 3.9+; a failure here never stops the
program: an NVTX that does not work (a CPU-only torch build) turns the
ranges off and is listed under "missing" with the reason.
"""

import functools
import os
import threading

STEP = "step %d"
DATALOADER = "DataLoader wait"
FORWARD = "forward"
BACKWARD = "backward"
OPTIMIZER = "optimizer step"
WHAT = "NVTX ranges (--nvtx)"
OPS_WHAT = "per-op NVTX ranges (--nvtx=ops)"
# nvtxRangePushA's result when no NVTX tool (Nsight Systems) was attached
# at the first NVTX call (NVTX_NO_PUSH_POP_TRACKING): the ranges go nowhere
NO_TOOL = -2


class Ranges(object):
    """The NVTX ranges of one process. nvtx is the torch.cuda.nvtx module
    (a stand-in in the tests); on_torch sets it when None."""

    def __init__(self, mode, nvtx=None):
        self.mode = mode  # "steps" | "ops"
        self.nvtx = nvtx
        self.torch = None
        self.thread = None  # the steps' thread: the first to begin a step
        self.stack = []  # the names pushed and not popped, outermost first
        self.pushed = 0
        self.popped = 0
        self.steps = 0  # step ranges pushed
        self.depth = None  # what the first range_push returned (NO_TOOL: nothing collects)
        self.state = "waiting"  # waiting (no step yet) | on | unavailable | closed | forked
        self.why = None  # why unavailable
        self.closed_at_exit = 0  # ranges the finish popped
        self.left_open = 0  # ranges open in the steps' thread when another thread finished
        self.ops = None  # --nvtx=ops: entered | failed: ... | skipped: ...
        self._emit = None
        self._undo = []
        self.errors = []
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self):
        # a forked child (a DataLoader worker) starts in the steps' thread's
        # ident: nothing of it is a range of the program's steps
        self.state = "forked"
        self.stack = []

    # -- torch ----------------------------------------------------------------
    def on_torch(self, torch):
        """Install the hooks for backward and optimizer steps (before the
        agent's own optimizer hook, so an optimizer's range ends before the
        agent ends the step)."""
        self.torch = torch
        if self.nvtx is None:
            try:
                import torch.cuda.nvtx as nvtx
                self.nvtx = nvtx
            except Exception as e:
                self._unavailable("torch.cuda.nvtx cannot be imported: %s: %s" % (type(e).__name__, e))
                return
        self._hook_optimizer(torch)
        self._wrap_backward(torch)

    def _hook_optimizer(self, torch):
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
        except ImportError:
            return  # torch < 2.0: no optimizer ranges
        ranges = self

        def pre(opt, args, kwargs):
            ranges.begin(OPTIMIZER)

        def post(opt, args, kwargs):
            ranges.end(OPTIMIZER)

        for h in (register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)):
            self._undo.append(h.remove)

    def _wrap_backward(self, torch):
        autograd = getattr(torch, "autograd", None)
        orig = getattr(autograd, "backward", None)
        if orig is None or getattr(orig, "_bottleneck_nvtx", False):
            return
        ranges = self

        @functools.wraps(orig)
        def backward(*args, **kwargs):
            ranges.begin(BACKWARD)
            try:
                return orig(*args, **kwargs)
            finally:
                ranges.end(BACKWARD)

        backward._bottleneck_nvtx = True
        autograd.backward = backward
        self._undo.append(lambda: setattr(autograd, "backward", orig))

    # -- ranges -----------------------------------------------------------------
    def _mine(self):
        return self.thread is not None and threading.get_ident() == self.thread

    def begin_step(self, n):
        """Step n begins in this thread (the first call fixes the thread)."""
        if self.state not in ("waiting", "on"):
            return
        if self.thread is None:
            self.thread = threading.get_ident()
        elif threading.get_ident() != self.thread:
            return
        self._pop_to(0)
        self.state = "on"
        if self.mode == "ops" and self.ops is None:
            self._enter_ops()
        if self._push(STEP % n):
            self.steps += 1

    def end_step(self):
        """The step open ends: its range and what it still holds."""
        if self.state == "on" and self._mine():
            self._pop_to(0)

    def begin(self, name):
        """A phase begins inside the open step (else nothing)."""
        if self.stack and self.state == "on" and self._mine():
            self._push(name)

    def end(self, name):
        """The innermost open phase called name ends, and the ranges opened
        inside it still open; a phase not open is ignored (it began before
        the step, or the step's end popped it)."""
        if not self.stack or self.state != "on" or not self._mine():
            return
        stack = self.stack
        i = len(stack) - 1
        while i > 0 and stack[i] != name:  # never the step (index 0)
            i -= 1
        if i > 0:
            self._pop_to(i)

    def _push(self, name):
        try:
            d = self.nvtx.range_push(name)
        except Exception as e:
            self._unavailable("torch.cuda.nvtx.range_push failed: %s: %s" % (type(e).__name__, e))
            return False
        if self.depth is None:
            self.depth = d
        self.stack.append(name)
        self.pushed += 1
        return True

    def _pop_to(self, n):
        """Pop until n ranges are left open."""
        while len(self.stack) > n:
            self.stack.pop()
            try:
                self.nvtx.range_pop()
            except Exception as e:
                self._error("range_pop", e)
            self.popped += 1

    def _unavailable(self, why):
        self.state = "unavailable"
        self.why = why
        self.stack = []

    def _error(self, what, e):
        if len(self.errors) < 5:
            self.errors.append("nvtx: %s: %s: %s" % (what, type(e).__name__, e))

    # -- --nvtx=ops -----------------------------------------------------------
    def _enter_ops(self):
        """emit_nvtx() from the first step on. It synchronizes CUDA on entry,
        so only once the program uses CUDA: entering it would initialize
        CUDA on the program's behalf (or fail where there is none)."""
        torch = self.torch
        cuda = getattr(torch, "cuda", None)
        try:
            used = bool(cuda.is_initialized())
        except Exception:
            used = False
        if not used:
            self.ops = "skipped: the program had not used CUDA by its first step, and emit_nvtx() synchronizes " \
                       "CUDA on entry, which would initialize it on the program's behalf"
            return
        try:
            ctx = torch.autograd.profiler.emit_nvtx()
            ctx.__enter__()
        except Exception as e:
            self.ops = "failed: torch.autograd.profiler.emit_nvtx(): %s: %s" % (type(e).__name__, e)
            return
        self._emit = ctx
        self.ops = "entered"

    # -- the end ------------------------------------------------------------------
    def close(self):
        """The program ended (the agent's finish): pop what is open, leave
        emit_nvtx, remove the hooks. Idempotent."""
        if self.state == "forked":
            return
        if self._mine():
            n = len(self.stack)
            self._pop_to(0)
            self.closed_at_exit += n
            if self._emit is not None:
                ctx, self._emit = self._emit, None
                try:
                    ctx.__exit__(None, None, None)
                except Exception as e:
                    self._error("leaving emit_nvtx", e)
        elif self.stack:
            # NVTX push/pop ranges are the pushing thread's: another thread
            # (a signal's handler runs in the main thread) cannot pop them
            self.left_open = len(self.stack)
            self.stack = []
        if self.state in ("waiting", "on"):
            self.state = "closed"
        self.uninstall()

    def uninstall(self):
        while self._undo:
            try:
                self._undo.pop()()
            except Exception as e:
                self._error("removing a hook", e)

    def missing(self, cuda_available=None):
        """What the run could not record of the ranges, and why
        (evidence "missing")."""
        out = []
        if self.state == "unavailable":
            out.append({"what": WHAT, "why": "NVTX is unavailable in this torch build (%s): %s; the program ran "
                                             "without ranges" % (_torch_version(self.torch), self.why)})
        elif self.pushed == 0:
            out.append({"what": WHAT, "why": "no step was detected, so no range was emitted (see --step-source)"})
        elif self.depth == NO_TOOL:
            why = "emitted (%d ranges, %d steps), but no NVTX tool was attached to collect them " \
                  "(torch.cuda.nvtx.range_push returned %d): run under nsys profile -t cuda,nvtx" \
                  % (self.pushed, self.steps, NO_TOOL)
            if cuda_available is False:
                why += "; this machine has no usable CUDA device (torch.cuda.is_available() is False)"
            out.append({"what": WHAT, "why": why})
        if self.left_open:
            out.append({"what": WHAT, "why": "%d ranges were left open: the program ended in another thread "
                                             "than the one that ran the steps" % self.left_open})
        if self.ops is not None and self.ops != "entered":
            out.append({"what": OPS_WHAT, "why": self.ops})
        return out

    def trace_missing(self):
        return _trace_missing()

    def evidence(self):
        return {"mode": self.mode, "state": self.state, "why": self.why, "step_ranges": self.steps,
                "pushed": self.pushed, "popped": self.popped, "first_depth": self.depth,
                "closed_at_exit": self.closed_at_exit, "left_open": self.left_open, "ops": self.ops}


def _torch_version(torch):
    return getattr(torch, "__version__", "?") if torch is not None else "torch not imported"


def _trace_missing():
    """The agent's torch.profiler window does not run under --nvtx=ops."""
    return {"what": "torch.profiler trace",
            "why": "--nvtx=ops runs torch.autograd.profiler.emit_nvtx() from the first step, and only one autograd "
                   "profiler can be active at a time; --nvtx (steps) keeps bottleneck's trace"}
