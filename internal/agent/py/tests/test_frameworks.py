"""Unit tests of _bottleneck_frameworks (standard library only; the
Lightning test runs only where lightning imports)."""
import abc
import contextlib
import importlib.util
import os
import sys
import threading
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_frameworks as F  # noqa: E402


class Clock(object):
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def rows(ev):
    return {p["name"]: (p["calls"], round(p["total_s"], 6), round(p["self_s"], 6)) for p in ev["phases"]}


def adds_up(test, ev):
    test.assertAlmostEqual(sum(p["self_s"] for p in ev["phases"]) + ev["outside_s"], ev["wall_s"], places=6)


class PhasesTest(unittest.TestCase):
    def test_self_time_leaves_out_nested_actions(self):
        c = Clock()
        p = F.Phases("lightning", clock=c)
        p.start("epoch")            # 100
        c.t = 101
        p.start("optimizer_step")   # closure: training_step and backward inside
        c.t = 102
        p.start("training_step")
        c.t = 104
        p.stop("training_step")
        p.start("backward")
        c.t = 107
        p.stop("backward")
        c.t = 108
        p.stop("optimizer_step")
        c.t = 110
        p.stop("epoch")
        c.t = 111
        p.start("teardown")
        c.t = 112
        p.stop("teardown")
        ev = p.evidence()
        self.assertEqual(rows(ev), {
            "epoch": (1, 10.0, 3.0), "optimizer_step": (1, 7.0, 2.0), "training_step": (1, 2.0, 2.0),
            "backward": (1, 3.0, 3.0), "teardown": (1, 1.0, 1.0)})
        self.assertEqual(ev["wall_s"], 12.0)
        self.assertEqual(ev["outside_s"], 1.0)  # 110 to 111
        self.assertEqual([r["name"] for r in ev["phases"]][:2], ["backward", "epoch"])  # by self time
        adds_up(self, ev)

    def test_unmatched_stops_and_skipped_ends(self):
        c = Clock()
        p = F.Phases("transformers", clock=c)
        self.assertFalse(p.stop("never started"))
        p.start("train")
        c.t = 101
        p.start("step")  # its end event never comes (an exception)
        c.t = 103
        self.assertTrue(p.stop("train"))  # closes step too
        self.assertEqual(p.depth(), 0)
        ev = p.evidence()
        self.assertEqual(rows(ev), {"train": (1, 3.0, 1.0), "step": (1, 2.0, 2.0)})
        adds_up(self, ev)

    def test_recursion_and_repeats(self):
        c = Clock()
        p = F.Phases("lightning", clock=c)
        for _ in range(3):
            p.start("a")
            c.t += 1
            p.start("a")
            c.t += 2
            p.stop("a")
            p.stop("a")
        ev = p.evidence()
        self.assertEqual(rows(ev), {"a": (6, 15.0, 9.0)})
        adds_up(self, ev)

    def test_threads_keep_their_own_stacks(self):
        p = F.Phases("lightning")
        p.start("main")
        t = threading.Thread(target=lambda: (p.start("other"), p.stop("other"), p.stop("main")))
        t.start()
        t.join()
        self.assertEqual(p.depth(), 1)  # the other thread could not close main's action
        p.stop("main")
        self.assertEqual(sorted(rows(p.evidence())), ["main", "other"])

    def test_nothing_recorded_is_no_evidence(self):
        self.assertIsNone(F.Phases("lightning").evidence())

    def test_names_past_the_cap_are_pooled(self):
        p = F.Phases("lightning")
        for i in range(F._MAX_PHASES + 5):
            p.start("hook%d" % i)
            p.stop("hook%d" % i)
        ev = p.evidence()
        self.assertEqual(len(ev["phases"]), F._MAX_PHASES + 1)
        self.assertEqual(rows(ev)[F.OTHER_PHASE][0], 5)


