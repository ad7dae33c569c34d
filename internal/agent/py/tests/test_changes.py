"""Unit tests of _bottleneck_changes (standard library only; the torch
parts run only where torch imports). Each test puts back what the changes
replaced (torch's functions, flags and classes, the collector's settings)."""
import gc
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_changes as C  # noqa: E402

try:
    import torch
    from torch.utils.data import DataLoader, IterableDataset, TensorDataset
    HAVE_TORCH = True
except Exception:
    HAVE_TORCH = False

THIS = os.path.relpath(__file__) if not os.path.relpath(__file__).startswith("..") else __file__


def _internal(fn):
    """The agent's and the library's files (torch, the standard library):
    this test file is the program."""
    return fn == C.__file__ or fn.startswith(os.path.dirname(os.__file__))


def _line():
    return sys._getframe(1).f_lineno


def _by_name(changes):
    return {c["name"]: c for c in changes.evidence()}


class _Restore(object):
    """Remembers attributes (obj, name) and puts them back."""

    def __init__(self):
        self.saved = []

    def keep(self, obj, name):
        d = obj.__dict__ if isinstance(obj, type) else None
        self.saved.append((obj, name, d.get(name) if d is not None else getattr(obj, name), d is not None and name in d))

    def restore(self):
        for obj, name, value, own in reversed(self.saved):
            if isinstance(obj, type) and not own:
                try:
                    delattr(obj, name)
                except AttributeError:
                    pass
            else:
                setattr(obj, name, value)


class ParseTest(unittest.TestCase):
    def test_bad_values_and_names_are_errors_not_applied(self):
        ch = C.Changes({"num_workers": "four", "cudnn_benchmark": "maybe", "warp_drive": "1"}, _internal)
        ev = _by_name(ch)
        self.assertEqual(set(ev), {"num_workers", "cudnn_benchmark", "warp_drive"})
        for c in ev.values():
            self.assertFalse(c["applied"])
            self.assertTrue(c["error"])
        self.assertEqual(ev["warp_drive"]["error"], "no such change")
        self.assertFalse(ch.wants("num_workers"))

    def test_nothing_asked_nothing_changed(self):
        ch = C.Changes({}, _internal)
        before = gc.set_threshold, gc.get_threshold()
        ch.start()
        ch.on_step(1)
        self.assertEqual((gc.set_threshold, gc.get_threshold()), before)
        self.assertEqual(ch.evidence(), [])

    def test_kinds_follow_the_go_contract(self):
        # rundir.ChangeKinds, in order (internal/rundir/changes.go)
        go = os.path.join(os.path.dirname(HERE), "..", "..", "rundir", "changes.go")
        with open(go) as f:
            text = f.read()
        import re
        want = re.findall(r'^\t\{"(\w+)", "(N|bool\|frozen|bool)"', text, re.M)
        self.assertEqual(list(C.KINDS), want)


