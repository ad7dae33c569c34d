"""Unit tests of _bottleneck_overhead, the in-process A/B of the agent's
cost, and of the sampler's pause (standard library only)."""
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_overhead as O  # noqa: E402
import _bottleneck_sampler as S  # noqa: E402


class FakeSampler(object):
    def __init__(self):
        self.calls = []

    def pause(self):
        self.calls.append("pause")

    def resume(self):
        self.calls.append("resume")


class OverheadABTest(unittest.TestCase):
    def test_blocks_alternate_and_steps_keep_their_blocks_state(self):
        sampler = FakeSampler()
        ab = O.OverheadAB(3, sampler)
        works = [ab.step(n, None if n == 1 else n / 1000.0) for n in range(1, 13)]
        # step n ends at boundary n; the agent works at it, and in step
        # n+1, when n // 3 is even
        self.assertEqual(works, [True, True, False, False, False, True, True, True, False, False, False, True])
        self.assertEqual(sampler.calls, ["pause", "resume", "pause", "resume"])
        on = [n for n, _ in ab.steps[True]]
        off = [n for n, _ in ab.steps[False]]
        self.assertEqual(on, [2, 3, 7, 8, 9])
        self.assertEqual(off, [4, 5, 6, 10, 11, 12])
        d = tempfile.mkdtemp()
        try:
            path = os.path.join(d, "ab.json")
            ab.write(path)
            with open(path) as f:
                got = json.load(f)
            self.assertEqual(got["block"], 3)
            self.assertEqual([n for n, _ in got["off"]], off)
        finally:
            shutil.rmtree(d)

    def test_off_without_the_variable(self):
        saved = os.environ.pop(O.ENV, None)
        try:
            self.assertIsNone(O.OverheadAB.from_env(None))
            os.environ[O.ENV] = "junk"
            self.assertIsNone(O.OverheadAB.from_env(None))
            os.environ[O.ENV] = "50"
            self.assertEqual(O.OverheadAB.from_env(None).block, 50)
        finally:
            os.environ.pop(O.ENV, None)
            if saved is not None:
                os.environ[O.ENV] = saved


class SamplerPauseTest(unittest.TestCase):
    def test_paused_takes_no_sample_and_stops_promptly(self):
        s = S.Sampler(0.002)
        s.start_thread()
        try:
            deadline = time.time() + 5
            while s.samples == 0 and time.time() < deadline:
                time.sleep(0.01)
            self.assertGreater(s.samples, 0)
            s.pause()
            n = s.samples
            time.sleep(0.2)
            self.assertLessEqual(s.samples, n + 1, "samples taken while paused (one may have been under way)")
            s.resume()
            deadline = time.time() + 5
            while s.samples == n and time.time() < deadline:
                time.sleep(0.01)
            self.assertGreater(s.samples, n)
            s.pause()
        finally:
            t0 = time.time()
            s.stop()
            self.assertTrue(s._exited.is_set(), "the paused sampler did not end on stop")
            self.assertLess(time.time() - t0, 2.0)


if __name__ == "__main__":
    unittest.main()
