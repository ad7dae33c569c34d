"""bottleneck agent: steps and the torch.profiler window (embedded in the
bottleneck binary, loaded by _bottleneck_agent): each step's record, the
Kineto profiler's schedule (skip-first, wait, warmup, active, repeat), the
gzipped trace of each window (trace-<tag>[.wN].pt.trace.json.gz) and the
CUDA implicit sync call sites recorded inside a window.

Documented in docs/run.md ("Steps: detection and fallback", "Run directory").
"""
import contextlib
import gzip
import json
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import warnings

import _bottleneck_files as files
from _bottleneck_env import safe, torch_env
from _bottleneck_sampler import is_agent_file, is_library_file

_SYNC_MESSAGE = "called a synchronizing CUDA operation"
# Warnings torch prints because of the agent's profiler and sync debug
# mode, never the program's: its stderr stays as without the tool (torch
# 2.11 printed both into a program's stderr on an H100).
_AGENT_WARNINGS = ("Warning: Profiler clears events at the end of each cycle",
                   "Synchronization debug mode is a prototype feature")


@contextlib.contextmanager
def agent_warnings(torch=None):
    """Around the agent's own calls that make torch warn (_AGENT_WARNINGS):
    those warnings are ignored there alone, never process-wide, and the
    profiler's record of warnings already shown once loses them again, so
    that a program's own profiler prints them as without the tool.

    The filters are put in warnings.filters and taken out in place, not
    with catch_warnings or filterwarnings: those mark the filters changed,
    which empties every module's record of the warnings it has shown, so
    each prof.step() made a program's once-per-line warning print again at
    every step until the window closed (mnist_rnn: dropout2d's warning 17
    times instead of once)."""
    shown = getattr(getattr(getattr(torch, "profiler", None), "profiler", None), "_WARNINGS_SHOWN", None)
    before = set(shown) if isinstance(shown, set) else None
    ours = [("ignore", re.compile(m, re.I), Warning, None, 0) for m in _AGENT_WARNINGS]
    filters = warnings.filters
    filters[:0] = ours
    try:
        yield
    finally:
        for f in ours:
            for i, g in enumerate(filters):
                if g is f:
                    del filters[i]
                    break
        if before is not None:
            shown.difference_update([m for m in shown - before if m.startswith(_AGENT_WARNINGS)])
# torch's profiler's own C++ warnings (c10's "[W<date> <time> file.cpp:N]"
# lines, written to fd 2 past Python's warnings filters). Stopping the
# window inside Optimizer.step, where the agent's step hook runs, while the
# program's record_function around optimizer.step() is open too (DLRM's
# "DLRM backward") warns "collection.cpp:671] Warning:
# Optimizer.step#SGD.step": an open range borrowing an end time that
# comes before its start. The program never stopped a profiler there.
_PROFILER_LINE = re.compile(rb"\[W\d{4} [0-9:.]+ (?:collection|profiler_kineto)\.cpp:\d+\] ")


class HeldStderr:
    """fd 2 held in a temporary file while the agent stops torch.profiler
    (from construction to release()), then written back whole but for
    _PROFILER_LINE's lines. What the program's other threads write
    meanwhile comes out at release, in its order; nothing is held when fd 2
    cannot be swapped."""

    def __init__(self):
        self.saved = self.tmp = None
        try:
            sys.stderr.flush()  # the program's buffered text goes out first
        except Exception:
            pass
        tmp = saved = None
        try:
            tmp = tempfile.TemporaryFile()
            saved = os.dup(2)
            os.dup2(tmp.fileno(), 2)
        except Exception:
            if saved is not None:
                safe(lambda: os.close(saved))
            if tmp is not None:
                safe(tmp.close)
            return
        self.saved, self.tmp = saved, tmp

    def release(self):
        saved, tmp = self.saved, self.tmp
        if saved is None:
            return
        self.saved = self.tmp = None
        safe(sys.stderr.flush)
        try:
            os.dup2(saved, 2)
        finally:
            os.close(saved)
        try:
            tmp.seek(0)
            data = b"".join(line for line in tmp.read().splitlines(True) if not _PROFILER_LINE.match(line))
            while data:
                data = data[os.write(2, data):]
        finally:
            tmp.close()