class GCTest(unittest.TestCase):
    def setUp(self):
        self.threshold = gc.get_threshold()
        self.set_threshold = gc.set_threshold

    def tearDown(self):
        gc.set_threshold = self.set_threshold
        gc.set_threshold(*self.threshold)
        if hasattr(gc, "unfreeze"):
            gc.unfreeze()

    def test_threshold_set_at_start_and_held(self):
        ch = C.Changes({"gc_threshold": "5000"}, _internal)
        ch.start()
        self.assertEqual(gc.get_threshold(), (5000,) + self.threshold[1:])
        gc.set_threshold(100, 3, 4)
        line = _line() - 1
        self.assertEqual(gc.get_threshold(), (5000, 3, 4))
        c = _by_name(ch)["gc_threshold"]
        self.assertTrue(c["applied"])
        self.assertEqual(c["sites"], ["gc.set_threshold(5000) at start (was %d)" % self.threshold[0],
                                      "gc.set_threshold(100, 3, 4) at %s:%d: generation 0 kept at 5000" % (THIS, line)])

    @unittest.skipUnless(hasattr(gc, "freeze"), "gc.freeze needs Python 3.7+")
    def test_freeze_after_the_first_step_only(self):
        ch = C.Changes({"gc_freeze": "true"}, _internal)
        ch.start()
        ch.on_step(0)  # no step has ended yet
        self.assertEqual(gc.get_freeze_count(), 0)
        keep = [[i] for i in range(1000)]
        ch.on_step(1)
        frozen = gc.get_freeze_count()
        self.assertGreater(frozen, len(keep))
        gc.unfreeze()
        ch.on_step(2)
        self.assertEqual(gc.get_freeze_count(), 0)  # once
        c = _by_name(ch)["gc_freeze"]
        self.assertTrue(c["applied"])
        self.assertEqual(len(c["sites"]), 1)
        self.assertRegex(c["sites"][0], r"^gc\.freeze\(\) after step 1: \d+ objects left out of collections$")

    def test_freeze_without_a_step_says_why(self):
        ch = C.Changes({"gc_freeze": "true"}, _internal)
        ch.start()
        c = _by_name(ch)["gc_freeze"]
        self.assertFalse(c["applied"])
        self.assertIn("no step ended", c["error"])


@unittest.skipUnless(HAVE_TORCH, "torch not installed")
class THPAllocTest(unittest.TestCase):
    """thp_alloc: THP_MEM_ALLOC_ENABLE, read by torch once, at its import."""

    def run_start(self, value, env, torch_imported):
        saved_env, saved_torch = os.environ.get("THP_MEM_ALLOC_ENABLE"), sys.modules.get("torch")
        try:
            os.environ.pop("THP_MEM_ALLOC_ENABLE", None)
            if env is not None:
                os.environ["THP_MEM_ALLOC_ENABLE"] = env
            if torch_imported:
                sys.modules["torch"] = saved_torch or object()
            else:
                sys.modules.pop("torch", None)
            ch = C.Changes({"thp_alloc": value}, _internal)
            ch.start()
            return _by_name(ch)["thp_alloc"], os.environ.get("THP_MEM_ALLOC_ENABLE")
        finally:
            os.environ.pop("THP_MEM_ALLOC_ENABLE", None)
            if saved_env is not None:
                os.environ["THP_MEM_ALLOC_ENABLE"] = saved_env
            sys.modules.pop("torch", None)
            if saved_torch is not None:
                sys.modules["torch"] = saved_torch

    def test_from_the_environment(self):
        c, env = self.run_start("true", "1", True)
        self.assertEqual((c["applied"], c["sites"], env), (True, ["THP_MEM_ALLOC_ENABLE=1 in the program's environment"], "1"))

    def test_set_before_torchs_import(self):
        c, env = self.run_start("true", None, False)
        self.assertTrue(c["applied"], c)
        self.assertEqual(env, "1")

    def test_too_late_after_torchs_import(self):
        c, env = self.run_start("true", None, True)
        self.assertFalse(c["applied"], c)
        self.assertIn("torch was imported before the agent started", c["error"])
        self.assertIsNone(env)

    def test_false_is_off(self):
        c, env = self.run_start("false", None, False)
        self.assertTrue(c["applied"], c)
        self.assertIsNone(env)


