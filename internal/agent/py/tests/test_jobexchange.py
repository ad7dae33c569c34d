"""Unit tests of _bottleneck_jobexchange, the job exchange over torchrun's
store (standard library only; the TCPStore case runs where torch is
importable)."""
import json
import os
import shutil
import sys
import tempfile
import threading
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_jobexchange as X  # noqa: E402
from _bottleneck_files import atomic_write_json  # noqa: E402


class FakeStore:
    """The part of torch.distributed.Store the exchange uses."""

    def __init__(self):
        self.kv = {}
        self.lock = threading.Lock()

    def add(self, key, n):
        with self.lock:
            v = int(self.kv.get(key, b"0")) + n
            self.kv[key] = str(v).encode()
            return v

    def set(self, key, value):
        with self.lock:
            self.kv[key] = value if isinstance(value, bytes) else value.encode()

    def check(self, keys):
        with self.lock:
            return all(k in self.kv for k in keys)

    def get(self, key):
        with self.lock:
            return self.kv[key]


class Clock:
    """A clock that moves only when the collector sleeps."""

    def __init__(self):
        self.t = 0.0
        self.on_sleep = None

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s
        if self.on_sleep:
            self.on_sleep(self.t)


def message(rank, node=0):
    return {"format": X.FORMAT, "rank": rank, "node": node, "summaries": []}


class CollectTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.store = FakeStore()
        self.prefix = X.key_prefix({"TORCHELASTIC_RUN_ID": "j1", "TORCHELASTIC_RESTART_COUNT": "0"})

    def tearDown(self):
        shutil.rmtree(self.dir)

    def collect(self, world, wait_s, clock):
        return X.collect(self.store, self.prefix, world, self.dir, wait_s, atomic_write_json, clock=clock, sleep=clock.sleep)

    def received(self):
        return sorted(os.listdir(os.path.join(self.dir, X.RECEIVED_DIR)))

    def test_every_rank_in_any_order_ends_the_wait_at_once(self):
        for r in (3, 0, 2, 1):
            X.send(self.store, self.prefix, message(r))
        clock = Clock()
        rec = self.collect(4, 60, clock)
        self.assertEqual(rec["ended"], "all ranks")
        self.assertEqual(rec["ranks"], [0, 1, 2, 3])
        self.assertEqual(rec["missing"], [])
        self.assertEqual(clock.t, 0.0)  # no sleep: nothing to wait for
        self.assertEqual(self.received(), ["rank0.json", "rank1.json", "rank2.json", "rank3.json"])
        with open(os.path.join(self.dir, X.COLLECTED_NAME)) as f:
            self.assertEqual(json.load(f)["format"], X.COLLECTED_FORMAT)

    def test_a_rank_that_never_reports_is_missing_after_the_wait(self):
        X.send(self.store, self.prefix, message(0))
        clock = Clock()

        def late(t):  # rank 1 arrives during the wait, rank 2 never
            if abs(t - 1.0) < 1e-9:
                X.send(self.store, self.prefix, message(1, node=1))
        clock.on_sleep = late
        rec = self.collect(3, 5, clock)
        self.assertEqual(rec["ended"], "wait over")
        self.assertEqual(rec["ranks"], [0, 1])
        self.assertEqual(rec["missing"], [2])
        self.assertGreaterEqual(rec["waited_s"], 5)
        self.assertLess(rec["waited_s"], 5 + X.POLL_S + 1e-6)

    def test_a_counted_message_not_yet_set_is_read_later(self):
        # a rank that counted itself and died before its set holds no later one back
        self.store.add(self.prefix + "count", 1)
        X.send(self.store, self.prefix, message(1))
        clock = Clock()

        def fill(t):
            if abs(t - 0.5) < 1e-9:
                self.store.set(self.prefix + "msg1", json.dumps(message(0)))
        clock.on_sleep = fill
        rec = self.collect(2, 10, clock)
        self.assertEqual(rec["ranks"], [0, 1])
        self.assertEqual(rec["ended"], "all ranks")

    def test_twice_and_garbage_are_named_not_kept(self):
        X.send(self.store, self.prefix, message(0))
        X.send(self.store, self.prefix, message(0))
        n = self.store.add(self.prefix + "count", 1)
        self.store.set(self.prefix + "msg%d" % n, b"not json")
        rec = self.collect(2, 1, Clock())
        self.assertEqual(rec["ranks"], [0])
        self.assertEqual(len(rec["problems"]), 2)
        self.assertIn("rank 0 reported twice", rec["problems"][0])
        self.assertIn("message 3", rec["problems"][1])

    def test_sigterm_ends_the_wait_with_what_arrived_not_the_process(self):
        import signal
        X.send(self.store, self.prefix, message(0))
        clock = Clock()
        before = signal.getsignal(signal.SIGTERM)

        def term(t):
            if abs(t - 1.0) < 1e-9:
                os.kill(os.getpid(), signal.SIGTERM)  # torchrun stopping its workers
        clock.on_sleep = term
        rec = self.collect(2, 60, clock)
        self.assertEqual(rec["ended"], "signal %d" % signal.SIGTERM)
        self.assertEqual(rec["ranks"], [0])
        self.assertEqual(rec["missing"], [1])
        self.assertLess(clock.t, 2)
        self.assertIs(signal.getsignal(signal.SIGTERM), before)
        self.assertTrue(os.path.exists(os.path.join(self.dir, X.COLLECTED_NAME)))

    def test_other_runs_keys_are_not_read(self):
        other = X.key_prefix({"TORCHELASTIC_RUN_ID": "j1", "TORCHELASTIC_RESTART_COUNT": "1"})
        X.send(self.store, other, message(1))
        X.send(self.store, self.prefix, message(0))
        rec = self.collect(2, 1, Clock())
        self.assertEqual(rec["ranks"], [0])
        self.assertEqual(rec["missing"], [1])


