"""Counts a step's outermost nn.Module calls, on some steps only.

A run whose steps get slower as it goes on does either more of the same
work each step (an adaptive ODE solver taking more steps as the learned
dynamics get harder to integrate, a loop until convergence) or work that
grows with what the run keeps (torch.cat onto a kept tensor). The
outermost module calls a step tell the two apart: they grow with the
first and not the second. torchdiffeq's odeint wraps the program's model
in a new module at every call, so the calls are counted by global module
hooks, not hooks on the model. Those send every module call through
torch's slower path (1.6 us a module call on the project's 2-CPU machine),
so they are on for one step in `period`, the period chosen from the last
counted step so that they cost at most COST_SHARE of the steps' time.
"""
import math
import threading
import time

FIRST_STEP = 4  # the first step counted: start-up's are not the run's
MIN_PERIOD = 8
HOOK_COST_S = 2e-6  # a module call's cost through the hooks
COST_SHARE = 0.003
MAX_CLASSES = 16


class CallCounter(object):
    def __init__(self, pre_hook, post_hook):
        # torch.nn.modules.module's register_module_forward_pre_hook and
        # register_module_forward_hook
        self._register = (pre_hook, post_hook)
        self.period = MIN_PERIOD
        self.next_step = FIRST_STEP
        self.counted_steps = 0
        self._handles = []
        self._outer = self._total = 0
        self._t0 = 0.0
        # (class qualname, class module) -> outermost calls over the counted steps
        self.classes = {}
        self.closed = False

    def stop(self):
        """Ends the count of the step that just ended: its outermost module
        calls, or None when it was not counted."""
        if not self._remove_hooks():
            return None
        dur = time.perf_counter() - self._t0
        self.counted_steps += 1
        if dur > 0:
            self.period = max(MIN_PERIOD, int(math.ceil(self._total * HOOK_COST_S / (COST_SHARE * dur))))
        return self._outer

    def _remove_hooks(self):
        """Removes the hooks; whether a step was being counted."""
        handles, self._handles = self._handles, []
        for h in handles:
            h.remove()
        return bool(handles)

    def start_if_due(self, step):
        """After step ended: counts the next one when it is due."""
        if self.closed or self._handles or step + 1 < self.next_step:
            return
        self.next_step = step + 1 + self.period
        self._outer = self._total = 0
        depth, classes = threading.local(), self.classes

        def pre(module, args):
            d = getattr(depth, "d", 0)
            depth.d = d + 1
            self._total += 1
            if d == 0:
                self._outer += 1
                cls = type(module)
                key = (cls.__qualname__, cls.__module__)
                if key in classes or len(classes) < MAX_CLASSES:
                    classes[key] = classes.get(key, 0) + 1

        def post(module, args, out):
            depth.d = max(0, getattr(depth, "d", 1) - 1)

        pre_hook, post_hook = self._register
        self._handles = [pre_hook(pre), post_hook(post)]
        self._t0 = time.perf_counter()

    def close(self):
        """Stops counting for good (torch.compile: a global hook would
        break its graphs; the program's end). A step being counted is
        dropped: it never ends, so no step record carries its count."""
        self._remove_hooks()
        self.closed = True

    def evidence(self):
        """The counted steps, the period and the module class called most
        outermost (None when no step was counted)."""
        if not self.counted_steps:
            return None
        top = max(self.classes.items(), key=lambda kv: kv[1])[0] if self.classes else (None, None)
        return {"counted_steps": self.counted_steps, "period": self.period, "class": top[0], "module": top[1]}
