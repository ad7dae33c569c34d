"""Unit tests of _bottleneck_sampler, the agent's Python profile
(standard library only, no torch needed)."""
import cProfile
import json
import os
import pstats
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_sampler as S  # noqa: E402


def busy_leaf(stop):
    while not stop.is_set():
        sum(range(100))


class SamplerTest(unittest.TestCase):
    def test_samples_threads_roles_and_window(self):
        s = S.Sampler(0.001)
        stop = threading.Event()
        t = threading.Thread(target=busy_leaf, args=(stop,), name="worker-x")
        t.start()
        try:
            for _ in range(5):
                s.sample_once(skip_ident=None)
            s.set_window(True)
            for _ in range(3):
                s.sample_once()
            s.set_window(False)
        finally:
            stop.set()
            t.join()
        d = s.to_json()
        self.assertEqual(d["format"], "bottleneck.pyprofile")
        self.assertEqual(d["samples"], 8)
        self.assertEqual(d["window_samples"], 3)
        self.assertEqual(len(d["windows"]), 1)
        self.assertLessEqual(d["windows"][0][0], d["windows"][0][1])
        roles = {th["name"]: th["role"] for th in d["threads"]}
        self.assertEqual(roles.get(threading.main_thread().name), "main")
        self.assertEqual(roles.get("worker-x"), "other")
        # every worker stack passes through busy_leaf (root first: thread
        # bootstrap before busy_leaf)
        names = [f["func"].split(".")[-1] for f in d["frames"]]
        worker = [i for i, th in enumerate(d["threads"]) if th["name"] == "worker-x"][0]
        wstacks = [st for st in d["stacks"] if st["thread"] == worker]
        self.assertTrue(wstacks)
        for st in wstacks:
            fnames = [names[i] for i in st["frames"]]
            self.assertIn("busy_leaf", fnames)
            self.assertLess(fnames.index("_bootstrap"), fnames.index("busy_leaf"))
        self.assertEqual(sum(st["count"] for st in d["stacks"] if st["thread"] == worker), 8)
        self.assertEqual(sum(st["window_count"] for st in d["stacks"] if st["thread"] == worker), 3)
        for f in d["frames"]:
            self.assertNotIn(f["file"], S.AGENT_FILES)
        json.dumps(d)

    def test_frames_table_has_one_row_per_frame(self):
        # The frame cache is keyed by the code object's id: equal code
        # objects (the same text compiled twice) share rows, code from
        # another file gets its own, and a freed code object's id, reused
        # by a new one, never names the old one's rows. The loop is one
        # line, so that every sample finds a spinner on the same line (on
        # two lines, a busy CI run sampled spin-0 only on one and spin-2
        # only on the other: no row in common).
        src = "def spin(stop, ready):\n    ready.set()\n    while not stop.is_set(): sum(range(50))\n"

        def spinner(path):
            ns = {}
            exec(compile(src, path, "exec"), ns)
            return ns["spin"]

        def sample_threads(fns, prefix, n=20):
            stop, ready = threading.Event(), [threading.Event() for _ in fns]
            ts = [threading.Thread(target=fn, args=(stop, r), name="%s-%d" % (prefix, i))
                  for i, (fn, r) in enumerate(zip(fns, ready))]
            for t in ts:
                t.start()
            try:
                for r in ready:
                    self.assertTrue(r.wait(60))
                for _ in range(n):
                    s.sample_once()
            finally:
                stop.set()
                for t in ts:
                    t.join()

        s = S.Sampler(0.001)
        sample_threads([spinner("/nonexistent/a.py"), spinner("/nonexistent/b.py"), spinner("/nonexistent/a.py")], "spin")
        import gc
        gc.collect()  # the spinners' code objects are freed: their ids can come back
        for _ in range(3):
            sample_threads([spinner("/nonexistent/c.py")], "later", n=5)
        d = s.to_json()
        rows = [tuple(f[k] for k in sorted(f)) for f in d["frames"]]
        self.assertEqual(len(rows), len(set(rows)), d["frames"])
        spin_files = {}
        for st in d["stacks"]:
            name = d["threads"][st["thread"]]["name"]
            for i in st["frames"]:
                f = d["frames"][i]
                if f["func"] == "spin":
                    spin_files.setdefault(name, set()).add(f["file"])
                    self.assertEqual(f["fline"], 1)
        self.assertEqual(spin_files.get("spin-1"), {"/nonexistent/b.py"})
        self.assertEqual(spin_files.get("spin-0"), {"/nonexistent/a.py"})
        self.assertEqual(spin_files.get("later-0"), {"/nonexistent/c.py"})
        a_rows = {i for i, f in enumerate(d["frames"]) if f["file"] == "/nonexistent/a.py"}
        th = {t["name"]: i for i, t in enumerate(d["threads"])}
        used = lambda name: {i for st in d["stacks"] if st["thread"] == th.get(name) for i in st["frames"]} & a_rows
        self.assertTrue(used("spin-0") and used("spin-2"))
        self.assertTrue(used("spin-0") & used("spin-2"), "equal code objects share their frames' rows")

    def test_sampling_leaves_no_garbage_cycles(self):
        # The walk reads the sampling thread's own stack: a read that kept
        # its iterators in its frame's locals left each sample's frames,
        # iterators and stacks (~100 objects) to the collector.
        import gc
        s = S.Sampler(0.001)
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            for _ in range(20):
                s.sample_once()
            s.thread_stacks()
            gc.collect()
            ours = [o for o in gc.garbage
                    if type(o).__name__ in ("_tee", "frame") and
                    (type(o).__name__ == "_tee" or o.f_code.co_filename in S.AGENT_FILES)]
        finally:
            gc.set_debug(0)
            del gc.garbage[:]
        self.assertEqual(ours, [])

    def test_samples_after_the_windows_last_step_can_leave_it(self):
        s = S.Sampler(0.001)
        s.set_window(True)
        for _ in range(3):
            s.sample_once()
        s.mark_step()
        for _ in range(2):  # after the loop, before the program ends
            s.sample_once()
        s.drop_since_step()
        s.set_window(False)
        d = s.to_json()
        self.assertEqual((d["samples"], d["window_samples"]), (5, 3))
        self.assertEqual(sum(st["window_count"] for st in d["stacks"]), sum(th["window_samples"] for th in d["threads"]))
        main = [i for i, th in enumerate(d["threads"]) if th["role"] == "main"][0]
        self.assertEqual(d["threads"][main]["window_samples"], 3)
        self.assertEqual(sum(st["count"] for st in d["stacks"] if st["thread"] == main), 5)

    def test_slow_and_startup_samples_count_apart(self):
        s = S.Sampler(0.001)
        for slow, n in ((False, 3), (True, 2), (False, 4)):
            for _ in range(n):
                s.sample_once()
            s.end_step(slow)
        s.sample_once()  # after the last step: in no step
        d = s.to_json()
        main = [i for i, th in enumerate(d["threads"]) if th["role"] == "main"][0]
        mine = [st for st in d["stacks"] if st["thread"] == main]
        self.assertEqual(sum(st["count"] for st in mine), 10)
        self.assertEqual(sum(st["slow_count"] for st in mine), 2)
        # the first step's samples, and all before it, are start-up's
        self.assertEqual(sum(st["startup_count"] for st in mine), 3)

    def test_window_samples_by_step(self):
        s = S.Sampler(0.001)
        s.sample_once()
        s.end_step(False)  # before the window: in no window step
        s.set_window(True)
        for step, n in ((8, 2), (9, 3)):
            for _ in range(n):
                s.sample_once()
            s.end_step(False, step)
        s.sample_once()
        s.set_window(False)
        s.end_step(False)  # the window closed in this step: in none
        d = s.to_json()
        main = [i for i, th in enumerate(d["threads"]) if th["role"] == "main"][0]
        by_step = {}
        for st in d["stacks"]:
            if st["thread"] == main:
                for step, n in st.get("window_steps", []):
                    by_step[step] = by_step.get(step, 0) + n
        self.assertEqual(by_step, {8: 2, 9: 3})
        self.assertEqual(sum(st["window_count"] for st in d["stacks"] if st["thread"] == main), 6)

    def test_no_sample_while_a_module_imports(self):
        # reading frames while another thread imports can crash CPython
        # 3.11 (python/cpython#111363): no sample then
        import builtins
        import importlib
        import tempfile
        s = S.Sampler(0.001)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "bn_mod_during_import.py"), "w") as f:
                f.write("import builtins\nbuiltins._bn_during_import()\n")
            builtins._bn_during_import = s.sample_once
            sys.path.insert(0, d)
            try:
                importlib.import_module("bn_mod_during_import")
            finally:
                sys.path.remove(d)
                sys.modules.pop("bn_mod_during_import", None)
                del builtins._bn_during_import
        self.assertFalse(S.importing())
        s.sample_once()
        self.assertEqual((s.paused_samples, s.samples), (1, 1))

    def test_thread_skips_agent_threads_and_runs(self):
        s = S.Sampler(0.002)
        ev = threading.Event()
        t = threading.Thread(target=ev.wait, name="bottleneck-helper")
        t.start()
        s.start_thread()
        time.sleep(0.2)
        s.stop()
        ev.set()
        t.join()
        d = s.to_json()
        self.assertGreater(d["samples"], 10)
        for th in d["threads"]:
            self.assertFalse(th["name"].startswith("bottleneck-"), th)

    def test_program_switch_interval_is_kept(self):
        # one that CPython reads back as 0.000199999... (whole
        # microseconds, truncated): every sample raises the interval and
        # puts it back, and putting back what it read lost a microsecond
        # each time
        sys.setswitchinterval(0.0002)
        try:
            s = S.Sampler(0.002)
            s.start_thread()
            time.sleep(0.1)
            s.stop()
            self.assertGreater(s.samples, 5)
            self.assertAlmostEqual(sys.getswitchinterval(), 0.0002)
        finally:
            sys.setswitchinterval(0.005)

    def test_stacks_are_read_without_giving_the_gil_away(self):
        # a thread counting in Python, another one 200 frames deep, and a
        # switch interval of 1 us: a walk in Python lets the counter move
        # while it reads the frames; the C walk never
        from functools import partial
        from itertools import chain
        from operator import itemgetter
        count, stop, deep_done = [0], threading.Event(), threading.Event()

        def spin():
            while not stop.is_set():
                count[0] += 1

        def deep(n):
            return deep(n - 1) if n else deep_done.wait()

        threads = [threading.Thread(target=spin), threading.Thread(target=partial(deep, 200))]
        for t in threads:
            t.start()
        old = sys.getswitchinterval()
        try:
            time.sleep(0.05)
            sys.setswitchinterval(1e-6)
            moved = 0
            for _ in range(200):
                # the counter, read by C code before and after the walk
                probe = map(itemgetter(0), (count,))
                seen = list(chain(probe, S.stacks_iter(), map(itemgetter(0), (count,))))
                moved += seen[0] != seen[-1]
                stacks = dict(seen[1:-1])
        finally:
            sys.setswitchinterval(old)
            stop.set()
            deep_done.set()
            for t in threads:
                t.join()
        self.assertEqual(moved, 0)
        depths = sorted(len(st) for st in stacks.values())
        self.assertGreaterEqual(depths[-1], 200)
        names = [c.co_name for c, _, _ in stacks[threads[1].ident]]
        self.assertEqual(names[0], "wait")  # innermost first: Event.wait's Condition.wait
        self.assertEqual(names.count("deep"), 201)

    def test_no_collection_runs_python_inside_the_walk(self):
        # a collection started by the walk's own allocations runs the gc
        # callbacks (the agent's GC timer among them) and finalizers:
        # Python code, at whose switch points another thread could pop
        # the frames the walk reads (CI: SIGSEGV in snapshot, twice). With
        # a threshold of 1 every allocation would collect, and a callback
        # here gives the GIL away: a thread counting in Python must not
        # move during the read, and the program's setting is kept.
        import gc
        from itertools import chain
        from operator import itemgetter
        count, stop = [0], threading.Event()

        def spin():
            while not stop.is_set():
                count[0] += 1

        def callback(phase, info):
            time.sleep(0)

        t = threading.Thread(target=spin)
        t.start()
        old, was = gc.get_threshold(), gc.isenabled()
        gc.callbacks.append(callback)
        moved = 0
        try:
            time.sleep(0.05)
            gc.set_threshold(1)
            for enabled in (True, False):
                (gc.enable if enabled else gc.disable)()
                for _ in range(50):
                    seen = S.read_atomically(map(itemgetter(0), (count,)), S.stacks_iter(), map(itemgetter(0), (count,)))
                    moved += seen[0] != seen[-1]
                self.assertEqual(gc.isenabled(), enabled)
            # the same read with the collector left on: the counter moves
            # (the premise: the callback does give the GIL away)
            gc.enable()
            moved_on = sum(1 for _ in range(50)
                           if len(set(itemgetter(0, -1)(list(chain(map(itemgetter(0), (count,)), S.stacks_iter(),
                                                                     map(itemgetter(0), (count,))))))) > 1)
        finally:
            gc.callbacks.remove(callback)
            gc.set_threshold(*old)
            (gc.enable if was else gc.disable)()
            stop.set()
            t.join()
        self.assertGreater(moved_on, 0)
        self.assertEqual(moved, 0)

    def test_thread_stacks_of_a_sampler(self):
        # what a DataLoader worker reads of its main thread, on the
        # sampler it runs (whose recorded stacks are another attribute)
        s = S.Sampler(0.01)
        s.sample_once()
        stack = s.thread_stacks().get(threading.get_ident(), ())
        self.assertIn("test_thread_stacks_of_a_sampler", [frame[0].co_name for frame in stack])

    def test_busy_threads_are_read_with_the_stacks(self):
        # a thread that marks itself busy around the agent's work, with a
        # switch interval of 1 us: whenever a snapshot shows it in that
        # work, the busy set read with it has it (read apart, a thread
        # could enter the work between the two reads)
        busy, stop = {}, threading.Event()

        def agents_work():
            return sum(range(50))

        def programs_work():
            return sum(range(50))

        def loop():
            me = threading.get_ident()
            while not stop.is_set():
                busy[me] = 1
                agents_work()
                del busy[me]
                programs_work()

        t = threading.Thread(target=loop)
        t.start()
        old = sys.getswitchinterval()
        seen = bad = 0
        try:
            sys.setswitchinterval(1e-6)
            for _ in range(20000):
                ids, stacks = S.snapshot(busy)
                frames = dict(stacks).get(t.ident)
                if frames and frames[0][0].co_name == "agents_work":
                    seen += 1
                    bad += t.ident not in ids
                    if seen >= 50:
                        break
        finally:
            sys.setswitchinterval(old)
            stop.set()
            t.join()
        self.assertEqual(bad, 0)
        if seen == 0:
            # the premise: on a busy machine the thread may never be
            # caught inside the work (a CI run under load)
            self.skipTest("premise not met: no snapshot of 20000 caught the thread in the agent's work")

    def test_late_sample_is_followed_by_a_full_period(self):
        # A sample that overran its period (waiting for the GIL or a CPU
        # on a loaded machine) must not be followed at once by the next:
        # without a real wait in between the sampler keeps the GIL, the
        # program does not run, and the second sample shows its line as
        # blocked.
        period = 0.002
        s = S.Sampler(period)
        calls = []  # (start, end) of each sample

        def slow_sample(skip_ident=None, weight=1):
            t = time.perf_counter()
            while time.perf_counter() < t + 3 * period:
                pass
            calls.append((t, time.perf_counter()))

        s.sample_once = slow_sample
        s.start_thread()
        time.sleep(0.1)
        s.stop()
        self.assertGreater(len(calls), 3)
        gaps = [b[0] - a[1] for a, b in zip(calls, calls[1:])]
        self.assertGreaterEqual(min(gaps), 0.9 * period, gaps)

    def test_costly_samples_are_spaced_and_weighted(self):
        # With a budget, samples costing more than it allows of their
        # period are taken every few intervals, each counting for them
        period = 0.002
        s = S.Sampler(period, budget=0.25)  # 0.5 ms a sample at most
        s.FULL_SAMPLES = 3
        calls = []  # (start, end, weight)

        def slow_sample(skip_ident=None, weight=1):
            t = time.perf_counter()
            while time.perf_counter() < t + 0.003:
                pass
            calls.append((t, time.perf_counter(), weight))

        s.sample_once = slow_sample
        s.start_thread()
        time.sleep(0.2)
        s.stop()
        if len(calls) < 7:
            self.skipTest("premise not met: %d samples in 0.2 s (a loaded machine)" % len(calls))
        self.assertEqual(s.weight, S.Sampler.MAX_WEIGHT)  # 3 ms wants 6 intervals
        self.assertEqual([c[2] for c in calls[:3]], [1, 1, 1])  # the first FULL_SAMPLES
        later = calls[4:]
        self.assertTrue(later)
        self.assertEqual({c[2] for c in later}, {S.Sampler.MAX_WEIGHT})
        # a sample every weight periods on average: one that starts late
        # (a loaded machine) is followed by one on schedule, sooner
        mean = (later[-1][0] - later[0][0]) / (len(later) - 1)
        self.assertGreaterEqual(mean, 0.9 * period * S.Sampler.MAX_WEIGHT, [b[0] - a[0] for a, b in zip(later, later[1:])])

    def test_budget_sets_the_weight(self):
        s = S.Sampler(0.01, budget=0.01)  # 100 us a sample
        s.FULL_SAMPLES = 1
        s._within_budget(0.00005)
        self.assertEqual(s.weight, 1)
        s = S.Sampler(0.01, budget=0.01)
        s.FULL_SAMPLES = 2
        s._within_budget(0.00025)
        self.assertEqual(s.weight, 1)  # a short run keeps every sample
        s._within_budget(0.00025)
        self.assertEqual(s.weight, 3)
        for _ in range(100):  # cheaper samples bring it back
            s._within_budget(0.00002)
        self.assertEqual(s.weight, 1)

    def test_a_weighted_sample_counts_its_intervals(self):
        s = S.Sampler(0.001)
        s.sample_once(weight=3)
        s.end_step(True)
        s.set_window(True)
        s.sample_once(weight=3)  # the window's samples count once
        s.set_window(False)
        d = s.to_json()
        self.assertEqual(d["samples"], 4)
        self.assertEqual(d["window_samples"], 1)
        main = [i for i, th in enumerate(d["threads"]) if th["role"] == "main"][0]
        mine = [st for st in d["stacks"] if st["thread"] == main]
        self.assertEqual(sum(st["count"] for st in mine), 4)
        self.assertEqual(sum(st["window_count"] for st in mine), 1)
        self.assertEqual(sum(st["slow_count"] for st in mine), 3)
        self.assertEqual(d["threads"][main]["samples"], 4)

    def test_own_work_is_not_sampled(self):
        # the agent's work in a program thread (trace export, gzip) must not
        # count as the program's time; other threads are still sampled
        s = S.Sampler(0.001)
        stop = threading.Event()
        t = threading.Thread(target=busy_leaf, args=(stop,), name="worker-y")
        t.start()
        try:
            s.sample_once()
            s.enter_own_work()
            s.enter_own_work()  # nested
            s.leave_own_work()
            for _ in range(4):
                s.sample_once()
            s.leave_own_work()
            s.sample_once()
        finally:
            stop.set()
            t.join()
        d = s.to_json()
        main = [i for i, th in enumerate(d["threads"]) if th["id"] == threading.get_ident()][0]
        worker = [i for i, th in enumerate(d["threads"]) if th["name"] == "worker-y"][0]
        self.assertEqual(d["threads"][main]["samples"], 2)
        self.assertEqual(d["threads"][worker]["samples"], 6)
        self.assertEqual(d["agent_work_samples"], 4)
        self.assertEqual(s.busy, {})

    @unittest.skipUnless(hasattr(time, "pthread_getcpuclockid"), "no thread CPU clocks here")
    def test_on_cpu_and_waiting_threads(self):
        s = S.Sampler(0.005)
        stop = threading.Event()
        busy = threading.Thread(target=busy_leaf, args=(stop,), name="spinner")
        idle = threading.Thread(target=stop.wait, name="waiter")
        busy.start()
        idle.start()
        try:
            for _ in range(30):
                time.sleep(0.005)
                s.sample_once()
        finally:
            stop.set()
            busy.join()
            idle.join()
        d = s.to_json()
        self.assertTrue(d["cpu_clock"])
        th = {t["name"]: t for t in d["threads"]}
        # loose bounds: on a loaded machine the spinner gets little CPU,
        # but the waiter gets none
        self.assertLess(th["waiter"]["cpu_samples"], 0.2)
        self.assertLess(th["waiter"]["cpu_s"], 0.005)
        self.assertGreater(th["spinner"]["cpu_samples"], 0.5)
        self.assertGreater(th["spinner"]["cpu_s"], 0.005)
        i = [k for k, t in enumerate(d["threads"]) if t["name"] == "spinner"][0]
        self.assertAlmostEqual(sum(st["cpu_count"] for st in d["stacks"] if st["thread"] == i),
                               th["spinner"]["cpu_samples"], delta=0.05)
        # the waiter never leaves its stack: every sample but its first
        # repeats the one before, off the CPU
        self.assertTrue(d["repeats"])
        w = [k for k, t in enumerate(d["threads"]) if t["name"] == "waiter"][0]
        waits = [st for st in d["stacks"] if st["thread"] == w]
        self.assertEqual(len(waits), 1)
        self.assertEqual(waits[0]["repeat_count"], th["waiter"]["samples"] - 1)
        self.assertLess(waits[0]["repeat_cpu_count"], 0.2)

    @unittest.skipUnless(os.path.isdir("/proc/self/task") and hasattr(os, "sched_setaffinity"), "Linux schedstat")
    def test_main_thread_waiting_for_a_cpu_is_runnable(self):
        # the "main" thread spins on one CPU shared with a spinning child
        # process: it is runnable all along, on a CPU about half of it
        stop = threading.Event()
        spinner = threading.Thread(target=busy_leaf, args=(stop,), name="spinner")
        cpu, saved = min(os.sched_getaffinity(0)), os.sched_getaffinity(0)
        pid = os.fork()
        if pid == 0:
            try:
                os.sched_setaffinity(0, {cpu})
                end = time.perf_counter() + 3
                while time.perf_counter() < end:
                    pass
            finally:
                os._exit(0)
        try:
            spinner.start()
            while spinner.native_id is None:
                time.sleep(0.001)
            os.sched_setaffinity(spinner.native_id, {cpu})
            s = S.Sampler(0.005, main_ident=spinner.ident)
            for _ in range(40):
                time.sleep(0.01)
                s.sample_once()
        finally:
            stop.set()
            spinner.join()
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        d = s.to_json()
        i = [k for k, t in enumerate(d["threads"]) if t["name"] == "spinner"][0]
        stacks = [st for st in d["stacks"] if st["thread"] == i]
        n = sum(st["count"] for st in stacks)
        on_cpu = sum(st["cpu_count"] for st in stacks) / n
        waiting = sum(st["wait_count"] for st in stacks) / n
        self.assertGreater(waiting, 0.2, (on_cpu, waiting))
        self.assertGreater(on_cpu + waiting, 0.8, (on_cpu, waiting))

    def test_library_files(self):
        self.assertTrue(S.is_library_file(os.__file__))
        self.assertTrue(S.is_library_file("/tmp/torchinductor_u/ug/cugc5pjgaq2i5e.py"))  # torch.compile's output
        self.assertFalse(S.is_library_file("/home/u/train.py"))

    def test_thread_role(self):
        self.assertEqual(S.thread_role(1, "MainThread", 1), "main")
        self.assertEqual(S.thread_role(2, "Thread-3 (_pin_memory_loop)", 1), "pin_memory")
        self.assertEqual(S.thread_role(2, "Thread-4", 1), "other")


class PstatsTest(unittest.TestCase):
    def test_pstats_to_json(self):
        pr = cProfile.Profile()
        pr.enable()
        sorted(range(1000), key=lambda v: -v)
        pr.disable()
        d = S.pstats_to_json(pstats.Stats(pr).stats, time.time(), 1.0, [])
        self.assertEqual(d["profiler"], "cprofile")
        self.assertTrue(d["functions"])
        for fn in d["functions"]:
            self.assertLess(fn["frame"], len(d["frames"]))
            for c in fn["callers"]:
                self.assertLess(c["frame"], len(d["frames"]))
        lam = [fn for fn in d["functions"] if d["frames"][fn["frame"]]["func"] == "<lambda>"]
        self.assertEqual(lam[0]["ncalls"], 1000)


if __name__ == "__main__":
    unittest.main()
