"""Unit tests of _bottleneck_live, the --live view's feed (standard
library only)."""
import dis
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_live as L  # noqa: E402
import _bottleneck_sampler as S  # noqa: E402


class LiveTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def read(self):
        with open(os.path.join(self.dir, ".live", "rank0.json")) as f:
            return json.load(f)

    def test_steps_write_nothing_the_thread_writes_the_ring(self):
        live = L.Live(self.dir, "rank0", 100.0, every_s=0.05, ring=4)
        for i in range(1, 11):
            live.on_step(i, 100.0 + 0.1 * i, 0.1, 0.01, 0.0, 1000 + i, None, "waiting", 0,
                         0.08 if i % 2 else None, 0.005 if i % 2 else None, 32 if i % 2 else None)
        # the step hook does no I/O
        self.assertEqual(os.listdir(os.path.join(self.dir, ".live")), [])
        live.start_thread()
        deadline = time.time() + 30
        while not os.path.exists(os.path.join(self.dir, ".live", "rank0.json")):
            self.assertLess(time.time(), deadline, "no snapshot in 30 s")
            time.sleep(0.01)
        d = self.read()
        self.assertEqual((d["step"], d["state"], d["ended"], d["format"]), (10, "waiting", False, 3))
        self.assertEqual([r[0] for r in d["steps"]], [7, 8, 9, 10])  # the ring keeps the last 4
        live.finish(11, "ended")
        live._thread.join(5)
        self.assertFalse(live._thread.is_alive())
        d = self.read()
        self.assertEqual((d["step"], d["state"], d["ended"]), (11, "ended", True))
        self.assertEqual(d["steps"][-2], [9, 0.9, 0.1, 0.01, 0.0, 1009, None, 0.08, 0.005, 32] + [None] * 5)
        self.assertEqual(d["steps"][-1], [10, 1.0, 0.1, 0.01, 0.0, 1010, None, None, None, None] + [None] * 5)
        self.assertEqual(len(d["steps"][0]), len(d["columns"]))
        self.assertEqual(os.listdir(os.path.join(self.dir, ".live")), ["rank0.json"])  # no temporary file left

    def test_failing_writes_turn_it_off(self):
        live = L.Live(self.dir, "rank0", 0.0)
        shutil.rmtree(os.path.join(self.dir, ".live"))  # every write fails now
        for i in range(1, 6):
            live.on_step(i, float(i), 1.0, 0.0, 0.0, None, None, "waiting", 0)
            live.write()
        self.assertTrue(live.off)
        self.assertEqual(live.errors, 3)

    def test_the_split_goes_to_the_main_threads_steps(self):
        class FakeSampler:
            main_ident = threading.get_ident()
            on_main_sample = None
        sampler = FakeSampler()
        live = L.Live(self.dir, "rank0", 0.0)
        live.attach_sampler(sampler)
        frames = ((_code_at_call(), 1, _CALL_OFFSET),)  # inside x.item()
        sampler.on_main_sample(frames, 0.004, 0.001, 0.02, 0.0)  # 4 ms native, 15 ms blocked in a sync
        live.on_step(1, 1.0, 0.02, 0.0, 0.0, None, None, "waiting", 0)
        live.on_step(2, 2.0, 0.02, 0.0, 0.0, None, None, "waiting", 0)  # no sample since
        t = threading.Thread(target=live.on_step, args=(3, 3.0, 0.02, 0.0, 0.0, None, None, "waiting", 0))
        t.start()
        t.join()
        live.write()
        steps = self.read()["steps"]
        self.assertEqual(steps[0][10:], [0.0, 0.004, 0.015, 0.0, 0.0])
        self.assertEqual(steps[1][10:], [0.0] * 5)
        self.assertEqual(steps[2][10:], [None] * 5)  # a step thread that is not the sampled one


L_CALLS = ("CALL", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_KW", "CALL_KW", "CALL_FUNCTION_EX")


def _item_caller(x):
    return x.item()


def _code_at_call():
    return _item_caller.__code__


_CALL_OFFSET = [i.offset for i in dis.get_instructions(_item_caller) if i.opname in L_CALLS][-1]


def _calls(fn):
    """The callee of each call instruction of fn, in order."""
    return [L.callee(fn.__code__, i.offset) for i in dis.get_instructions(fn) if i.opname in L_CALLS]



def _program(x, t, torch, g):
    x.item()
    float(t)
    torch.cuda.synchronize()
    x.to("cpu", non_blocking=True)
    g(*x)
    print(x.sum().item())
    (x if t else g).cpu()
    (g if t else x)(1)  # which one: not known


class CalleeTest(unittest.TestCase):
    def test_names_the_called_attribute_or_global(self):
        self.assertEqual(_calls(_program), ["item", "float", "synchronize", "to", "g", "sum", "item", "print", "cpu", None])

    def test_no_call(self):
        self.assertIsNone(L.callee(_program.__code__, 0))


def _sleep_in(tmp, sub, name):
    """A function defined in tmp/sub/NAME.py that sleeps: frames from
    torch/cuda/ or torch/distributed/ without torch."""
    d = os.path.join(tmp, *sub.split("/"))
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, name + ".py")
    with open(path, "w") as f:
        f.write("import time\ndef wait(s):\n    time.sleep(s)\n")
    ns = {}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), ns)
    return ns["wait"]


class _Blocking:
    """A tensor whose .item() blocks as a CUDA sync does."""
    item = staticmethod(time.sleep)


def _python(s):
    end = time.perf_counter() + s
    n = 0
    while time.perf_counter() < end:
        for i in range(1000):
            n += (i * 7) % 13
    return n


def _native(s):
    end = time.perf_counter() + s
    while time.perf_counter() < end:
        hashlib.pbkdf2_hmac("sha256", b"x", b"y", 20000)  # C, the GIL released


@unittest.skipUnless(sys.platform.startswith("linux"), "the sampler's CPU clock is Linux's")
class SplitTest(unittest.TestCase):
    """The real sampler at 5 ms on this (main) thread, its samples split
    by Split: each kind of step lands in its part."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def sampled(self, work):
        sampler = S.Sampler(0.005)
        split = L.Split()
        sampler.on_main_sample = split.on_sample
        sampler.start_thread()
        try:
            work()
        finally:
            sampler.stop()
        return dict(zip(("python", "native", "device", "comm", "other"), split.take()))

    def assertMostly(self, got, part, of):
        total = sum(got[k] for k in of)
        self.assertGreater(total, 0, got)
        self.assertGreater(got[part], 0.6 * total, got)

    def test_blocked_in_a_sync(self):
        self.assertMostly(self.sampled(lambda: _Blocking().item(0.4)), "device", ("device", "comm", "other"))

    def test_blocked_in_torch_cuda(self):
        wait = _sleep_in(self.tmp, "torch/cuda", "streams")
        self.assertMostly(self.sampled(lambda: wait(0.4)), "device", ("device", "comm", "other"))

    def test_blocked_in_a_collective(self):
        wait = _sleep_in(self.tmp, "torch/distributed", "distributed_c10d")
        self.assertMostly(self.sampled(lambda: wait(0.4)), "comm", ("device", "comm", "other"))

    def test_blocked_in_a_sleep(self):
        self.assertMostly(self.sampled(lambda: time.sleep(0.4)), "other", ("device", "comm", "other"))

    def test_python_on_the_cpu(self):
        self.assertMostly(self.sampled(lambda: _python(0.4)), "python", ("python", "native"))

    def test_native_on_the_cpu(self):
        self.assertMostly(self.sampled(lambda: _native(0.4)), "native", ("python", "native"))


if __name__ == "__main__":
    unittest.main()
