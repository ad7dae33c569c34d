"""Unit tests of _bottleneck_children (standard library only)."""
import multiprocessing
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_children as C  # noqa: E402


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _sleep(seconds):
    time.sleep(seconds)


@unittest.skipUnless(os.path.isdir("/proc/self/task"), "Linux /proc")
class ChildrenTest(unittest.TestCase):
    def setUp(self):
        self.children = C.Children()
        self.undo = C.install(self.children, os.getpid())
        self.ctx = multiprocessing.get_context("fork")

    def tearDown(self):
        if self.undo is not None:
            self.undo()

    def run_children(self, target, n, seconds):
        procs = [self.ctx.Process(target=target, args=(seconds,)) for _ in range(n)]
        for p in procs:
            p.start()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.children.read()
            time.sleep(0.1)
        for p in procs:
            p.join()
        self.children.read()  # every child ended: nothing more to read

    def test_busy_children_counted_and_read(self):
        self.run_children(_spin, 2, 1.0)
        ev = self.children.evidence()
        self.assertEqual(ev["processes"], 2)
        self.assertEqual(ev["most_alive"], 2)
        self.assertGreater(ev["wall_s"], 0.5)
        # two spinning children want two CPUs: on a CPU or waiting for one
        self.assertGreater((ev["cpu_s"] + ev["wait_s"]) / ev["wall_s"], 1.2)

    def test_sleeping_children_want_no_cpu(self):
        self.run_children(_sleep, 2, 1.0)
        ev = self.children.evidence()
        self.assertEqual(ev["processes"], 2)
        self.assertLess((ev["cpu_s"] + ev["wait_s"]) / ev["wall_s"], 0.2)

    def test_dataloader_workers_and_other_processes_not_counted(self):
        def loop(*args):
            pass
        loop.__module__ = "torch.utils.data._utils.worker"
        p = self.ctx.Process(target=loop)
        p.start()
        p.join()
        self.assertIsNone(self.children.evidence())
        other = C.Children()
        undo = C.install(other, os.getpid() + 1)  # not this process's agent
        try:
            p = self.ctx.Process(target=_sleep, args=(0,))
            p.start()
            p.join()
        finally:
            undo()
        self.assertIsNone(other.evidence())
        self.assertEqual(self.children.evidence()["processes"], 1)
        self.children.read()

    def test_undo_restores_start(self):
        import multiprocessing.process as mpp
        before = mpp.BaseProcess.start
        undo = C.install(C.Children(), os.getpid())
        self.assertIs(mpp.BaseProcess.start.__wrapped__, before)
        undo()
        self.assertIs(mpp.BaseProcess.start, before)


if __name__ == "__main__":
    unittest.main()