class TorchTest(unittest.TestCase):
    def setUp(self):
        self.r = _Restore()
        r = self.r
        r.keep(torch, "set_num_threads")
        r.keep(torch, "set_num_interop_threads")
        r.keep(torch, "set_float32_matmul_precision")
        r.keep(type(torch.backends.cudnn), "benchmark")
        r.keep(type(torch.backends.cudnn), "allow_tf32")
        r.keep(type(torch.backends.cuda.matmul), "__setattr__")
        r.keep(DataLoader, "__init__")
        for cls in vars(torch.optim).values():
            if isinstance(cls, type) and "__init__" in cls.__dict__:
                r.keep(cls, "__init__")
        self.threads = torch.get_num_threads()
        self.flags = (torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32,
                      torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision())

    def tearDown(self):
        self.r.restore()
        torch.set_num_threads(self.threads)
        torch.backends.cudnn.benchmark, torch.backends.cudnn.allow_tf32 = self.flags[:2]
        torch.backends.cuda.matmul.allow_tf32 = self.flags[2]
        torch.set_float32_matmul_precision(self.flags[3])

    def changes(self, **wanted):
        ch = C.Changes({k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in wanted.items()}, _internal)
        ch.start()
        ch.on_torch(torch)
        return ch

    # -- DataLoader ---------------------------------------------------------------
    def dataset(self):
        return TensorDataset(torch.arange(24, dtype=torch.float32).reshape(12, 2))

    def test_num_workers_on_every_loader_with_its_site(self):
        ch = self.changes(num_workers=2)
        ds = self.dataset()
        a = DataLoader(ds, batch_size=4)
        la = _line() - 1
        b = DataLoader(ds, 4, False, None, None, 1)  # num_workers given by position
        lb = _line() - 1
        self.assertEqual((a.num_workers, b.num_workers), (2, 2))
        c = _by_name(ch)["num_workers"]
        self.assertTrue(c["applied"])
        self.assertEqual(c["sites"], ["DataLoader at %s:%d: num_workers 0 -> 2" % (THIS, la),
                                      "DataLoader at %s:%d: num_workers 1 -> 2" % (THIS, lb)])
        # the batches are the program's
        self.assertEqual([x.tolist() for (x,) in a], [x.tolist() for (x,) in DataLoader(ds, batch_size=4, num_workers=0)])

    def test_no_loader_says_so(self):
        c = _by_name(self.changes(num_workers=2, pin_memory=True))
        for name in ("num_workers", "pin_memory"):
            self.assertFalse(c[name]["applied"])
            self.assertEqual(c[name]["error"], "the program made no DataLoader")

    def test_iterable_dataset_keeps_its_workers(self):
        class Stream(IterableDataset):
            def __iter__(self):
                return iter(range(6))

        ch = self.changes(num_workers=2)
        loader = DataLoader(Stream(), batch_size=2)
        self.assertEqual(loader.num_workers, 0)
        c = _by_name(ch)["num_workers"]
        self.assertFalse(c["applied"])
        self.assertIn("IterableDataset", c["error"])
        self.assertEqual(len(list(loader)), 3)

    def test_persistent_and_prefetch_only_with_workers(self):
        ch = self.changes(persistent_workers=True, prefetch_factor=4, pin_memory=True)
        none = DataLoader(self.dataset(), batch_size=4)
        ln = _line() - 1
        self.assertEqual((none.persistent_workers, none.pin_memory), (False, True))
        c = _by_name(ch)
        for name in ("persistent_workers", "prefetch_factor"):
            self.assertFalse(c[name]["applied"])
            self.assertEqual(c[name]["error"], "DataLoader at %s:%d: not changed: it has no workers (num_workers 0)"
                             % (THIS, ln))
        some = DataLoader(self.dataset(), batch_size=4, num_workers=1)
        self.assertEqual((some.persistent_workers, some.prefetch_factor), (True, 4))
        c = _by_name(ch)
        self.assertTrue(c["persistent_workers"]["applied"])
        self.assertEqual(c["prefetch_factor"]["sites"][0], "DataLoader at %s:%d: prefetch_factor None -> 4"
                         % (THIS, _line() - 5))
        self.assertNotIn("error", c["prefetch_factor"])

    def test_num_workers_makes_persistent_possible(self):
        ch = self.changes(num_workers=1, persistent_workers=True)
        loader = DataLoader(self.dataset(), batch_size=4)
        self.assertEqual((loader.num_workers, loader.persistent_workers), (1, True))
        self.assertTrue(_by_name(ch)["persistent_workers"]["applied"])

    def test_programs_own_error_is_its_own(self):
        self.changes(num_workers=2)
        with self.assertRaises(TypeError):
            DataLoader(self.dataset(), no_such_argument=1)

    # -- threads ------------------------------------------------------------------
    def test_threads_set_at_import_and_held(self):
        ch = self.changes(threads=1)
        self.assertEqual(torch.get_num_threads(), 1)
        torch.set_num_threads(3)
        line = _line() - 1
        self.assertEqual(torch.get_num_threads(), 1)
        c = _by_name(ch)["threads"]
        self.assertEqual(c["sites"], ["torch.set_num_threads(1) at torch's import (was %d)" % self.threads,
                                      "torch.set_num_threads(3) at %s:%d kept at 1" % (THIS, line)])

    def test_threads_not_held_in_a_forked_child(self):
        if not hasattr(os, "fork"):
            self.skipTest("no fork")
        self.changes(threads=1)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # a DataLoader worker sets its own
            try:
                torch.set_num_threads(2)
                os.write(w, str(torch.get_num_threads()).encode())
            finally:
                os._exit(0)
        os.close(w)
        got = os.read(r, 16)
        os.close(r)
        os.waitpid(pid, 0)
        self.assertEqual(got, b"2")

    def test_interop_threads_in_a_fresh_process(self):
        # torch takes the inter-op thread count once per process: a child
        # process of its own, as the program's would be
        code = ("import sys; sys.path.insert(0, %r)\n"
                "import _bottleneck_changes as C, torch\n"
                "ch = C.Changes({'interop_threads': '1'}, lambda fn: fn == C.__file__)\n"
                "ch.on_torch(torch)\n"
                "torch.set_num_interop_threads(3)\n"
                "print(torch.get_num_interop_threads(), ch.evidence()[0]['sites'][-1])\n" % os.path.dirname(HERE))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "1 torch.set_num_interop_threads(3) at <string>:5 skipped: kept at 1")

    # -- backend flags -------------------------------------------------------------
    def test_cudnn_benchmark_held(self):
        ch = self.changes(cudnn_benchmark=True)
        self.assertTrue(torch.backends.cudnn.benchmark)
        torch.backends.cudnn.benchmark = False
        line = _line() - 1
        self.assertTrue(torch.backends.cudnn.benchmark)
        c = _by_name(ch)["cudnn_benchmark"]
        self.assertEqual(c["sites"][1], "torch.backends.cudnn.benchmark = False at %s:%d kept at True" % (THIS, line))

    def test_tf32_set_and_held(self):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        ch = self.changes(tf32=True)
        self.assertEqual((torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32), (True, True))
        torch.backends.cuda.matmul.allow_tf32 = False
        l1 = _line() - 1
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        l3 = _line() - 1
        self.assertEqual((torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32), (True, True))
        self.assertEqual(torch.get_float32_matmul_precision(), "high")
        sites = _by_name(ch)["tf32"]["sites"]
        self.assertIn("torch.backends.cuda.matmul.allow_tf32 = False at %s:%d kept at True" % (THIS, l1), sites)
        self.assertIn("torch.set_float32_matmul_precision('highest') at %s:%d kept at 'high'" % (THIS, l3), sites)
        self.assertEqual(len(sites), 4)

    # -- optimizers -------------------------------------------------------------------
    def test_foreach_passed_unless_the_program_passed_its_own(self):
        ch = self.changes(foreach_optimizer=True)
        m = torch.nn.Linear(2, 1)
        a = torch.optim.SGD(m.parameters(), lr=0.1)
        la = _line() - 1
        b = torch.optim.Adam(m.parameters(), lr=0.1, foreach=False)
        lb = _line() - 1
        self.assertEqual((a.defaults["foreach"], b.defaults["foreach"]), (True, False))
        c = _by_name(ch)["foreach_optimizer"]
        self.assertTrue(c["applied"])
        self.assertEqual(c["sites"], ["SGD at %s:%d: foreach=True" % (THIS, la),
                                      "Adam at %s:%d: not changed: the program's own foreach=False kept" % (THIS, lb)])

    def test_refused_change_leaves_the_optimizer_as_the_program_made_it(self):
        # fused=True with the program's foreach=True: torch refuses; the
        # parameters, a generator, still reach the optimizer
        ch = self.changes(fused_optimizer=True)
        m = torch.nn.Linear(2, 1)
        opt = torch.optim.SGD(m.parameters(), lr=0.1, foreach=True)
        self.assertEqual(len(opt.param_groups[0]["params"]), 2)
        self.assertFalse(opt.defaults.get("fused"))
        c = _by_name(ch)["fused_optimizer"]
        self.assertFalse(c["applied"])
        self.assertIn("not changed: fused=True: ", c["error"])

    def test_no_optimizer_says_so(self):
        c = _by_name(self.changes(fused_optimizer=True))["fused_optimizer"]
        self.assertFalse(c["applied"])
        self.assertIn("no torch.optim optimizer", c["error"])

    def test_subclass_constructors_change_once(self):
        ch = self.changes(foreach_optimizer=True)

        class MyAdam(torch.optim.Adam):
            def __init__(self, params):
                super().__init__(params, lr=0.01)

        opt = MyAdam(torch.nn.Linear(2, 1).parameters())
        self.assertTrue(opt.defaults["foreach"])
        self.assertEqual(len(_by_name(ch)["foreach_optimizer"]["sites"]), 1)


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(HAVE_TORCH, "torch not importable")
class ModelTest(unittest.TestCase):
    """channels_last and bf16_autocast, made at a model's first outermost
    call by a global forward pre-hook, as the agent's calls on_model."""

    class Net(torch.nn.Module if HAVE_TORCH else object):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3)
            self.head = torch.nn.Linear(8, 2)

        def forward(self, x):
            return self.head(self.conv(x).mean((2, 3))), {"feat": self.conv(x)}

    def changes(self, wanted):
        torch_dir = os.path.dirname(torch.__file__)
        ch = C.Changes(wanted, lambda fn: _internal(fn) or fn.startswith(torch_dir))
        from torch.nn.modules.module import register_module_forward_pre_hook, register_module_forward_hook
        # the hooks as the agent's: compiled as its file, which the site skips
        ns = {"ch": ch, "torch": torch, "depth": [0]}
        exec(compile(
            "def pre(module, args):\n"
            "    depth[0] += 1\n"
            "    if depth[0] == 1:\n"
            "        ch.on_model(module, torch)\n"
            "def post(module, args, out):\n"
            "    depth[0] -= 1\n", C.__file__, "exec"), ns)
        for handle in (register_module_forward_pre_hook(ns["pre"]), register_module_forward_hook(ns["post"])):
            self.addCleanup(handle.remove)
        forward = self.Net.forward
        self.addCleanup(lambda: (setattr(self.Net, "forward", forward), self.Net.__dict__.get("_bottleneck_autocast") is not None
                                 and delattr(self.Net, "_bottleneck_autocast")))
        return ch

    def pickles(self, model):
        """torch.save(model) of the whole model, as programs checkpoint."""
        import io
        torch.save(model, io.BytesIO())

    def test_channels_last_converts_the_weights_once(self):
        model, x = self.Net(), torch.randn(2, 3, 8, 8)
        out_cl = []
        hook = model.conv.register_forward_hook(lambda m, a, out: out_cl.append(out.is_contiguous(memory_format=torch.channels_last)))
        weight = model.conv.weight
        ch = self.changes({"channels_last": "true"})
        self.assertTrue(ch.wants_model())
        model(x)
        line = _line() - 1
        model(x)
        self.assertIs(model.conv.weight, weight)  # the optimizer's parameter, converted in place
        self.assertTrue(weight.is_contiguous(memory_format=torch.channels_last))
        self.assertEqual(out_cl, [True] * 4)  # the weight's layout carries to the outputs; twice a call
        self.assertTrue(x.is_contiguous())  # the program's tensor is left as it was
        c = _by_name(ch)["channels_last"]
        self.assertTrue(c["applied"])
        self.assertEqual(c["sites"], ["Net called at %s:%d: channels_last, its 1 convolutions' weights (their outputs follow)" % (THIS, line)])
        hook.remove()  # the test's own, a lambda
        self.pickles(model)

    def test_channels_last_leaves_a_model_without_convolutions(self):
        ch = self.changes({"channels_last": "true"})
        torch.nn.Linear(4, 2)(torch.randn(3, 4))
        c = _by_name(ch)["channels_last"]
        self.assertFalse(c["applied"])
        self.assertIn("no model with 2-D convolutions", c["error"])

    def test_channels_last_leaves_a_wrapped_model(self):
        class DistributedDataParallel(torch.nn.Module):  # named as torch's: the check is by name
            def __init__(self, inner):
                super().__init__()
                self.module = inner

            def forward(self, x):
                return self.module(x)
        model = DistributedDataParallel(self.Net())
        ch = self.changes({"channels_last": "true"})
        model(torch.randn(1, 3, 8, 8))
        self.assertTrue(model.module.conv.weight.is_contiguous())
        c = _by_name(ch)["channels_last"]
        self.assertFalse(c["applied"])
        self.assertIn("not changed: a model is put in channels_last before DistributedDataParallel wraps it", c["error"])

    def test_bf16_autocast_from_the_second_call_outputs_float32(self):
        model, other, x = self.Net(), self.Net(), torch.randn(2, 3, 8, 8)
        dtypes = []
        hook = model.head.register_forward_hook(lambda m, a, out: dtypes.append(out.dtype))
        ch = self.changes({"bf16_autocast": "true"})
        model(x)  # this call's forward was chosen before the hook ran
        out, extra = model(x)
        self.assertEqual(dtypes, [torch.float32, torch.bfloat16])
        self.assertEqual(out.dtype, torch.float32)
        self.assertEqual(extra["feat"].dtype, torch.float32)
        out.sum().backward()  # autograd runs through the casts
        self.assertEqual(model.conv.weight.grad.dtype, torch.float32)
        self.assertTrue(_by_name(ch)["bf16_autocast"]["applied"])
        try:  # not left on after the call
            on = torch.is_autocast_enabled("cpu")
        except TypeError:  # torch < 2.4
            on = torch.is_autocast_cpu_enabled()
        self.assertFalse(on)
        hook.remove()
        self.pickles(model)
        # another instance of the class, called inside a call of its own
        # (depth > 0): it runs as it was
        other.head.register_forward_hook(lambda m, a, out: dtypes.append(out.dtype))
        with torch.no_grad():
            torch.nn.Sequential(other)(x)
        self.assertEqual(dtypes[-1], torch.float32)

    def test_frozen_changes_the_models_called_without_gradients_only(self):
        # a distillation step: the teacher under torch.no_grad, the student
        # trained; frozen changes the teacher alone
        teacher, student, x = self.Net(), self.Net(), torch.randn(2, 3, 8, 8)
        dtypes = []
        teacher.head.register_forward_hook(lambda m, a, out: dtypes.append(("teacher", out.dtype)))
        student.head.register_forward_hook(lambda m, a, out: dtypes.append(("student", out.dtype)))
        ch = self.changes({"channels_last": "frozen", "bf16_autocast": "frozen"})
        self.assertTrue(ch.wants_model())
        for _ in range(2):
            with torch.no_grad():
                teacher(x)
            torch.nn.MSELoss()(student(x)[0], torch.zeros(2, 2)).backward()  # a loss: nothing to change
        self.assertTrue(teacher.conv.weight.is_contiguous(memory_format=torch.channels_last))
        self.assertTrue(student.conv.weight.is_contiguous())
        self.assertEqual(dtypes[2:], [("teacher", torch.bfloat16), ("student", torch.float32)])
        for name in ("channels_last", "bf16_autocast"):
            c = _by_name(ch)[name]
            self.assertTrue(c["applied"], c)
            # the evidence lists where it took effect, then where not
            self.assertEqual(len(c["sites"]), 2, c)
            self.assertNotIn("not changed", c["sites"][0])
            self.assertIn("not changed: it runs with gradients", c["sites"][1])

    def test_frozen_parses_only_for_the_model_changes(self):
        ch = C.Changes({"bf16_autocast": "Frozen", "tf32": "frozen"}, _internal)
        self.assertEqual(ch.value["bf16_autocast"], "frozen")
        self.assertIn("want true or false, got 'frozen'", _by_name(ch)["tf32"]["error"])

    def test_model_changes_not_wanted_change_nothing(self):
        for wanted in ({}, {"channels_last": "false", "bf16_autocast": "false"}):
            ch = self.changes(wanted)
            self.assertFalse(ch.wants_model())
            model = self.Net()
            model(torch.randn(1, 3, 8, 8))
            model(torch.randn(1, 3, 8, 8))
            self.assertIs(type(model).forward, self.Net.forward)
            self.assertTrue(model.conv.weight.is_contiguous())


