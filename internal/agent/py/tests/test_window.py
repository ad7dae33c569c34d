"""Tests of the profiler window's schedule (_bottleneck_window)."""
import os
import types
import subprocess
import sys
import unittest

AGENT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, AGENT_DIR)

import _bottleneck_window as W  # noqa: E402
import _bottleneck_evidence as E  # noqa: E402


class Action(object):
    NONE, WARMUP, RECORD, RECORD_AND_SAVE = "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE"


def window(step_s, **pcfg):
    """A Window with the given step time before the window and settings."""
    w = W.Window()
    w.pcfg = dict(pcfg)
    w.active = None
    w.step_times = [[i + 1, 0.0, step_s, False] for i in range(7)]
    return w


def recorded(fn, steps=2000):
    return [s for s in range(steps) if fn(s) in (Action.RECORD, Action.RECORD_AND_SAVE)]


class ScheduleTest(unittest.TestCase):
    def test_like_torch_schedule_when_steps_are_long(self):
        # 50 ms steps: five take 250 ms, over the 200 ms minimum
        fn = window(0.05, skip_first=5, warmup=2, active=5, min_window_s=0.2)._schedule(Action)
        got = [fn(s) for s in range(15)]
        want = ["NONE"] * 5 + ["WARMUP"] * 2 + ["RECORD"] * 4 + ["RECORD_AND_SAVE"] + ["NONE"] * 3
        self.assertEqual(got, want)
        try:
            import torch.profiler as tp
        except ImportError:
            return
        ref = tp.schedule(skip_first=3, wait=1, warmup=1, active=2, repeat=2)
        fn = window(1.0, skip_first=3, wait=1, warmup=1, active=2, repeat=2, min_window_s=0.2)._schedule(tp.ProfilerAction)
        self.assertEqual([fn(s) for s in range(20)], [ref(s) for s in range(20)])

    def test_short_steps_lengthen_the_window(self):
        w = window(0.001, skip_first=5, warmup=2, active=5, min_window_s=0.2)
        fn = w._schedule(Action)
        self.assertEqual(recorded(fn), list(range(7, 207)))
        self.assertEqual(w.active, 200)
        self.assertEqual(fn(206), Action.RECORD_AND_SAVE)

    def test_at_most_max_window_steps(self):
        w = window(1e-5, skip_first=5, warmup=2, active=5, min_window_s=0.2)
        self.assertEqual(len(recorded(w._schedule(Action))), W.MAX_WINDOW_STEPS)

    def test_profiler_start_is_not_the_step_time(self):
        # the warm-up steps carry the profiler's start: the steps between
        # the first and them set the length
        w = window(0.001, skip_first=5, warmup=2, active=5, min_window_s=0.2)
        w.step_times[-2][2] = w.step_times[-1][2] = 0.3
        self.assertEqual(len(recorded(w._schedule(Action))), 200)

    def test_no_minimum(self):
        for pcfg in (dict(active=5, min_window_s=0), dict(active=5)):
            w = window(0.001, skip_first=5, warmup=2, **pcfg)
            self.assertEqual(recorded(w._schedule(Action)), list(range(7, 12)), pcfg)


