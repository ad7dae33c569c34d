"""Unit tests of _bottleneck_stepstats (standard library only; the torch
parts run only where torch imports)."""
import gc
import mmap
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_stepstats as S  # noqa: E402


def _internal(fn):
    return fn == S.__file__ or fn.startswith(os.path.dirname(os.__file__))


class GCTest(unittest.TestCase):
    def setUp(self):
        self.st = S.StepStats(_internal)

    def tearDown(self):
        self.st.stop()

    def test_explicit_collect_is_timed_and_sited_per_step(self):
        junk = [[i] for i in range(100_000)]  # enough live objects for a >0.2 ms collection
        self.st.on_step(1, False)  # the loop runs: sites are recorded from here
        gc.collect()  # the line below is the site
        line = sys._getframe().f_lineno - 1
        self.st.on_step(2, True)
        row = self.st.rows[-1]
        self.assertEqual(row[0], 2)
        self.assertTrue(row[5])
        self.assertGreater(row[3], 0)
        self.assertGreaterEqual(row[4], 1)
        ev = self.st.evidence()
        site = ev["gc"]["sites"][0]
        self.assertEqual((site["file"], site["line"], site["explicit"]), (__file__, line, True))
        self.assertIn("2", ev["gc"]["generations"])
        self.assertEqual(len(junk), 100_000)

    def test_collections_in_the_agents_work_are_not_the_steps(self):
        junk = [[i] for i in range(100_000)]
        self.st.on_step(1, False)
        self.st.agent_busy = lambda: True  # the profiler starting, say
        gc.collect()
        self.st.on_step(2, False)
        self.assertEqual(self.st.rows[-1][3:5], (0.0, 0))
        self.assertGreater(self.st.gc_total_s, 0)  # the process's total keeps it
        self.assertEqual(len(junk), 100_000)

    def test_startup_collections_have_no_site_and_stop_detaches(self):
        gc.collect()
        self.assertEqual(self.st.evidence()["gc"]["sites"], [])
        self.st.stop()
        before = self.st.gc_total_s
        gc.collect()
        self.assertEqual(self.st.gc_total_s, before)

    def test_rows_leave_the_collectors_care(self):
        # thousands of rows the collector walked at every collection of the
        # older generations brought a full collection forward
        self.st.on_step(1, False)
        gc.collect()
        self.assertFalse(gc.is_tracked(self.st.rows[-1]), self.st.rows[-1])

    def test_rows_are_thinned_past_the_cap(self):
        old = S._MAX_ROWS
        S._MAX_ROWS = 8
        try:
            for i in range(1, 40):
                self.st.on_step(i, False)
        finally:
            S._MAX_ROWS = old
        self.assertLessEqual(len(self.st.rows), 8)
        self.assertGreater(self.st.stride, 1)
        self.assertTrue(all(r[0] % self.st.stride == 0 for r in self.st.rows), self.st.rows)

    @unittest.skipUnless(sys.platform.startswith("linux"), "RSS from /proc")
    def test_rss_is_read(self):
        self.st.on_step(1, False)
        self.assertGreater(self.st.rows[-1][1], 1 << 20)

    @unittest.skipUnless(sys.platform.startswith("linux"), "RSS from /proc")
    def test_short_steps_read_memory_now_and_then(self):
        # a CUDA reading costs a quarter of a short GPU step: after the
        # first steps, memory is read at most every _READ_EVERY_S outside
        # the window, at every step of it (an hour here, so that a loaded
        # machine's pause between two calls cannot pass for a long step)
        first, every = S._MEMORY_FIRST, S._READ_EVERY_S
        S._READ_EVERY_S = 3600
        try:
            for i in range(1, first + 4):
                self.st.on_step(i, False, False)
            read = [r[0] for r in self.st.rows if r[1] is not None]
            self.assertEqual(read, list(range(1, first + 1)))  # the rows after: none
            self.assertIsNotNone(self.st.memory[0])  # the live view's: the latest read
            self.st.on_step(first + 4, True, True)
            self.assertIsNotNone(self.st.rows[-1][1])  # exact: read however short
            self.st.on_step(first + 5, False, False)
            self.assertIsNone(self.st.rows[-1][1])
            S._READ_EVERY_S = 0.01
            _spin(0.012)
            self.st.on_step(first + 6, False, False)
            self.assertIsNotNone(self.st.rows[-1][1])
        finally:
            S._READ_EVERY_S = every


