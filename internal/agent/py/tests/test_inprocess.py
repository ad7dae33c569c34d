"""Tests of the in-process entry points (_bottleneck_inprocess), standard
library only: start an agent inside this process, stop it, and check the
files it wrote and that the process is left as it was."""
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_agent as A  # noqa: E402
import _bottleneck_inprocess as IP  # noqa: E402


def config(run_dir):
    return {"run_dir": run_dir, "python_profiler": "sample", "sample_interval": 0.002,
            "window_sample_interval": 0.001, "profiler": {"enabled": True}, "step_source": "auto",
            "checkpoint_interval": 0}


class InProcessTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def read(self, name):
        with open(os.path.join(self.dir, name)) as f:
            return json.load(f)

    def test_start_stop_writes_files_and_restores_the_process(self):
        # the agent takes SIGTERM only while the program has not (earlier
        # tests in this process may have left a handler)
        self.addCleanup(signal.signal, signal.SIGTERM, signal.getsignal(signal.SIGTERM))
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        sigterm = signal.SIG_DFL
        meta = list(sys.meta_path)
        kineto = os.environ.get("KINETO_LOG_LEVEL")
        agent = IP.start(config(self.dir))
        self.assertIs(IP.active_agent(), agent)
        self.assertNotEqual(signal.getsignal(signal.SIGTERM), sigterm)
        deadline = time.time() + 0.2
        while time.time() < deadline:
            sum(range(1000))
        IP.stop(agent)
        self.assertIsNone(IP.active_agent())
        self.assertEqual(signal.getsignal(signal.SIGTERM), sigterm)
        self.assertEqual(sys.meta_path, meta)
        self.assertEqual(os.environ.get("KINETO_LOG_LEVEL"), kineto)
        ev = self.read("evidence-rank0.json")
        self.assertTrue(ev["final"])
        self.assertEqual(ev["exit"]["reason"], "ok")
        self.assertGreater(self.read("pyprofile-rank0.json")["samples"], 0)
        self.assertTrue(os.path.exists(os.path.join(self.dir, "env-rank0.json")))

    def test_exception_and_interrupt_are_recorded(self):
        for exc, reason in ((ValueError("bad batch"), "exception"), (KeyboardInterrupt(), "interrupted")):
            d = tempfile.mkdtemp(dir=self.dir)
            IP.stop(IP.start(config(d)), exc)
            with open(os.path.join(d, "evidence-rank0.json")) as f:
                ev = json.load(f)
            self.assertEqual(ev["exit"]["reason"], reason)
            if reason == "exception":
                self.assertIn("ValueError: bad batch", ev["exit"]["exception"])

    def test_a_second_agent_is_refused_while_one_records(self):
        agent = IP.start(config(self.dir))
        try:
            with self.assertRaises(IP.AlreadyProfiled):
                IP.start(config(tempfile.mkdtemp(dir=self.dir)))
        finally:
            IP.stop(agent)
        # and allowed once it stopped
        IP.stop(IP.start(config(tempfile.mkdtemp(dir=self.dir))))

    def test_frames_of_the_entry_points_are_the_agents(self):
        self.assertTrue(A.is_agent_file(IP.__file__))


if __name__ == "__main__":
    unittest.main()