class EarlyStartTest(unittest.TestCase):
    @staticmethod
    def actions(durations, torch=None, **pcfg):
        """The schedule's action at each step, the steps taking durations."""
        w = W.Window()
        w.torch = torch
        w.pcfg = dict(pcfg)
        w._init_window()
        fn, got = w._schedule(Action), []
        for i, d in enumerate(durations):
            got.append(fn(i))
            w.step_times.append((i + 1, 0.0, d, False))
        return w, got

    def test_long_steps_start_the_window_at_once(self):
        # five 28 s steps (LBFGS, 20 closures each) never reached step 8
        w, got = self.actions([30.0, 28.0, 28.3, 27.9, 28.1, 28.0, 28.2, 28.0, 28.1, 28.0],
                              skip_first=5, warmup=2, active=5, early_start_s=2.0)
        # (durations: the timed steps, from the program's second)
        self.assertEqual(got, ["NONE"] * 2 + ["RECORD"] * 4 + ["RECORD_AND_SAVE"] + ["NONE"] * 3)
        self.assertEqual(w.early_start, {"step": 2, "step_s": [30.0, 28.0]})
        self.assertEqual((w.pcfg["skip_first"], w.pcfg["warmup"]), (2, 0))

    def test_long_steps_on_cuda_keep_a_warm_up_step(self):
        cuda = types.SimpleNamespace(is_initialized=lambda: True)
        w, got = self.actions([30.0, 28.0, 28.3, 27.9, 28.1, 28.0, 28.2, 28.0, 28.1, 28.0],
                              torch=types.SimpleNamespace(cuda=cuda),
                              skip_first=5, warmup=2, active=5, early_start_s=2.0)
        self.assertEqual(got, ["NONE"] * 2 + ["WARMUP"] + ["RECORD"] * 4 + ["RECORD_AND_SAVE", "NONE", "NONE"])
        self.assertEqual((w.pcfg["skip_first"], w.pcfg["warmup"]), (2, 1))

    def test_the_schedule_as_set_otherwise(self):
        default = ["NONE"] * 5 + ["WARMUP"] * 2 + ["RECORD"] * 4 + ["RECORD_AND_SAVE"] + ["NONE"] * 3
        for name, durations, pcfg in (
                # steps under early_start_s
                ("short", [0.5] * 15, dict(early_start_s=2.0)),
                # a long compile in the second step, then short steps
                ("compile", [40.0, 25.0, 0.5] + [0.5] * 12, dict(early_start_s=2.0)),
                # long steps still growing 1.6x a step at skip_first
                ("ramping", [9.0, 2.5, 4.0, 6.5, 10.5, 17.0] + [28.0] * 9, dict(early_start_s=2.0)),
                # a long step every other step
                ("alternating", [9.0] + [3.0, 0.5] * 7, dict(early_start_s=2.0)),
                # --skip-first or --warmup given: run sets no early_start_s
                ("as set", [28.0] * 15, {})):
            w, got = self.actions(durations, skip_first=5, warmup=2, active=5, **pcfg)
            self.assertEqual(got, default, name)
            self.assertIsNone(w.early_start, name)


class SlowStepTest(unittest.TestCase):
    def test_over_twice_the_recent_median(self):
        w = W.Window()
        w.pcfg = {}
        w._init_window()
        got = []
        for i, d in enumerate([0.5] + [0.01] * 40 + [0.03, 0.015] + [0.01] * 10 + [0.05] * 40):
            w.steps = i + 1
            w._recent_steps[w.steps % W._RECENT] = d  # as _step keeps them
            got.append(w._slow_step(d))
            w.step_times.append((w.steps, 0.0, d, False, None, 0.0, None, None))
        # the first step (start-up) has no median yet; 30 ms against 10 ms
        # is slow, 15 ms is not; a new pace of 50 ms becomes the median
        # once it fills half the last 31 when the median is next computed
        # (16 steps after the last: steps 8, 24, 40, 56, 72)
        self.assertEqual([i + 1 for i, g in enumerate(got) if g], [42] + list(range(54, 72)))


class StepStatsTest(unittest.TestCase):
    def test_kept_and_past_steps(self):
        # the steps kept one by one and those after the list was full
        # (their own running figures) make one count, sum and extremes
        rows = [(1, 0.0, 0.002, False, None, 0.0, None, None), (2, 0.002, 0.004, False, None, 0.0, None, None)]
        past = {"count": 2, "sum_s": 0.006, "min_s": 0.001, "max_s": 0.005}
        got = E._step_stats(rows, past)
        self.assertEqual((got["count"], got["min_s"], got["max_s"]), (4, 0.001, 0.005))
        self.assertAlmostEqual(got["sum_s"], 0.012)
        self.assertAlmostEqual(got["mean_s"], 0.003)
        none = E._step_stats([], {"count": 0, "sum_s": 0.0, "min_s": None, "max_s": None})
        self.assertEqual((none["count"], none["min_s"], none["max_s"], none["mean_s"]), (0, None, None, None))


if __name__ == "__main__":
    unittest.main()


class FakeCuda(object):
    def __init__(self, initialized):
        self.initialized, self.syncs = initialized, 0

    def is_initialized(self):
        return self.initialized

    def synchronize(self):
        self.syncs += 1


class FakeProf(object):
    def __init__(self, sched):
        self.sched, self.step_num = sched, 0
        self.current_action = sched(0)

    def step(self):
        self.step_num += 1
        self.current_action = self.sched(self.step_num)


class DrainTest(unittest.TestCase):
    def run_steps(self, initialized):
        w = window(0.05, skip_first=5, warmup=2, active=5, min_window_s=0.2)
        w._sched = w._schedule(Action)
        w.torch = type("T", (), {"cuda": FakeCuda(initialized)})()
        prof, synced_before = FakeProf(w._sched), []
        for _ in range(15):
            n = w.torch.cuda.syncs
            w._drain_device(prof)
            if w.torch.cuda.syncs > n:
                synced_before.append(prof.step_num + 1)
            prof.step()
        return synced_before

    def test_device_drained_once_before_the_first_recorded_step(self):
        # steps 5-6 warm up, 7-11 record: one sync, as step 7 begins
        self.assertEqual(self.run_steps(True), [7])

    def test_no_cuda_no_sync(self):
        self.assertEqual(self.run_steps(False), [])