class ThreadCallsTest(unittest.TestCase):
    def test_set_num_threads_is_recorded_and_passed_through(self):
        import types
        seen = []
        fake = types.SimpleNamespace(set_num_threads=lambda n: seen.append(n) or "ret",
                                     set_num_interop_threads=lambda n: seen.append(("interop", n)))
        st = S.StepStats(_internal)
        try:
            st.on_torch(fake)
            st.on_torch(fake)  # idempotent: wrapped once
            self.assertEqual(fake.set_num_threads(3), "ret"); line = sys._getframe().f_lineno  # noqa: E702
            fake.set_num_interop_threads(1)
        finally:
            st.stop()
        self.assertEqual(seen, [3, ("interop", 1)])
        self.assertEqual(st.thread_calls[0], {"call": "set_num_threads", "value": 3, "file": __file__, "line": line,
                                              "func": st.thread_calls[0]["func"]})
        self.assertEqual(len(st.thread_calls), 2)

    def test_settings_are_recorded_at_the_programs_line(self):
        import types
        seen = []
        fake = types.SimpleNamespace(set_default_dtype=lambda d: seen.append(d),
                                     set_anomaly_enabled=lambda on, check_nan=True: seen.append((on, check_nan)))
        st = S.StepStats(lambda f: f.endswith("anomaly_mode.py") or _internal(f))
        try:
            st.on_torch(fake)
            fake.set_default_dtype("torch.float64"); line = sys._getframe().f_lineno  # noqa: E702
            # torch.autograd.set_detect_anomaly calls it from torch's file:
            # the line is the program's
            code = compile("fake.set_anomaly_enabled(True, check_nan=False)", "/x/torch/autograd/anomaly_mode.py", "exec")
            exec(code, {"fake": fake}); line2 = sys._getframe().f_lineno  # noqa: E702
        finally:
            st.stop()
        self.assertEqual(seen, ["torch.float64", (True, False)])
        self.assertEqual([(c["call"], c["arg"], c["line"]) for c in st.setting_calls],
                         [("set_default_dtype", "torch.float64", line), ("set_anomaly_enabled", "True", line2)])
        self.assertEqual(st.thread_calls, [])


class WriterLineTest(unittest.TestCase):
    def test_finds_the_line_that_adds_to_a_variable(self):
        def loop():
            kept = []
            total = 0
            for i in range(3):
                kept.append(i)  # appends
                total += i  # accumulates
            return sys._getframe()
        f = loop()
        first = loop.__code__.co_firstlineno
        self.assertEqual(S._writer_line(f, "kept", "list")[1], first + 4)
        self.assertEqual(S._writer_line(f, "total", "autograd graph")[1], first + 5)
        self.assertEqual(S._writer_line(f, "kept", "list")[0], __file__)


