"""Unit tests of _bottleneck_calls (standard library only; the torch test
is skipped without torch)."""
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_calls as C  # noqa: E402


class _Handle(object):
    def __init__(self, hooks, fn):
        self.hooks, self.fn = hooks, fn
        hooks.append(fn)

    def remove(self):
        self.hooks.remove(self.fn)


class FakeModules(object):
    """Global pre- and post-hook lists, and modules whose calls run them
    around their children's, as torch's do."""

    def __init__(self):
        self.pre, self.post = [], []

    def register_pre(self, fn):
        return _Handle(self.pre, fn)

    def register_post(self, fn):
        return _Handle(self.post, fn)

    def call(self, module, children=0):
        for h in list(self.pre):
            h(module, ())
        for _ in range(children):
            self.call(Child())
        for h in list(self.post):
            h(module, (), None)


class Model(object):
    pass


class Child(object):
    pass


class CallCounterTest(unittest.TestCase):
    def run_steps(self, counter, mods, steps, calls_per_step, children=2):
        counts = {}
        for step in range(1, steps + 1):
            for _ in range(calls_per_step(step)):
                mods.call(Model(), children)
            got = counter.stop()
            if got is not None:
                counts[step] = got
            counter.start_if_due(step)
        return counts

    def test_counts_outermost_calls_on_due_steps_only(self):
        mods = FakeModules()
        counter = C.CallCounter(mods.register_pre, mods.register_post)
        counts = self.run_steps(counter, mods, 40, lambda s: 3 + s)
        self.assertIn(C.FIRST_STEP, counts)
        self.assertGreaterEqual(len(counts), 2)
        for step, n in counts.items():
            self.assertEqual(n, 3 + step, step)  # the children are not outermost
        steps = sorted(counts)
        self.assertTrue(all(b - a >= C.MIN_PERIOD for a, b in zip(steps, steps[1:])), steps)
        self.assertEqual(mods.pre, [])  # no hook left after a counted step
        ev = counter.evidence()
        self.assertEqual(ev["counted_steps"], len(counts))
        self.assertEqual((ev["class"], ev["module"]), ("Model", __name__))

    def test_period_bounds_the_hooks_cost(self):
        # many module calls in a short step: counted rarely
        mods = FakeModules()
        counter = C.CallCounter(mods.register_pre, mods.register_post)
        counter.start_if_due(C.FIRST_STEP - 1)
        for _ in range(200):
            mods.call(Model(), 9)  # 2000 module calls: 4 ms through the hooks
        time.sleep(0.01)
        counter.stop()
        want = 2000 * C.HOOK_COST_S / (C.COST_SHARE * 0.01)
        self.assertGreater(counter.period, C.MIN_PERIOD)
        self.assertLessEqual(counter.period, want * 1.01)

    def test_close_in_a_forked_child_leaves_the_parent_counting(self):
        # the agent closes the counter in a forked child (a DataLoader
        # worker forked during a counted step keeps no global hook)
        mods = FakeModules()
        counter = C.CallCounter(mods.register_pre, mods.register_post)
        counter.start_if_due(C.FIRST_STEP - 1)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            counter.close()
            os.write(w, b"%d" % len(mods.pre))
            os._exit(0)
        os.waitpid(pid, 0)
        self.assertEqual(os.read(r, 8), b"0")
        mods.call(Model())
        self.assertEqual(counter.stop(), 1)

    def test_close_stops_for_good(self):
        mods = FakeModules()
        counter = C.CallCounter(mods.register_pre, mods.register_post)
        counter.start_if_due(C.FIRST_STEP - 1)
        counter.close()
        self.assertEqual(mods.pre, [])
        for step in range(1, 100):
            counter.start_if_due(step)
        self.assertEqual(mods.pre, [])
        self.assertIsNone(C.CallCounter(mods.register_pre, mods.register_post).evidence())

    def test_close_drops_the_step_being_counted(self):
        # the program ends (or compiles) during a counted step: that step
        # has no record, so it is not among the counted steps (an RL
        # loop's last episode made counted_steps one more than the steps
        # with calls)
        mods = FakeModules()
        counter = C.CallCounter(mods.register_pre, mods.register_post)
        counts = self.run_steps(counter, mods, C.FIRST_STEP, lambda s: 2)
        self.assertEqual(counts, {C.FIRST_STEP: 2})
        counter.start_if_due(C.FIRST_STEP + C.MIN_PERIOD)
        mods.call(Model())
        counter.close()
        self.assertEqual(mods.pre, [])
        self.assertEqual(counter.evidence()["counted_steps"], 1)


try:
    import torch
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "torch not installed")
class TorchHooksTest(unittest.TestCase):
    def test_counts_a_wrapper_made_anew_each_call(self):
        # torchdiffeq's odeint wraps the model in a new module each call
        from torch.nn.modules.module import register_module_forward_pre_hook, register_module_forward_hook

        class Wrap(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, x):
                return self.inner(x)

        net = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Tanh())
        counter = C.CallCounter(register_module_forward_pre_hook, register_module_forward_hook)
        counter.start_if_due(C.FIRST_STEP - 1)
        x = torch.randn(3, 2)
        for _ in range(7):
            Wrap(net)(x)
        self.assertEqual(counter.stop(), 7)
        self.assertTrue(counter.evidence()["class"].endswith("Wrap"))


if __name__ == "__main__":
    unittest.main()