def fake_lightning():
    """Lightning's Profiler base as in lightning/pytorch/profilers/profiler.py."""

    class Profiler(abc.ABC):
        def __init__(self, dirpath=None):
            self.dirpath = dirpath

        @abc.abstractmethod
        def start(self, action_name):
            pass

        @abc.abstractmethod
        def stop(self, action_name):
            pass

        @contextlib.contextmanager
        def profile(self, action_name):
            try:
                self.start(action_name)
                yield action_name
            finally:
                self.stop(action_name)

    class Simple(Profiler):
        def __init__(self):
            super().__init__()
            self.open, self.log = {}, []

        def start(self, action_name):
            if action_name in self.open:
                raise ValueError("already started")
            self.open[action_name] = True

        def stop(self, action_name):
            if action_name not in self.open:
                raise ValueError("not started: %s" % action_name)
            del self.open[action_name]
            self.log.append(action_name)

    return types.SimpleNamespace(Profiler=Profiler, Simple=Simple)


class LightningHooksTest(unittest.TestCase):
    def setUp(self):
        self.mod = fake_lightning()
        self.fw = F.Frameworks(lambda name, fn: None)
        self.fw._on_lightning(self.mod)

    def tearDown(self):
        self.fw.uninstall()

    def test_the_users_profiler_records_as_before(self):
        m = self.mod

        class Mine(m.Simple):  # defined after the hooks: wrapped when made
            def start(self, action_name):
                super().start(action_name)

        prof = Mine()
        with prof.profile("run_training_batch"):
            with prof.profile("optimizer_step"):
                prof.start("train_dataloader_next")
                prof.stop("train_dataloader_next")
        with self.assertRaisesRegex(ValueError, "not started: x"):
            prof.stop("x")  # the profiler's own error, unchanged
        self.assertEqual(prof.log, ["train_dataloader_next", "optimizer_step", "run_training_batch"])
        ev = self.fw.evidence()
        self.assertEqual(ev["framework"], "lightning")
        # Mine.start calls Simple.start (wrapped too): one call each
        self.assertEqual({n: r[0] for n, r in rows(ev).items()},
                         {"run_training_batch": 1, "optimizer_step": 1, "train_dataloader_next": 1})
        adds_up(self, ev)
        self.assertEqual(self.fw.errors, [])

    def test_uninstall_restores_the_classes(self):
        m = self.mod
        wrapped = m.Simple.__dict__["start"]  # Simple existed at install: wrapped then
        self.assertTrue(wrapped._bottleneck_phase)
        self.assertTrue(m.Profiler.__dict__["__init__"]._bottleneck_phase)
        self.fw.uninstall()
        self.assertIs(m.Simple.__dict__["start"], wrapped.__wrapped__)
        self.assertFalse(getattr(m.Profiler.__dict__["__init__"], "_bottleneck_phase", False))

    def test_agent_work_inside_an_action_is_its_own_phase(self):
        prof = self.mod.Simple()
        c = Clock()
        self.fw.recorders["lightning"].clock = c
        prof.start("optimizer_step")
        c.t = 101
        self.fw.enter_agent()
        self.fw.enter_agent()  # nested own_work: one span
        c.t = 103
        self.fw.leave_agent()
        self.fw.leave_agent()
        c.t = 104
        prof.stop("optimizer_step")
        self.fw.enter_agent()  # outside any action: not a phase
        self.fw.leave_agent()
        self.assertEqual(rows(self.fw.evidence()), {"optimizer_step": (1, 4.0, 2.0), F.AGENT_PHASE: (1, 2.0, 2.0)})


def fake_transformers():
    class CallbackHandler(object):
        def __init__(self):
            self.seen = []

        def call_event(self, event, args, state, control, **kwargs):
            self.seen.append(event)
            return control

    class Trainer(object):
        def __init__(self):
            self.cb = CallbackHandler()

        def get_batch_samples(self, it, n, device):
            return [next(it) for _ in range(n)]

        def training_step(self, model, inputs, n=None):
            return inputs * 2

        def evaluate(self):
            self.cb.call_event("on_evaluate", None, None, "c")
            return {"eval_loss": 1.0}

        def train(self):
            it = iter(range(100))
            out = []
            for _ in range(3):
                batch = self.get_batch_samples(it, 2, None)
                self.cb.call_event("on_step_begin", None, None, "c")
                for b in batch:
                    out.append(self.training_step(None, b))
                self.cb.call_event("on_pre_optimizer_step", None, None, "c")
                self.cb.call_event("on_optimizer_step", None, None, "c")
                self.cb.call_event("on_step_end", None, None, "c")
            out.append(self.evaluate())
            return out

    trainer_mod = types.SimpleNamespace(Trainer=Trainer)
    cb_mod = types.SimpleNamespace(CallbackHandler=CallbackHandler)
    return trainer_mod, cb_mod