class Clock(object):
    """time for the window module: perf_counter reads a clock the test moves."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now

    def sleep(self, s):
        pass


class QueuedCuda(FakeCuda):
    """A device `behind_s` behind the host whenever it is synchronized."""

    def __init__(self, initialized, clock, behind_s):
        FakeCuda.__init__(self, initialized)
        self.clock, self.behind_s = clock, behind_s

    def synchronize(self):
        FakeCuda.synchronize(self)
        self.clock.now += self.behind_s


class SpreadWaitTest(unittest.TestCase):
    def test_a_shared_reading_is_each_steps_mean(self):
        # steps 2-4 shared the reading at step 4's end (covered 3): the
        # rows kept for steps 2 and 3 get its mean; step 1, before them,
        # and a row already read, keep theirs
        w = W.Window.__new__(W.Window)
        w.steps = 4
        w.step_times = [(1, 0.0, 0.004, False, 0.002, 0.0), (2, 0.004, 0.004, False, None, 0.0), (3, 0.008, 0.004, False, None, 0.0)]
        w._spread_wait(0.001, 3)
        self.assertEqual([t[4] for t in w.step_times], [0.002, 0.001, 0.001])
        w.step_times[1] = w.step_times[1][:4] + (None,) + w.step_times[1][5:]
        w.step_times[2] = w.step_times[2][:4] + (0.003,) + w.step_times[2][5:]
        w._spread_wait(0.001, 3)
        self.assertEqual([t[4] for t in w.step_times], [0.002, None, 0.003])


class DeviceBehindTest(unittest.TestCase):
    """The last step before the window ends when its device work is done."""

    def setUp(self):
        import tempfile
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def run_steps(self, initialized, steps=9, **pcfg):
        import _bottleneck_agent as A
        clock = Clock()
        cuda = QueuedCuda(initialized, clock, 0.04)
        w = A.Agent({"run_dir": self.dir, "python_profiler": "off", "sync_debug": False, "profiler": pcfg}, "script")
        w.torch = type("T", (), {"cuda": cuda})()
        w.finished, w.step_thread = True, W.threading.get_ident()  # finished: no bounds thread
        w._sched = w._schedule(Action)
        w.prof, w.prof_state = FakeProf(w._sched), "waiting"
        synced_at = []
        # the window module the Agent runs (other tests may import the
        # agent's modules anew)
        mod = A.Window._step.__globals__
        orig, mod["time"] = mod["time"], clock
        try:
            w.step_start = clock.now
            for _ in range(steps):
                clock.now += 0.001  # the host's 1 ms step
                n = cuda.syncs
                w._step()
                if cuda.syncs > n:
                    synced_at.append(w.steps)
        finally:
            mod["time"] = orig
        return w, cuda, synced_at

    def test_the_wait_is_the_last_timed_steps(self):
        # skip_first=5: steps 1-5 are timed (the profiler's step_num 0-4),
        # 6-7 warm up, 8 on record; the wait at the end of step 5
        w, cuda, synced_at = self.run_steps(True, skip_first=5, warmup=2, active=5)
        # and the drain before the first recorded step, the agent's, in no step
        self.assertEqual(synced_at, [5, 7])
        self.assertEqual([round(t[2], 6) for t in w.step_times], [0.001] * 4 + [0.041] + [0.001] * 4)
        # the warm-up steps are profiled: marked with the window's, out of
        # the steps try compares
        self.assertEqual([t[3] for t in w.step_times], [False] * 5 + [True] * 4)
        self.assertEqual(w.device_behind, [{"step": 5, "s": 0.04}])
        ev = w.evidence(final=False)
        self.assertEqual((ev["device_behind_s"], ev["device_behind"]), (0.04, [{"step": 5, "s": 0.04}]))

    def test_no_warm_up(self):
        # warmup=0: the timed steps end where recording begins; that
        # step's wait is the one drain
        w, cuda, synced_at = self.run_steps(True, steps=5, skip_first=3, warmup=0, active=5)
        self.assertEqual(synced_at, [3])
        self.assertEqual(w.device_behind, [{"step": 3, "s": 0.04}])
        self.assertEqual(round(w.step_times[2][2], 6), 0.041)

    def test_no_cuda_no_wait(self):
        w, cuda, synced_at = self.run_steps(False, skip_first=5, warmup=2, active=5)
        self.assertEqual((cuda.syncs, synced_at, w.device_behind), (0, [], []))
        self.assertEqual([round(t[2], 6) for t in w.step_times], [0.001] * 9)
        ev = w.evidence(final=False)
        self.assertEqual((ev["device_behind_s"], ev["device_behind"]), (None, []))


class AgentWarningsTest(unittest.TestCase):
    PROFILER = "Warning: Profiler clears events at the end of each cycle.Only events from the current cycle will be reported."

    def test_torch_warnings_the_agent_causes_are_not_printed(self):
        import warnings
        saved = warnings.filters[:]
        shown = set()
        fake = types.SimpleNamespace(profiler=types.SimpleNamespace(profiler=types.SimpleNamespace(_WARNINGS_SHOWN=shown)))
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            with W.agent_warnings(fake):
                shown.add(self.PROFILER)  # torch's once-only record, as _warn_once keeps it
                warnings.warn(self.PROFILER)
                warnings.warn("Synchronization debug mode is a prototype feature and does not yet detect all synchronizing operations")
                warnings.warn("the program's own warning")
            # outside the agent's call, the same warning is the program's
            warnings.warn(self.PROFILER)
        self.assertEqual([str(w.message) for w in got], ["the program's own warning", self.PROFILER])
        self.assertEqual(shown, set())  # the program's own profiler will warn once, as without the tool
        self.assertEqual(warnings.filters, saved)  # nothing left process-wide

    def test_a_programs_once_per_line_warning_stays_once(self):
        # the default action shows a warning once per line: the agent's
        # calls at every step must not make the program's show again
        import warnings
        code = compile("import warnings\ndef warn():\n    warnings.warn('deprecated input', UserWarning)\n", "user.py", "exec")
        user = {"__name__": "user"}
        exec(code, user)
        printed = []
        saved_show, saved_filters = warnings.showwarning, warnings.filters[:]
        warnings.showwarning = lambda message, *a, **k: printed.append(str(message))
        try:
            warnings.resetwarnings()
            warnings.simplefilter("default")
            for _ in range(5):
                user["warn"]()
                with W.agent_warnings():
                    warnings.warn(self.PROFILER)
        finally:
            warnings.showwarning = saved_show
            warnings.filters[:] = saved_filters
            warnings._filters_mutated()
        self.assertEqual(printed, ["deprecated input"])


class HeldStderrTest(unittest.TestCase):
    def test_only_torchs_profiler_lines_are_dropped(self):
        # fd 2 of a child Python: what is written while held comes out at
        # release, in order, without the profiler's own C++ warning
        code = (
            "import os, sys\n"
            "sys.path.insert(0, %r)\n"
            "import _bottleneck_window as W\n"
            "sys.stderr.write('before\\n')\n"
            "h = W.HeldStderr()\n"
            "os.write(2, b'[W1128 04:16:55.997304707 collection.cpp:671] Warning: Optimizer.step#SGD.step (function operator())\\n')\n"
            "sys.stderr.write('during\\n')\n"
            "os.write(2, b'[W1128 04:16:55.997304707 other.cpp:12] Warning: the program\\'s own\\n')\n"
            "h.release()\n"
            "h.release()\n"
            "sys.stderr.write('after\\n')\n" % os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stderr.decode(), "before\nduring\n"
                         "[W1128 04:16:55.997304707 other.cpp:12] Warning: the program's own\nafter\n")

    def test_a_closed_fd_2_is_no_error(self):
        code = ("import os, sys\nsys.path.insert(0, %r)\nimport _bottleneck_window as W\n"
                "os.close(2)\nh = W.HeldStderr()\nos.write(2, b'x')\nh.release()\nprint('released')\n"
                % os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True)
        self.assertEqual((out.returncode, out.stdout.decode()), (0, "released\n"))


class BoundsTest(unittest.TestCase):
    """The window's bounds (MAX_WINDOW_S and the rest)."""

    def bounded(self, median_s, opened_ago, last_step_ago, recorded_s=()):
        w = window(median_s)
        w.window_index, w.step_thread, w._idle_s = 0, None, None
        w._window_median = median_s
        w.window_steps = [{"window": 1, "duration_s": d} for d in recorded_s]
        now = 1000.0
        w._window_opened_at = now - opened_ago
        w.step_start = now - last_step_ago
        return w._time_bound(now)

    def test_silent_while_steps_come(self):
        # steps of 50 ms, the last one 0.3 s ago, window open 20 s
        self.assertIsNone(self.bounded(0.05, 20.0, 0.3, [0.05] * 10))
        # a long step among long steps: 25 s steps, 40 s into one
        self.assertIsNone(self.bounded(25.0, 45.0, 40.0, [25.0]))

    def test_idle_floor(self):
        # 1 ms steps: 10x is 10 ms, the floor 2 s holds
        self.assertIsNone(self.bounded(0.001, 1.9, 1.9))
        by, detail = self.bounded(0.001, 2.1, 2.05)
        self.assertEqual(by, "idle")
        self.assertIn("no step for 2.0 s", detail)

    def test_idle_relative_to_the_recorded_steps(self):
        # 0.5 s steps before, 1 s recorded (the profiler's cost): 10 s
        self.assertIsNone(self.bounded(0.5, 9.5, 9.5, [1.0, 1.0, 1.0]))
        self.assertEqual(self.bounded(0.5, 10.5, 10.5, [1.0, 1.0, 1.0])[0], "idle")

    def test_the_steps_thread_reads_the_polled_limit(self):
        import threading
        w = window(0.001)
        w.window_index, w.step_thread, w._idle_s = 0, threading.get_ident(), 30.0
        w._window_median, w.window_steps = 0.001, []
        w._window_opened_at, w.step_start = 990.0, 990.0
        self.assertIsNone(w._time_bound(1000.0))  # 10 s idle, the polled limit 30 s
        w.step_thread = None  # the poll thread computes it anew: 2 s
        self.assertEqual(w._time_bound(1000.0)[0], "idle")

    def test_wall(self):
        by, _ = self.bounded(25.0, W.MAX_WINDOW_S + 1, 1.0, [25.0, 25.0])
        self.assertEqual(by, "wall")

    def test_not_open(self):
        w = window(0.01)
        w._window_opened_at, w.step_thread, w._idle_s = None, None, None
        self.assertIsNone(w._time_bound(1000.0))

    def test_memory_bound(self):
        MiB = 1 << 20
        # a program's own warm-up (133 MiB in a message-passing program's
        # first recorded steps) is no runaway recording
        self.assertIsNone(W.memory_bound(600 * MiB, 733 * MiB))
        self.assertIsNone(W.memory_bound(600 * MiB, 1600 * MiB))
        name, why = W.memory_bound(689 * MiB, 1800 * MiB)
        self.assertEqual(name, "memory")
        self.assertIn("grew 1111 MiB", why)
        # a large process: half of what it held
        self.assertIsNone(W.memory_bound(8192 * MiB, 11000 * MiB))
        self.assertIsNotNone(W.memory_bound(8192 * MiB, 12400 * MiB))

    def test_memory_bound_counts_from_the_peak_before_the_window(self):
        MiB = 1 << 20
        # a GAT step on 2708 nodes: 1037 MiB between steps, 1086 MiB more
        # within each, freed at its end; the steps before the window
        # reached that peak already
        base = W.window_rss_base(1037 * MiB, 2123 * MiB)
        self.assertEqual(base, 2123 * MiB)
        self.assertIsNone(W.memory_bound(base, 2123 * MiB))
        self.assertIsNotNone(W.memory_bound(1037 * MiB, 2123 * MiB))  # from the resident memory alone: closed
        # a recording that runs away still passes it
        name, why = W.memory_bound(base, 3400 * MiB)
        self.assertIn("over the most it held before the window opened", why)
        self.assertEqual(W.window_rss_base(None, 5 * MiB), 5 * MiB)
        self.assertEqual(W.window_rss_base(7 * MiB, None), 7 * MiB)
        self.assertIsNone(W.window_rss_base(None, None))
        p = W._peak_rss_bytes()
        if p is not None and W._rss_bytes() is not None:
            self.assertGreaterEqual(p, W._rss_bytes() // 2)

    def test_trim_after_a_window_that_grew(self):
        import contextlib
        rss = W._rss_bytes()
        if rss is None or W.trim_heap() is None:
            self.skipTest("no /proc/self/statm or no glibc malloc_trim")
        for grown, trimmed in ((W.TRIM_AFTER_GROWTH + (64 << 20), True), (0, False)):
            w = window(0.01)
            w.notes, w.own_work = [], contextlib.nullcontext
            w._window_rss0 = W._rss_bytes() - grown  # the base as if the window had grown the process so much
            w._trim_after_window()
            self.assertEqual(len(w.notes), 1 if trimmed else 0, w.notes)
            if trimmed:
                self.assertIn("while the profiler window recorded; glibc's heap handed", w.notes[0])
        w = window(0.01)
        w.notes, w._window_rss0 = [], None  # no base: nothing to compare
        w._trim_after_window()
        self.assertEqual(w.notes, [])

    def test_rss(self):
        r = W._rss_bytes()
        if r is not None:
            self.assertGreater(r, 1 << 20)
