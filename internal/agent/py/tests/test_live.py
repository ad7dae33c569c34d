"""Unit tests of _bottleneck_live, the --live view's feed (standard
library only)."""
import json
import os
import shutil
import sys
import tempfile
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

    def test_ring_is_bounded_and_writes_are_spaced(self):
        live = L.Live(self.dir, "rank0", 100.0, every_s=0.5, ring=4)
        # ten steps 0.1 s apart: written at the first, then every 0.5 s
        for i in range(1, 11):
            live.on_step(i, 100.0 + 0.1 * i, 0.1, 0.01, 0.0, 1000 + i, None, "waiting", 0)
            d = self.read()
            self.assertIn(d["step"], (1, 6), "step %d wrote step %d" % (i, d["step"]))
        self.assertEqual(d["step"], 6)
        self.assertEqual([r[0] for r in d["steps"]], [3, 4, 5, 6])
        live.write(10, "ended", 1, ended=True)
        d = self.read()
        self.assertEqual((d["step"], d["state"], d["ended"], d["format"]), (10, "ended", True, 1))
        self.assertEqual(d["steps"][-1], [10, 1.0, 0.1, 0.01, 0.0, 1010, None])
        self.assertEqual(len(d["steps"][0]), len(d["columns"]))
        # no temporary file is left beside it
        self.assertEqual(os.listdir(os.path.join(self.dir, ".live")), ["rank0.json"])

    def test_failing_writes_turn_it_off(self):
        live = L.Live(self.dir, "rank0", 0.0, every_s=0.0)
        shutil.rmtree(os.path.join(self.dir, ".live"))  # every write fails now
        for i in range(1, 6):
            live.on_step(i, float(i), 1.0, 0.0, 0.0, None, None, "waiting", 0)
        self.assertTrue(live.off)
        self.assertEqual(live.errors, 3)


if __name__ == "__main__":
    unittest.main()