class TransformersHooksTest(unittest.TestCase):
    def test_events_and_methods_become_phases(self):
        trainer_mod, cb_mod = fake_transformers()
        sys.modules["transformers.trainer_callback"] = cb_mod
        fw = F.Frameworks(lambda name, fn: None)
        try:
            fw._on_lightning(fake_lightning())  # imported too, never used: not the run's phases
            fw._on_transformers(trainer_mod)
            t = trainer_mod.Trainer()
            out = t.train()
        finally:
            fw.uninstall()
            del sys.modules["transformers.trainer_callback"]
        self.assertEqual(out, [0, 2, 4, 6, 8, 10, {"eval_loss": 1.0}])  # what the methods return is unchanged
        self.assertEqual(t.cb.seen.count("on_step_end"), 3)
        ev = fw.evidence()
        self.assertEqual(ev["framework"], "transformers")
        got = {n: r[0] for n, r in rows(ev).items()}
        self.assertEqual(got, {"train": 1, "get_batch_samples": 3, "step": 3, "training_step": 6, "optimizer_step": 3,
                               "evaluate": 1, "callbacks.on_step_begin": 3, "callbacks.on_pre_optimizer_step": 3,
                               "callbacks.on_optimizer_step": 3, "callbacks.on_step_end": 3,
                               "callbacks.on_evaluate": 1})
        adds_up(self, ev)
        # the missing methods (predict, log, _save_checkpoint) are said, not failed
        self.assertEqual(len(fw.missing), 3)
        self.assertEqual(fw.errors, [])
        self.assertFalse(getattr(trainer_mod.Trainer.train, "_bottleneck_phase", False))  # restored


@unittest.skipUnless(importlib.util.find_spec("lightning") is not None, "lightning is not installed")
class RealLightningTest(unittest.TestCase):
    def test_simple_profiler_sees_the_same_actions(self):
        import io
        import logging
        import lightning as L
        import torch

        logging.getLogger("lightning").setLevel(logging.ERROR)
        logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
        watched = []
        fw = F.Frameworks(lambda name, fn: watched.append(name))
        self.assertNotIn(F.LIGHTNING_MODULES[0], watched)  # imported: hooked at once
        try:
            class M(L.LightningModule):
                def __init__(self):
                    super().__init__()
                    self.lin = torch.nn.Linear(4, 1)

                def training_step(self, batch, i):
                    return self.lin(batch[0]).pow(2).mean()

                def configure_optimizers(self):
                    return torch.optim.SGD(self.parameters(), lr=0.1)

            data = torch.utils.data.TensorDataset(torch.randn(32, 4))
            prof = L.pytorch.profilers.SimpleProfiler()
            trainer = L.Trainer(max_steps=6, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                                enable_progress_bar=False, enable_model_summary=False, profiler=prof)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                trainer.fit(M(), torch.utils.data.DataLoader(data, batch_size=4))
        finally:
            fw.uninstall()
        ev = fw.evidence()
        mine = rows(ev)
        theirs = {k: len(v) for k, v in prof.recorded_durations.items()}
        self.assertGreater(len(theirs), 10)
        for name, calls in theirs.items():
            self.assertIn(name, mine)
            self.assertEqual(mine[name][0], calls, name)
        for part in ("training_step", "backward", "optimizer_step", "train_dataloader_next"):
            self.assertTrue(any(part in n for n in mine), part)
        adds_up(self, ev)
        self.assertEqual(fw.errors, [])


if __name__ == "__main__":
    unittest.main()