class ProbeTest(unittest.TestCase):
    def test_probe_keeps_no_local_alive(self):
        import weakref

        class Big:
            pass
        st = S.StepStats(_internal)
        try:
            for step in range(1, 20):
                obj = Big()
                if step == S._PROBE_STEPS[1]:
                    ref = weakref.ref(obj)
                st.on_step(step, False)
            del obj
            self.assertIsNone(ref(), "the probe kept the step's local alive")
        finally:
            st.stop()

    def test_growing_lists_of_numbers_are_not_memory(self):
        st = S.StepStats(_internal)
        try:
            kept = []
            for step in range(1, 20):
                kept.append(float(step))
                st.on_step(step, False)
            self.assertEqual(st.growth, [])
        finally:
            st.stop()

    def test_growing_tensor_list_is_named(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch")
        st = S.StepStats(_internal)
        try:
            w = torch.ones(4, requires_grad=True)
            kept = []
            for step in range(1, 20):
                kept.append(w * step); line = sys._getframe().f_lineno  # noqa: E702 (holds a graph)
                st.on_step(step, False)
            g = [x for x in st.growth if x["name"] == "kept"]
            self.assertEqual(len(g), 1, st.growth)
            self.assertEqual(g[0]["holds"], "tensor with autograd graph")
            self.assertEqual(g[0]["per_step"], 1)
            self.assertEqual(g[0]["line"], line)
        finally:
            st.stop()

    def test_kept_graph_is_named_and_a_varying_one_is_not(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch")
        st = S.StepStats(_internal)
        try:
            w = torch.ones(4, requires_grad=True)
            total = 0
            for step in range(1, 20):
                # a loss whose graph varies with the data (an MoE's routing):
                # 8 to 10 experts' worth of nodes, more at the second probe
                loss = w.sum()
                for _ in range(8 + (step >= 12) + (step % 3 == 0)):
                    loss = loss + (w * step).sum()
                total = total + loss  # kept across steps
                st.on_step(step, False)
            names = [x["name"] for x in st.growth]
            self.assertEqual(names, ["total"], st.growth)
        finally:
            st.stop()


if __name__ == "__main__":
    unittest.main()


def _spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@unittest.skipUnless(os.path.isdir("/proc/self/task") and hasattr(os, "sched_setaffinity"), "Linux schedstat")
class SchedMeterTest(unittest.TestCase):
    def test_window_and_run_spans(self):
        m = S.SchedMeter()
        m.on_step(False)  # first boundary: the run starts here
        _spin(0.05)
        m.on_step(True)  # a recorded step of 50 ms on the CPU
        time.sleep(0.1)
        m.on_step(False)  # an unrecorded step, asleep
        ev = m.evidence()
        m.stop()
        win, run = ev["window"], ev["run"]
        self.assertGreater(win["wall_s"], 0.045)
        self.assertLess(win["wall_s"], run["wall_s"])
        self.assertGreater(run["wall_s"], 0.14)
        for span in (win, run):
            self.assertLessEqual(span["cpu_s"] + span["wait_s"], span["wall_s"] + 0.01)
            self.assertGreaterEqual(span["wait_s"], 0)
        self.assertIn("load_average", run)

    def test_first_touched_pages_are_faults_in_the_kernel(self):
        # a recorded step that maps 256 MiB afresh and writes every page:
        # 65,536 minor faults, their zeroing the process's system time (tens
        # of ms, over os.times()'s 10 ms ticks)
        def touch():
            buf = mmap.mmap(-1, 256 << 20)
            for off in range(0, 256 << 20, 4096):
                buf[off] = 1
            buf.close()
        m = S.SchedMeter()
        m.on_step(False)
        touch()
        m.on_step(True)
        touch()
        m.on_step(False)  # a step outside the window: "steps"
        touch()
        m.on_step(False, warming=True)  # the profiler's warm-up: in no span but the run's
        touch()
        m.dirty = True  # a trace's export since the last reading
        m.on_step(False)
        ev = m.evidence()
        m.stop()
        for span in (ev["window"], ev["steps"]):
            self.assertGreaterEqual(span["minor_faults"], 65536 * 0.9, span)
            self.assertLess(span["minor_faults"], 65536 * 1.5, span)
            self.assertGreater(span["process_system_s"], 0, span)
            self.assertLessEqual(span["process_system_s"], span["process_cpu_s"], span)
        self.assertGreaterEqual(ev["run"]["minor_faults"], 4 * 65536 * 0.9)

    def test_a_shared_cpu_is_waited_for(self):
        # pin this process and a spinning child to one CPU: the step thread
        # is runnable about half the time it is not running
        cpu = min(os.sched_getaffinity(0))
        saved = os.sched_getaffinity(0)
        pid = os.fork()
        if pid == 0:
            try:
                os.sched_setaffinity(0, {cpu})
                _spin(1.5)
            finally:
                os._exit(0)
        try:
            os.sched_setaffinity(0, {cpu})
            time.sleep(0.05)  # the child is spinning
            m = S.SchedMeter()
            m.on_step(False)
            _spin(0.4)
            step_wait = m.on_step(True)
            ev = m.evidence()
            m.stop()
        finally:
            os.sched_setaffinity(0, saved)
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        win = ev["window"]
        self.assertGreater(win["wait_s"] / win["wall_s"], 0.2, win)
        self.assertEqual(step_wait, win["wait_s"])

    def test_short_steps_share_a_reading(self):
        # the schedstat file costs tens of us read after a step: steps
        # under _READ_EVERY_S share one reading, the recorded steps and
        # their warm-up excepted
        m = S.SchedMeter()
        self.assertIsNone(m.on_step(False, False))  # the first boundary is read
        for _ in range(3):
            self.assertIsNone(m.on_step(False, False))  # short steps: not read
        _spin(S._READ_EVERY_S * 1.5)
        w = m.on_step(False, False)
        self.assertEqual(m.covered, 4)
        self.assertIsNotNone(w)
        self.assertGreaterEqual(w, 0)
        self.assertIsNotNone(m.on_step(True, True))  # exact: read however short
        self.assertEqual(m.covered, 1)
        m.stop()
        # a recorded step that shares its reading with an unrecorded one
        # (no warm-up) adds its share of the span to the window's
        m = S.SchedMeter()
        m.on_step(False, False)
        m.on_step(False, False)  # not read
        _spin(S._READ_EVERY_S * 2)
        m.on_step(True, True)
        self.assertEqual(m.covered, 2)
        ev = m.evidence()
        m.stop()
        self.assertGreater(ev["window"]["wall_s"], 0)
        self.assertLess(ev["window"]["wall_s"], 0.75 * ev["run"]["wall_s"], ev)

    def test_each_step_returns_its_wait(self):
        m = S.SchedMeter()
        self.assertIsNone(m.on_step(False))  # the first boundary starts the run
        _spin(0.02)
        w1 = m.on_step(False)
        _spin(0.02)
        w2 = m.on_step(True)
        ev = m.evidence()
        m.stop()
        self.assertIsNotNone(w1)
        self.assertGreaterEqual(w1, 0)
        self.assertAlmostEqual(w2, ev["window"]["wait_s"], places=6)
        self.assertIsNone(m.on_step(False))  # stopped

    def test_a_forked_child_stops_reading(self):
        m = S.SchedMeter()
        m.on_step(False)
        m.stop()
        m.on_step(True)
        self.assertIsNone(m.window)
