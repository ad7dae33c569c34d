"""Unit tests of _bottleneck_workers (standard library only; the DataLoader
parts run only where torch imports)."""
import json
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_agent as A  # noqa: E402
import _bottleneck_workers as W  # noqa: E402

try:
    import torch  # noqa: F401
    from torch.utils.data import DataLoader, Dataset
    HAVE_TORCH = True
except Exception:
    HAVE_TORCH = False

API = types.SimpleNamespace(Sampler=A.Sampler, atomic_write_json=A.atomic_write_json)


def _spin(seconds):
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return n


def fake_loop(*args, **kwargs):
    """Stands in for torch's loop: works, then returns or raises as told."""
    _spin(0.15)
    if kwargs.get("fail"):
        raise ValueError("planted")
    return ("result", args[10])


if HAVE_TORCH:
    class Squares(Dataset):
        def __len__(self):
            return 24

        def __getitem__(self, i):
            _spin(0.01)
            return torch.tensor([float(i * i)])


class WorkersTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        W._agentmod = API
        self.cfg = {"run_dir": self.dir, "tag": "rank0", "interval": 0.005, "flush_s": 1.0}

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def profiles(self):
        d = os.path.join(self.dir, "pyworkers-rank0")
        out = []
        for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if n.endswith(".json"):
                with open(os.path.join(d, n)) as f:
                    out.append(json.load(f))
        return out

    def args(self):
        # _worker_loop's positional arguments (torch 2.x): worker_id 1 of 2
        return ("map", ["ds"], None, None, None, True, None, False, 0, None, 1, 2, False, None)

    def test_loop_result_and_exception_unchanged_profile_written(self):
        loop = W.WorkerLoop(fake_loop, self.cfg)
        self.assertEqual(loop(*self.args()), ("result", 1))
        with self.assertRaises(ValueError) as cm:
            loop(*self.args(), fail=True)
        self.assertEqual(str(cm.exception), "planted")
        ps = self.profiles()
        self.assertEqual(len(ps), 1)  # both calls in this process: one file per pid
        p = ps[0]
        self.assertEqual(p["format"], "bottleneck.pyprofile")
        self.assertEqual(p["pid"], os.getpid())
        self.assertEqual(p["worker"]["worker_id"], 1)
        self.assertEqual(p["worker"]["num_workers"], 2)
        self.assertEqual(p["worker"]["dataset"], "str")  # the holder list is looked into
        # samples were taken: how many depends on the CPU a loaded machine
        # gives the process in 0.3 s (5 of ~60 on CI)
        self.assertGreater(p["samples"], 0)
        funcs = {p["frames"][i]["func"] for s in p["stacks"] for i in s["frames"]}
        self.assertTrue(any(f.endswith("_spin") for f in funcs), funcs)
        # the agent's own frames (WorkerLoop.__call__) are not in the stacks
        self.assertFalse(any(fr["file"] == W.__file__ for fr in p["frames"]))

    def test_idle_worker_sampled_less_often_after_its_fetches_are_written(self):
        rec = W.Recorder(self.cfg, self.args(), {})
        os.makedirs(os.path.dirname(rec.path))
        fetch = [(types.SimpleNamespace(co_filename=os.path.join("site", W._FETCH)), 1, 0)]
        idle = [(types.SimpleNamespace(co_filename="queues.py"), 1, 0)]
        now = {"stack": fetch}
        rec.sampler.thread_stacks = lambda: {rec._main: now["stack"]}
        rec._after_sample()
        self.assertEqual(rec.sampler.weight, 1)
        now["stack"] = idle
        weights = []
        for _ in range(10):
            rec._after_sample()
            weights.append(rec.sampler.weight)
        # full rate until the third idle sample writes the fetches, then
        # one more interval a sample, up to MAX_WEIGHT
        self.assertEqual(weights[:2], [1, 1])
        self.assertTrue(os.path.exists(rec.path))
        self.assertEqual(weights[2:6], [2, 3, 4, 5])
        self.assertEqual(max(weights), W._agentmod.Sampler.MAX_WEIGHT)
        now["stack"] = fetch
        rec._after_sample()
        self.assertEqual(rec.sampler.weight, 1)

    def test_pickles_into_a_fresh_interpreter(self):
        # spawn/forkserver workers unpickle the loop without the agent on
        # sys.path: the pickle loads this file by path
        blob = pickle.dumps(W.WorkerLoop(fake_loop, self.cfg))
        code = ("import pickle, sys; f = pickle.loads(sys.stdin.buffer.read()); "
                "print(type(f).__name__, f.cfg['tag'], f.orig is None, f.__module__)")
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        out = subprocess.run([sys.executable, "-c", code], input=blob, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=self.dir, env=env, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertEqual(out.stdout.decode().split(), ["WorkerLoop", "rank0", "True", "torch.utils.data._utils.worker"])

    @unittest.skipUnless(HAVE_TORCH, "needs torch")
    def test_unpickling_without_the_file_falls_back_to_torchs_loop(self):
        loop = W.WorkerLoop(fake_loop, self.cfg)
        fn, (expr, g) = loop.__reduce__()
        g["ns"]["path"] = os.path.join(self.dir, "gone.py")
        code = ("import pickle, sys; f = pickle.loads(sys.stdin.buffer.read()); "
                "import torch.utils.data._utils.worker as w; print(f is w._worker_loop)")
        blob = pickle.dumps(_Reduced(fn, (expr, g)))
        out = subprocess.run([sys.executable, "-c", code], input=blob, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr.decode())
        self.assertEqual(out.stdout.decode().strip(), "True")
        m = W.missing(self.dir, "rank0", [{"num_workers": 2}])
        self.assertIsNotNone(m)
        self.assertIn("FileNotFoundError", m["why"])

    def test_missing(self):
        self.assertIsNone(W.missing(self.dir, "rank0", [{"num_workers": 0}]))
        m = W.missing(self.dir, "rank0", [{"num_workers": 2}])
        self.assertEqual(m["what"], "DataLoader worker profile")
        W.WorkerLoop(fake_loop, self.cfg)(*self.args())
        self.assertIsNone(W.missing(self.dir, "rank0", [{"num_workers": 2}]))

    @unittest.skipUnless(HAVE_TORCH and hasattr(os, "fork"), "needs torch and fork")
    def test_dataloader_workers_only(self):
        import multiprocessing as mp
        ctx = mp.get_context("fork")
        want = [b.tolist() for b in DataLoader(Squares(), batch_size=4)]
        loop = W.install(API, self.dir, "rank0", 0.005, 1.0)
        try:
            self.assertIsNotNone(loop)
            self.assertIsNone(W.install(API, self.dir, "rank0", 0.005, 1.0))  # once
            got = [b.tolist() for b in DataLoader(Squares(), batch_size=4, num_workers=2, multiprocessing_context=ctx)]
            with ctx.Pool(2) as pool:
                self.assertEqual(pool.map(abs, [-1, -2]), [1, 2])
        finally:
            W.uninstall(loop)
        import torch.utils.data._utils.worker as w
        self.assertNotIsInstance(w._worker_loop, W.WorkerLoop)
        self.assertEqual(got, want)
        ps = self.profiles()
        # two workers, no pool process
        self.assertEqual(sorted(p["worker"]["worker_id"] for p in ps), [0, 1])
        for p in ps:
            self.assertEqual(p["worker"]["start_method"], "fork")
            self.assertEqual(p["worker"]["dataset"], "Squares")
            self.assertEqual(p["worker"]["ppid"], os.getpid())
            lines = {p["frames"][i]["func"] for s in p["stacks"] for i in s["frames"]}
            self.assertTrue(any(f.endswith("__getitem__") for f in lines), lines)


class _Reduced(object):
    """Pickles as the given reduce value (a WorkerLoop with another path)."""

    def __init__(self, fn, args):
        self.r = (fn, args)

    def __reduce__(self):
        return self.r


if __name__ == "__main__":
    unittest.main()
