"""Unit tests of _bottleneck_live, the --live view's feed (standard
library only)."""
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_live as L  # noqa: E402


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
        self.assertEqual((d["step"], d["state"], d["ended"], d["format"]), (10, "waiting", False, 2))
        self.assertEqual([r[0] for r in d["steps"]], [7, 8, 9, 10])  # the ring keeps the last 4
        live.finish(11, "ended")
        live._thread.join(5)
        self.assertFalse(live._thread.is_alive())
        d = self.read()
        self.assertEqual((d["step"], d["state"], d["ended"]), (11, "ended", True))
        self.assertEqual(d["steps"][-2], [9, 0.9, 0.1, 0.01, 0.0, 1009, None, 0.08, 0.005, 32])
        self.assertEqual(d["steps"][-1], [10, 1.0, 0.1, 0.01, 0.0, 1010, None, None, None, None])
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


if __name__ == "__main__":
    unittest.main()