def _start_with_env(change, value, names, env):
    """The change's record after the agent's start, in an environment
    with env as the only values of names (restored after)."""
    saved = {k: os.environ.get(k) for k in names}
    try:
        for k in names:
            os.environ.pop(k, None)
        os.environ.update(env)
        ch = C.Changes({change: value}, _internal)
        ch.start()
        return _by_name(ch)[change]
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v


class MallocReuseTest(unittest.TestCase):
    """malloc_reuse: glibc's variables, read at the process's start."""

    def run_start(self, value, env):
        return _start_with_env("malloc_reuse", value, [k for k, _ in C.MALLOC_REUSE], env)

    def test_from_the_environment(self):
        c = self.run_start("true", dict(C.MALLOC_REUSE))
        self.assertTrue(c["applied"], c)
        self.assertIn("MALLOC_TRIM_THRESHOLD_=4294967296", c["sites"][0])
        self.assertTrue(self.run_start("false", {})["applied"])

    def test_not_at_the_process_start(self):
        c = self.run_start("true", {"MALLOC_TRIM_THRESHOLD_": "131072"})
        self.assertFalse(c["applied"], c)
        self.assertIn("which had MALLOC_TRIM_THRESHOLD_=131072", c["error"])
        self.assertIn("which had neither", self.run_start("true", {})["error"])


class OMPPassiveTest(unittest.TestCase):
    """omp_passive: OMP_WAIT_POLICY, read when torch loads OpenMP."""

    def run_start(self, value, env):
        return _start_with_env("omp_passive", value, [C.OMP_PASSIVE[0]], env)

    def test_from_the_environment(self):
        c = self.run_start("true", {"OMP_WAIT_POLICY": "passive"})
        self.assertTrue(c["applied"], c)
        self.assertIn("OMP_WAIT_POLICY=PASSIVE", c["sites"][0])
        self.assertTrue(self.run_start("false", {})["applied"])

    def test_not_at_the_process_start(self):
        c = self.run_start("true", {"OMP_WAIT_POLICY": "ACTIVE"})
        self.assertFalse(c["applied"], c)
        self.assertIn("started with OMP_WAIT_POLICY=ACTIVE", c["error"])
        self.assertIn("started with none", self.run_start("true", {})["error"])
        self.assertFalse(self.run_start("false", {"OMP_WAIT_POLICY": "PASSIVE"})["applied"])