class ViewTest(unittest.TestCase):
    def test_view_holds_this_rank_only(self):
        d = tempfile.mkdtemp()
        try:
            for n in ("manifest.json", "evidence-rank1.json", "env-rank1.json", "pyprofile-rank1.json",
                      "trace-rank1.pt.trace.json.gz", "trace-rank1.w2.pt.trace.json.gz",
                      "evidence-rank10.json", "trace-rank10.pt.trace.json.gz", "trace-rank0.pt.trace.json.gz", "report.txt"):
                open(os.path.join(d, n), "w").close()
            view = os.path.join(d, "view")
            X.rank_view(d, "rank1", view)
            self.assertEqual(sorted(os.listdir(view)), ["env-rank1.json", "evidence-rank1.json", "manifest.json",
                                                        "pyprofile-rank1.json", "trace-rank1.pt.trace.json.gz",
                                                        "trace-rank1.w2.pt.trace.json.gz"])
        finally:
            shutil.rmtree(d)


class ExchangeTest(unittest.TestCase):
    def test_no_agent_store_is_an_error_file_not_an_exception(self):
        d = tempfile.mkdtemp()
        try:
            agent = types.SimpleNamespace(run_dir=d, torch=None, tag="rank2", exit={})
            X.exchange(agent, {"exe": "/nonexistent", "wait_s": 1}, atomic_write_json,
                       environ={"RANK": "2", "TORCHELASTIC_USE_AGENT_STORE": "False"})
            with open(os.path.join(d, X.EXCHANGE_DIR, X.error_name(2))) as f:
                self.assertIn("TORCHELASTIC_USE_AGENT_STORE=False", f.read())
        finally:
            shutil.rmtree(d)

    def test_job_key(self):
        k = X.job_key({"MASTER_ADDR": "::1", "MASTER_PORT": "29500", "WORLD_SIZE": "8", "GROUP_WORLD_SIZE": "2",
                       "TORCHELASTIC_RUN_ID": "r"})
        self.assertEqual(k, {"run_id": "r", "master": "[::1]:29500", "world_size": 8, "nodes": 2})


try:
    import torch.distributed as dist
    HAVE_STORE = dist.is_available()
except Exception:
    HAVE_STORE = False


@unittest.skipUnless(HAVE_STORE, "no torch.distributed: the TCPStore round trip is not run")
class TCPStoreTest(unittest.TestCase):
    def test_messages_travel_through_a_real_store(self):
        from datetime import timedelta
        master = dist.TCPStore("127.0.0.1", 0, is_master=True, timeout=timedelta(seconds=10), wait_for_workers=False)
        env = {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(master.port)}
        torch_ns = types.SimpleNamespace(distributed=dist)
        prefix = X.key_prefix({})
        for r in (1, 0):
            X.send(X._store(torch_ns, env), prefix, message(r))
        d = tempfile.mkdtemp()
        try:
            rec = X.collect(X._store(torch_ns, env), prefix, 2, d, 5, atomic_write_json)
            self.assertEqual(rec["ranks"], [0, 1])
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()