MAX_WINDOW_STEPS = 500  # a lengthened window's most steps (trace size)
EARLY_START_SPREAD = 1.5  # _start: two long steps this close are steady
# Bounds on a window whatever the step source does next (a program that
# trains 30 steps and then evaluates for minutes, a loop that makes a new
# optimizer every iteration: the steps a window waits for never come, and
# torch.profiler records everything meanwhile; 20 s of a no_grad
# evaluation grew a program from 689 MiB to 3.4 GiB). A window closes,
# with what it recorded, at the first of:
#   idle    no step for WINDOW_IDLE_STEPS times the median step so far, and
#           at least WINDOW_IDLE_FLOOR_S (a step 10x its median is an
#           outlier worth recording; a pause 10x longer, and 2 s at
#           least, is other work). A program's next step may always come
#           later: the window is short, not wrong.
#   wall    MAX_WINDOW_S seconds since it opened: 5 steps of 10 s (a large
#           model's step) fit; a window longer than that is not needed to
#           judge a step, and its trace would be too large to read.
#   memory  the process's resident memory grew, over the most it held
#           before the window opened (its peak so far: a step's transient
#           tensors, freed back to the system at its end, are no growth; a
#           GAT step on 2708 nodes rose from 1037 MiB by 1086 MiB and back
#           at every step, and its window closed after 0 steps), by
#           MAX_WINDOW_GROWTH or by half of that, whichever is more: a
#           backstop against a recording that runs away (Kineto keeps ~226
#           bytes a CPU event until the export, so 1 GiB is ~4.7M events). Memory is no count of events: the program's own
#           allocations grow it too (a message-passing step's first steps
#           took 133 MiB, and a bound at 108 MiB cut its window to one step),
#           so the bound sits far above a program's warm-up.
# The checks run in the training thread (the profiler can only be stopped
# there: torch.profiler.stop() from another thread crashes the process) at
# every step, optimizer step, DataLoader batch and, once a bound is
# passed, the next outermost module forward; a thread polls the bounds
# every WINDOW_POLL_S while a window records.
WINDOW_IDLE_STEPS = 10
WINDOW_IDLE_FLOOR_S = 2.0
MAX_WINDOW_S = 60.0
MAX_WINDOW_GROWTH = 1 << 30
WINDOW_POLL_S = 0.1
# Recording can leave glibc's heap far larger than the program needs: the
# profiler's many small allocations among a step's large ones keep what
# the step frees from being reused (johnma2006/mamba-minimal's selective
# scan: RSS 1.3 -> 9.4 GB in one recorded step, kept for the rest of the
# run; with MALLOC_MMAP_THRESHOLD_ at 1 MiB, no growth). Past
# TRIM_AFTER_GROWTH over the window's memory base, what the heap holds
# free goes back to the kernel once the window closes (malloc_trim: 7.4 ->
# 0.8 GB in 1.3 s there), as without the profiler it would not have grown.
TRIM_AFTER_GROWTH = 512 << 20


def memory_bound(rss0, rss):
    """The memory bound passed, as (name, measure), or None: the process
    grew from rss0 bytes, the most it held before the window opened
    (window_rss_base), to rss, by MAX_WINDOW_GROWTH or half of rss0,
    whichever is more."""
    grown, most = rss - rss0, max(MAX_WINDOW_GROWTH, rss0 // 2)
    if grown < most:
        return None
    return ("memory", "the process grew %.0f MiB over the most it held before the window opened (the most: %.0f MiB, "
                      "the larger of 1 GiB and half of the %.0f MiB it held then)"
            % (grown / 2.0 ** 20, most / 2.0 ** 20, rss0 / 2.0 ** 20))


def trim_heap():
    """glibc's malloc_trim(0): the heap's free memory back to the kernel.
    The seconds it took, or None where the C library has none (macOS,
    musl)."""
    try:
        import ctypes
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
        if trim is None:
            return None
        t0 = time.perf_counter()
        trim(0)
        return time.perf_counter() - t0
    except Exception:
        return None


def window_rss_base(rss, peak):
    """The memory bound's base: the larger of the resident memory when the
    window opens and the process's peak before it (None where neither is
    known). A step that allocates its activations and frees them at its
    end rises and falls by the same amount at every step: the earlier
    steps' peak holds it, the resident memory between steps does not."""
    known = [v for v in (rss, peak) if v is not None]
    return max(known) if known else None


_MAX_STEP_TIMES = 20000  # steps kept one by one (evidence step_times)
_RECENT = 31  # steps whose median _slow_step compares a step with


class StopAfterProfile(SystemExit):
    """Raised in the training thread once the last window is written when
    --stop-after-profile is on. Exits with status 0."""

    def __init__(self):
        SystemExit.__init__(self, 0)


class Window(object):
    """The Agent's steps and profiler window (a mixin of Agent).

    It keeps the state _init_window sets. From the Agent it reads cfg,
    pcfg, torch, env, sampler, stepstats, tag, step_thread, step_source,
    program_profiler, _t0, finished and _finishing, appends to errors,
    missing and notes, and calls path, progress, own_work, write_env and
    write_evidence. The Agent's step detection calls _start_profiler when
    a step source locks and _step at every step after that."""

    live = None  # the Agent sets it with --live (_bottleneck_live.Live)
    overhead_ab = None  # the Agent sets it with BOTTLENECK_AB_BLOCK (_bottleneck_overhead)

    def _init_window(self):
        p = self.pcfg
        # steps
        self.steps = 0
        self.step_start = None
        self._held = None  # HeldStderr while the agent stops the profiler
        self.step_dl_wait = 0.0
        self.step_dl_batches = 0
        self.step_dl_samples = 0  # batches x their loader's batch_size (the --live view's throughput)
        # calls this step of the models called on one sample (the agent's
        # _count_items); None: not counted
        self.step_items = None
        # outermost module calls this step, on the steps the agent counts
        # them (_bottleneck_calls); None: not counted
        self.step_calls = None
        self._step_syncs = 0
        self._step_cpu_wait = None
        self.window_steps = []
        self.step_stats = {"count": 0, "sum_s": 0.0, "min_s": None, "max_s": None}  # the steps past step_times
        self.step_times = []  # [step, start_rel, dur, in_window, cpu wait or None, DataLoader wait, items or None, calls or None] per step, capped
        self._recent_steps, self._recent_median, self._median_step = [None] * _RECENT, None, 0  # _slow_step
        # profiler
        self.prof = None
        self.prof_state = "off"  # off | waiting | recording | done | failed | yielded
        self.kineto_started = False
        self.windows = []  # {"index","file","steps","partial","bytes","export_s"}
        self.window_index = 0
        self.window_target = int(p.get("repeat", 1) or 0)
        self.active = None  # recorded steps per window, fixed when the first one starts
        self.stop_pending = False
        self.stopped_after_profile = False
        self.in_window = False
        # the profiler warms up (it traces, then discards): those steps are
        # profiled too, so step_times marks them with the window's
        self.warming = False
        self.window_spans = []  # [[start_rel, end_rel], ...] seconds since agent start
        # syncs
        self.sync_sites = {}
        self.sync_total = 0
        self.sync_state = "not-attempted"
        self._sync_prev_mode = None
        self._sched = None  # the profiler's schedule function
        self._start_fixed = False  # _start decided
        self.early_start = None  # {"step", "step_s"} when _start moved the window earlier
        # [{"step", "s"}]: the wait for the device charged to the last
        # step before each window (_wait_for_device)
        self.device_behind = []
        self._orig_showwarning = None
        # bounds (see MAX_WINDOW_S): when the recording window opened, the
        # process's RSS then, the median step before it, the bound a
        # poll found passed, and how the window closed, if a bound did it
        self._window_opened_at, self._window_rss0, self._window_median = None, None, None
        self._idle_s = None  # the idle bound now (_idle_limit)
        self._close_request = None  # (by, detail), set by the poll thread
        self._close_hooks = []
        self._window_gen = 0
        self.window_closed = None  # {"window", "by", "after_steps", "detail"}

    def _step(self):
        """One step ended (and the next begins) at this instant."""
        if threading.get_ident() != self.step_thread:
            return
        behind = self._wait_for_device()
        now = time.perf_counter()
        dur = now - self.step_start if self.step_start is not None else None
        self.steps += 1
        ab = self.overhead_ab
        if ab is not None and not ab.step(self.steps, dur):
            self.step_start = now
            return
        if behind is not None:
            self.device_behind.append({"step": self.steps, "s": round(behind, 6)})
        # Below, for every step, as few calls as will do: right after a step
        # the agent's code and data are out of the caches, and a call that
        # returns at once cost ~4 us (timed inside train_cnn.py, 5 ms steps)
        wait = None
        st = self.stepstats
        if st is not None:
            # the --live view splits each step by its own reading
            wait = st.on_step(self.steps, self.in_window, self.in_window or self.warming or self.live is not None, now,
                              self.warming)
            if wait is not None and st.sched.covered > 1:
                self._spread_wait(wait, st.sched.covered)
        self._step_cpu_wait = wait
        if dur is not None:
            self._recent_steps[self.steps % _RECENT] = dur  # _slow_step's
        sampler = self.sampler
        if sampler is not None and (sampler.this_step or not sampler.stepped):
            sampler.end_step(dur is not None and self._slow_step(dur), self.steps if self.in_window and dur is not None else None)
        if dur is not None:
            if len(self.step_times) < _MAX_STEP_TIMES:
                rel = self.step_start - self._t0
                # a tuple, as the step statistics' rows (_bottleneck_stepstats.on_step)
                self.step_times.append((self.steps, round(rel, 6), round(dur, 6), self.in_window or self.warming, wait,
                                        round(self.step_dl_wait, 6), self.step_items, self.step_calls))
            else:
                # the steps past step_times (theirs are summed at the end:
                # each line here costs the program, out of the caches)
                s = self.step_stats
                s["count"] += 1
                s["sum_s"] += dur
                s["min_s"] = dur if s["min_s"] is None else min(s["min_s"], dur)
                s["max_s"] = dur if s["max_s"] is None else max(s["max_s"], dur)
            if self.in_window:
                self.window_steps.append({
                    "window": self.window_index + 1,
                    "step": self.steps,
                    "duration_s": dur,
                    "dataloader_wait_s": self.step_dl_wait,
                    "dataloader_batches": self.step_dl_batches,
                    "syncs": self._step_syncs,
                })
            if self.live is not None:
                self._live_step(now, dur)
        self.step_start = now
        self.step_dl_wait = 0.0
        if self.step_items is not None:
            self.step_items = 0
        self.step_dl_batches = 0
        self.step_dl_samples = 0
        self._step_syncs = 0
        if self.in_window and self.check_window_bounds():
            return  # the window closed at this step's end
        prof = self.prof
        if prof is not None and self.prof_state == "waiting":
            with self.own_work():
                try:
                    self._drain_device(prof)
                    with agent_warnings(self.torch):
                        if str(getattr(prof, "current_action", "")).endswith("RECORD_AND_SAVE"):
                            self._stop_quietly(prof.step)  # this step ends the window
                        else:
                            prof.step()
                except Exception as e:
                    self._profiler_failed("profiler step", e)
                    return
                self._after_profiler_step()
            # the profiler's step (starting it, writing a trace: 1.8 s
            # after a window of 150 small steps) is the agent's work, in
            # no step of the program
            self.step_start = time.perf_counter()
        if self.stop_pending:
            self.stop_pending = False
            self.stopped_after_profile = True
            self.progress("stopping")
            raise StopAfterProfile()

    def _spread_wait(self, wait, covered):
        """A reading of the CPU wait that covers the steps since the last
        one (covered > 1: short steps share one, SchedMeter.on_step): the
        steps before this one, kept without it, get its mean too."""
        times = self.step_times
        for i in range(len(times) - 1, max(len(times) - covered + 1, 0) - 1, -1):
            row = times[i]
            if row[0] < self.steps - covered + 1 or row[4] is not None:
                break
            times[i] = row[:4] + (wait,) + row[5:]

    def _live_step(self, now, dur):
        """Feeds the --live view (_bottleneck_live): O(1) but for a small
        file rewritten at most twice a second."""
        st = self.stepstats
        rss, cuda = st.memory if st is not None else (None, None)
        if self.in_window or self.warming:
            state = "recording"
        else:
            state = self.prof_state  # waiting | done | off | failed | yielded
        cpu = st.sched.last_cpu if st is not None and self._step_cpu_wait is not None else None
        self.live.on_step(self.steps, now, dur, self.step_dl_wait, st.last_gc_s if st is not None else 0.0,
                          rss, cuda, state, self.window_index,
                          cpu, self._step_cpu_wait, self.step_dl_samples or None)

    def _drain_device(self, prof):
        """Before the first recorded step, wait for the device to finish the
        work already queued: a host that runs steps ahead of the device (92
        ms of kernels a step, a few ms of launches) would otherwise open the
        window with earlier steps' kernels, which the trace cannot assign
        to its steps. Once per window; only when the program uses CUDA.
        The agent's work: in no step (the warm-up steps' kernels)."""
        if self._schedule_turns(prof, ("WARMUP",), ("RECORD", "RECORD_AND_SAVE")):
            self._synchronize()

    def _wait_for_device(self):
        """At the end of the last step before a window (the schedule turns
        from no action to the warm-up, or to recording without one), wait
        for the device to finish the work the host queued: the seconds it
        took, charged to that step, or None when there was no wait (another
        step, no CUDA). Steps are timed on the host; a program that does
        not synchronize runs steps ahead of the device (an H200 ran the
        pinned-copy example's steps in ~1 ms on the host, ~5 ms on the
        device), so the steps before the window, the ones `bottleneck try`
        compares, end when their device work is done: their sum is the
        device's time, not the host's."""
        prof = self.prof
        if prof is None or self.prof_state != "waiting" or self.in_window:
            return None
        if not self._schedule_turns(prof, ("NONE",), ("WARMUP", "RECORD", "RECORD_AND_SAVE")):
            return None
        with self.own_work():  # not the program's code: out of its Python profile
            return self._synchronize()

    def _schedule_turns(self, prof, now, to):
        """Whether the profiler's action is one of `now` and the schedule's
        next, at the coming prof.step(), one of `to` (action names)."""
        sched = self._sched
        if sched is None or not str(getattr(prof, "current_action", "")).endswith(now):
            return False
        return str(safe(lambda: sched(getattr(prof, "step_num", 0) + 1), "")).endswith(to)

    def _synchronize(self):
        """cuda.synchronize() when the program uses CUDA: the seconds it
        took, or None (no CUDA, or it failed)."""
        cuda = getattr(self.torch, "cuda", None)
        if cuda is None or not safe(lambda: cuda.is_initialized(), False):
            return None
        t0 = time.perf_counter()
        if not safe(lambda: cuda.synchronize() or True, False):
            return None  # a failed kernel's error: the program's next sync raises it
        return time.perf_counter() - t0

    def _slow_step(self, dur):
        """Whether a step took over twice the median of the last _RECENT
        (the step's thread keeps them in _recent_steps; the median
        recomputed every 16 steps at most: steps can be 50 us), once 8
        ran. Asked only for steps the sampler sampled."""
        if len(self.step_times) < 7:  # this step's is in the ring, not yet kept
            return False
        if self._recent_median is None or self.steps - self._median_step >= 16:
            recent = sorted(d for d in self._recent_steps if d is not None)
            self._recent_median, self._median_step = recent[len(recent) // 2], self.steps
        return dur > 2 * self._recent_median

    # -- profiler window ----------------------------------------------------
    def _start_profiler(self):
        torch = self.torch
        p = self.pcfg
        if self.program_profiler is not None:
            return  # the program's own profiler runs (see _yield_to_program_profiler)
        if not p.get("enabled", True):
            self.prof_state = "off"
            self.missing.append({"what": "torch.profiler trace", "why": "disabled (--no-trace)"})
            return
        nvtx = getattr(self, "nvtx", None)
        if nvtx is not None and nvtx.ops == "entered":
            self.prof_state = "off"  # emit_nvtx() holds the autograd profiler
            self.missing.append(nvtx.trace_missing())
            return
        if torch is None:
            return
        if not safe(lambda: bool(torch.autograd.kineto_available()), False):
            self.prof_state = "failed"
            self.missing.append({
                "what": "torch.profiler trace",
                "why": "this torch build (%s) has no Kineto profiler (torch.autograd.kineto_available() is False); "
                       "the Python profile is still recorded" % getattr(torch, "__version__", "?"),
            })
            return
        try:
            import torch.profiler as tp
            acts = [tp.ProfilerActivity.CPU]
            supported = safe(lambda: set(tp.supported_activities()), set())
            # CUDA only once the program uses it (the first step has run): the
            # profiler's CUDA activity creates a context, which a CPU-only
            # program on a GPU machine would otherwise get (memory on the
            # device, a slower start)
            if safe(lambda: torch.cuda.is_initialized(), False) and tp.ProfilerActivity.CUDA in supported:
                acts.append(tp.ProfilerActivity.CUDA)
            for extra in ("XPU", "MTIA", "HPU"):
                a = getattr(tp.ProfilerActivity, extra, None)
                if a is not None and a in supported:
                    acts.append(a)
            self.activities = [str(a).split(".")[-1] for a in acts]
            self._sched = self._schedule(tp.ProfilerAction)
            opts = dict(activities=acts, schedule=self._sched, on_trace_ready=self._on_trace_ready,
                        record_shapes=bool(p.get("record_shapes")), profile_memory=bool(p.get("profile_memory")),
                        with_stack=bool(p.get("with_stack")), with_flops=bool(p.get("with_flops")),
                        with_modules=bool(p.get("with_modules")))
            self.prof = tp.profile(**opts)
            self.kineto_started = True
            with agent_warnings(torch):
                self.prof.start()
            self.prof_state = "waiting"
            self._after_profiler_step()
        except Exception as e:
            self._profiler_failed("starting torch.profiler", e)

    def _schedule(self, action):
        """torch.profiler.schedule(skip_first, wait, warmup, active, repeat),
        with the active steps fixed when the first window starts recording:
        more than `active` when, at the median step so far, they would take
        less than `min_window_s` (a window of a few short steps holds too
        few Python samples and too little of the trace to judge from)."""
        p = self.pcfg
        wait, repeat = int(p.get("wait", 0)), int(p.get("repeat", 1))

        def fn(step):
            skip, warmup = self._start(step)
            if step < skip:
                return action.NONE
            step -= skip
            if self.active is None and step >= wait + warmup:
                self.active = self._window_length()
            cycle = wait + warmup + (self.active or int(p.get("active", 5)))
            if repeat > 0 and step >= repeat * cycle:
                return action.NONE
            at = step % cycle
            if at < wait:
                return action.NONE
            if at < wait + warmup:
                return action.WARMUP
            return action.RECORD if at < cycle - 1 else action.RECORD_AND_SAVE
        return fn

    def _start(self, step):
        """skip_first and warmup: as set, or, where the run leaves them to
        the agent (early_start_s), from this step with one warm-up step
        once two timed steps took early_start_s or more each, within
        EARLY_START_SPREAD of each other (the first timed step is the
        program's second: its first, with the start-up, is not timed, as
        the step source locks at its end): steps that long are past
        their warm-up, and the default start (7 steps in) came after the
        end of a run of five 28 s steps (pytorch/examples'
        time_sequence_prediction: LBFGS, 20 closures a step), so nothing
        was recorded. The profiler's warm-up step is kept where CUDA is
        used (CUPTI's start can take a good part of a second) and dropped
        otherwise, so that a run of four 17 s steps (the same program,
        --steps 4) records its last.
        Fixed at the first step that decides; pcfg then holds what was
        used."""
        p = self.pcfg
        skip, warmup = int(p.get("skip_first", 5)), int(p.get("warmup", 2))
        least = float(p.get("early_start_s") or 0)
        if least <= 0 or self._start_fixed:
            return skip, warmup
        if step >= skip:
            self._start_fixed = True
            return skip, warmup
        durs = [t[2] for t in self.step_times[-2:]]
        if len(durs) == 2 and min(durs) >= least and max(durs) <= EARLY_START_SPREAD * min(durs):
            cuda = getattr(self.torch, "cuda", None)
            keep = cuda is not None and safe(lambda: cuda.is_initialized(), False)
            p["skip_first"], p["warmup"] = step, min(1 if keep else 0, warmup)
            self._start_fixed = True
            self.early_start = {"step": step, "step_s": [round(d, 3) for d in durs]}
        return int(p.get("skip_first", 5)), int(p.get("warmup", 2))

    def _window_length(self):
        """The recorded steps per window (see _schedule), at most
        MAX_WINDOW_STEPS when lengthened."""
        p = self.pcfg
        active, least = int(p.get("active", 5)), float(p.get("min_window_s") or 0)
        # the first step often holds start-up, and the warm-up steps the
        # profiler's own start: the median of those between, or of both
        # kinds when there are none between
        warm = int(p.get("warmup", 2))
        times = sorted(t[2] for t in self.step_times[1:max(1, len(self.step_times) - warm)])
        if not times:
            times = sorted(t[2] for t in self.step_times)
        if least <= 0 or not times:
            return active
        median = times[len(times) // 2]
        if median * active >= least:
            return active
        return max(active, min(MAX_WINDOW_STEPS, int(math.ceil(least / max(median, 1e-6)))))

    def _profiler_failed(self, what, e):
        self.prof_state = "failed"
        self.errors.append("%s: %s: %s" % (what, type(e).__name__, e))
        self.missing.append({"what": "torch.profiler trace", "why": "%s failed: %s" % (what, e)})
        self._set_window(False)
        try:
            if self.prof is not None:
                self.prof.on_trace_ready = None
                self.prof.stop()
        except Exception:
            pass
        self.prof = None

    def _after_profiler_step(self):
        prof = self.prof
        if prof is None:
            return
        action = str(getattr(prof, "current_action", ""))
        recording = action.endswith("RECORD") or action.endswith("RECORD_AND_SAVE")
        warm = action.endswith("WARMUP")
        self.warming = warm
        if self.sampler is not None:
            self.sampler.mark_step()
        self._set_window(recording)
        p = self.pcfg
        if recording:
            self.progress("recording", window=self.window_index + 1,
                          active_step=len([s for s in self.window_steps if s["window"] == self.window_index + 1]) + 1,
                          active=self.active or int(p.get("active", 5)))
        elif warm:
            self.progress("warming up", window=self.window_index + 1)
        elif self.window_index == 0:
            self.progress("waiting", skip_first=int(p.get("skip_first", 5)))

    def _set_window(self, on):
        if on == self.in_window:
            return
        self.in_window = on
        rel = time.perf_counter() - self._t0
        if on:
            self.window_spans.append([rel, None])
            self._open_window_bounds()
        elif self.window_spans:
            self.window_spans[-1][1] = rel
        if not on and not self.finished and not self._finishing:
            self._trim_after_window()
        if self.sampler is not None:
            self.sampler.set_window(on)
        if on:
            self._sync_on()
            if self.env is not None and self.torch is not None and not self.env.get("torch_at_window"):
                self.env["torch_at_window"] = True
                self.env["torch"] = safe(lambda: torch_env(self.torch, with_devices=True), self.env.get("torch"))
                self.write_env()
        else:
            self._sync_off()

    def _trim_after_window(self):
        """Hand back what the window's recording left in glibc's heap
        (TRIM_AFTER_GROWTH), and say so in the evidence's notes."""
        base, rss = self._window_rss0, _rss_bytes()
        if base is None or rss is None or rss - base < TRIM_AFTER_GROWTH:
            return
        with self.own_work():
            took = trim_heap()
        if took is None:
            return
        after = _rss_bytes() or rss
        self.notes.append("the process grew %.0f MiB over its memory base (%.0f MiB) while the profiler window recorded; "
                          "glibc's heap handed %.0f MiB back to the kernel when it closed (malloc_trim, %.2f s)"
                          % ((rss - base) / 2.0 ** 20, base / 2.0 ** 20, (rss - after) / 2.0 ** 20, took))

    # -- window bounds (see MAX_WINDOW_S) ---------------------------------------
    def _open_window_bounds(self):
        self._window_gen += 1
        self._window_opened_at = time.perf_counter()
        self._window_rss0 = window_rss_base(_rss_bytes(), _peak_rss_bytes())
        durs = sorted(t[2] for t in self.step_times[-64:])
        self._window_median = durs[len(durs) // 2] if durs else None
        self._idle_s = None
        gen = self._window_gen
        try:
            # a bare _thread, like the sampler's: the program's
            # threading.enumerate() stays as without bottleneck
            import _thread
            _thread.start_new_thread(self._poll_window_bounds, (gen,))
        except Exception as e:
            self.errors.append("window bounds thread: %s: %s" % (type(e).__name__, e))

    def _idle_limit(self):
        durs = [s["duration_s"] for s in self.window_steps if s["window"] == self.window_index + 1]
        median = sorted(durs)[len(durs) // 2] if durs else 0.0
        return max(WINDOW_IDLE_FLOOR_S, WINDOW_IDLE_STEPS * max(median, self._window_median or 0.0))

    def _time_bound(self, now):
        """The wall or idle bound this window passed at `now`, or None."""
        opened = self._window_opened_at
        if opened is None:
            return None
        if now - opened >= MAX_WINDOW_S:
            return ("wall", "open %.1f s (the most is %.0f s)" % (now - opened, MAX_WINDOW_S))
        last, limit = self.step_start, self._idle_s
        if limit is None or threading.get_ident() != self.step_thread:
            # the poll thread: the window's steps so far (the steps'
            # thread reads what the poll left, a scan of 500 steps at
            # every forward of a 0.4 ms step would slow it)
            limit = self._idle_s = self._idle_limit()
        if last is not None and now - last >= limit:
            return ("idle", "no step for %.1f s (the limit: %d times the median step, at least %.0f s: %.1f s)"
                    % (now - last, WINDOW_IDLE_STEPS, WINDOW_IDLE_FLOOR_S, limit))
        return None

    def _poll_window_bounds(self, gen):
        """The poll thread: finds a passed bound; the training thread closes
        the window at its next step, optimizer step, DataLoader batch or
        module forward (the close hooks)."""
        try:
            while not self.finished and self.in_window and self._window_gen == gen:
                time.sleep(WINDOW_POLL_S)
                if self.finished or not self.in_window or self._window_gen != gen:
                    return
                why = self._time_bound(time.perf_counter())
                rss0 = self._window_rss0
                if why is None and rss0 is not None:
                    why = memory_bound(rss0, _rss_bytes() or rss0)
                if why is not None:
                    self._close_request = why
                    self._install_close_hooks()
                    return
        except Exception as e:
            self.errors.append("window bounds: %s: %s" % (type(e).__name__, e))

    def _install_close_hooks(self):
        """A global module forward pre-hook that closes the window at the
        training thread's next forward (an evaluation runs forwards, no
        steps). Not after torch.compile (Dynamo guards on global hooks: a
        new one recompiles the program's model) nor beside other global
        hooks (added from this thread while the training thread iterates
        them, they would fail its forward)."""
        torch = self.torch
        if torch is None or self.compile_used or self._close_hooks or self.step_source == "forward":
            return
        try:
            from torch.nn.modules import module as nn_module
            if getattr(nn_module, "_global_forward_pre_hooks", None):
                return
            agent = self

            def pre(module, args):
                if threading.get_ident() == agent.step_thread:
                    agent.check_window_bounds()
            self._close_hooks.append(nn_module.register_module_forward_pre_hook(pre))
        except Exception as e:
            self.errors.append("window close hook: %s: %s" % (type(e).__name__, e))

    def _remove_close_hooks(self):
        for h in self._close_hooks:
            safe(h.remove)
        self._close_hooks = []

    def check_window_bounds(self):
        """In the training thread: close the recording window if it passed
        a bound. True when it closed."""
        if not self.in_window or self.prof is None or threading.get_ident() != self.step_thread \
                or getattr(self._own, "depth", 0) > 0:
            return False
        why = self._close_request or self._time_bound(time.perf_counter())
        if why is None:
            return False
        with self.own_work():
            self._close_window(*why)
        return True

    def _close_window(self, by, detail):
        prof, idx = self.prof, self.window_index + 1
        n = len([s for s in self.window_steps if s["window"] == idx])
        self.window_closed = {"window": idx, "by": by, "after_steps": n, "detail": detail}
        self._close_request = None
        self._remove_close_hooks()
        if self.sampler is not None:
            # what ran after the window's last step (an evaluation) was in no step
            self.sampler.drop_since_step()
        self.prof = None
        try:
            self._stop_quietly(prof.stop)  # writes the trace (_on_trace_ready)
        except Exception as e:
            self.errors.append("closing the profiler window: %s: %s" % (type(e).__name__, e))
        self._set_window(False)
        self.prof_state = "done"
        self.notes.append("the profiler window %d closed after %d recorded steps, before the %d it was to record: %s; "
                          "the trace holds those steps and the start of what ran next"
                          % (idx, n, self.active or int(self.pcfg.get("active", 5)), detail))
        self.write_evidence(final=False)
        self.progress("window closed", window=idx, by=by, steps=n)

    def _stop_quietly(self, stop):
        """stop() (a torch.profiler stop) with fd 2 held (HeldStderr) until
        the trace is ready to write: torch's stop of a window inside the
        program's own ranges warns, the export does not."""
        self._held = held = HeldStderr()
        try:
            stop()
        finally:
            self._held = None
            held.release()

    def _on_trace_ready(self, prof):
        if self._held is not None:
            self._held.release()  # the export (seconds) holds nothing back
        with self.own_work():
            return self._write_trace(prof)

    def _write_trace(self, prof):
        # called inside prof.step() (or prof.stop()) in the training thread
        if self.stepstats is not None:
            self.stepstats.sched.dirty = True  # the export is in no step's CPU time
        self.window_index += 1
        idx = self.window_index
        partial = self.finished or self._finishing
        self.progress("writing trace", window=idx)
        name = files.trace_name(self.tag, idx)
        final = self.path(name)
        t0 = time.perf_counter()
        rec = {"index": idx, "file": name, "partial": bool(partial),
               "steps": [s["step"] for s in self.window_steps if s["window"] == idx]}
        closed = self.window_closed
        if closed is not None and closed["window"] == idx:
            rec["closed_by"], rec["closed_detail"] = closed["by"], closed["detail"]
        try:
            try:
                prof.add_metadata_json("bottleneck", json.dumps({"tag": self.tag, "window": idx,
                                                                 "partial": bool(partial), "step_source": self.step_source}))
            except Exception:
                pass
            tmp_json = final + ".tmp-%d.json" % os.getpid()
            tmp_gz = final + ".tmp-%d" % os.getpid()
            prof.export_chrome_trace(tmp_json)
            with open(tmp_json, "rb") as fin, gzip.open(tmp_gz, "wb", compresslevel=3) as fout:
                shutil.copyfileobj(fin, fout, 1 << 20)
            os.remove(tmp_json)
            os.replace(tmp_gz, final)
            rec["bytes"] = os.path.getsize(final)
        except Exception as e:
            rec["error"] = "%s: %s" % (type(e).__name__, e)
            self.errors.append("exporting trace: %s" % rec["error"])
        rec["export_s"] = time.perf_counter() - t0
        self.windows.append(rec)
        self._set_window(False)
        if self.window_target and idx >= self.window_target:
            self.prof_state = "done"
            if self.cfg.get("stop_after_profile") and not self._finishing:
                self.stop_pending = True
        self.write_evidence(final=False)
        self.progress("recorded", window=idx)

    def _stop_profiler(self):
        prof = self.prof
        if prof is None:
            return
        self.prof = None
        if self.in_window and self.sampler is not None:
            # the program ended during the window: what ran after its last
            # step (the code after the loop) was in no step
            self.sampler.drop_since_step()
        try:
            if self.prof_state in ("waiting",):
                if threading.get_ident() != self.step_thread and self.step_thread is not None:
                    self.notes.append("program ended in another thread than the one that ran the steps; "
                                      "a partial window could not be saved")
                    prof.on_trace_ready = None
                self._stop_quietly(prof.stop)
            elif self.prof_state == "done":
                prof.on_trace_ready = None
                self._stop_quietly(prof.stop)
        except Exception as e:
            self.errors.append("stopping torch.profiler: %s: %s" % (type(e).__name__, e))
        self._set_window(False)

    # -- CUDA sync call sites -------------------------------------------------
    def _sync_on(self):
        if not self.cfg.get("sync_debug", True):
            self.sync_state = "disabled"
            return
        torch = self.torch
        if torch is None or not safe(lambda: torch.cuda.is_initialized(), False):
            self.sync_state = "no-cuda"
            return
        if not hasattr(torch.cuda, "set_sync_debug_mode"):
            self.sync_state = "unsupported"
            return
        try:
            self._sync_prev_mode = torch.cuda.get_sync_debug_mode()
            if self._sync_prev_mode != 0:
                self.sync_state = "user-set"
                return
            warnings.filterwarnings("always", message=_SYNC_MESSAGE)
            self._orig_showwarning = warnings.showwarning
            warnings.showwarning = self._showwarning
            with agent_warnings():
                torch.cuda.set_sync_debug_mode(1)
            self.sync_state = "on"
        except Exception as e:
            self.sync_state = "failed: %s" % e

    def _sync_off(self):
        if self.sync_state != "on":
            return
        try:
            self.torch.cuda.set_sync_debug_mode(self._sync_prev_mode or 0)
        except Exception:
            pass
        if self._orig_showwarning is not None and warnings.showwarning == self._showwarning:
            warnings.showwarning = self._orig_showwarning
        try:
            warnings.filters[:] = [f for f in warnings.filters
                                   if not (f[0] == "always" and getattr(f[1], "pattern", None) == _SYNC_MESSAGE)]
            warnings._filters_mutated()
        except Exception:
            pass
        self.sync_state = "recorded"

    def _showwarning(self, message, category, filename, lineno, file=None, line=None):
        if _SYNC_MESSAGE in str(message):
            self.record_sync(sys._getframe(1))
            return
        orig = self._orig_showwarning or warnings._showwarning_orig
        return orig(message, category, filename, lineno, file, line)

    def record_sync(self, frame):
        """Record the user call site of an implicit sync: the innermost frame
        outside torch, the warnings machinery and the agent."""
        user = []
        f = frame
        while f is not None and len(user) < 6:
            fn = f.f_code.co_filename
            if not (is_agent_file(fn) or is_library_file(fn)):
                user.append({"file": fn, "line": f.f_lineno or 0, "func": getattr(f.f_code, "co_qualname", f.f_code.co_name)})
            f = f.f_back
        if not user:
            user = [{"file": "?", "line": 0, "func": "?"}]
        site = user[0]
        key = (site["file"], site["line"])
        rec = self.sync_sites.get(key)
        if rec is None:
            rec = self.sync_sites[key] = {"file": site["file"], "line": site["line"], "func": site["func"],
                                          "count": 0, "stack": user}
        rec["count"] += 1
        self.sync_total += 1
        self._step_syncs += 1


def _peak_rss_bytes():
    """The process's peak resident memory so far in bytes (None where
    unknown)."""
    try:
        import resource
        r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return r if sys.platform == "darwin" else r * 1024
    except Exception:
        return None


def _rss_bytes():
    """The process's resident memory in bytes (None where unknown)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except Exception:
        pass
    try:
        import resource
        r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # the peak: grows with the current
        return r if sys.platform == "darwin" else r * 1024
    except Exception:
        return None
