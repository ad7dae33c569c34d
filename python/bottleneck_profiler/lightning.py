"""Lightning integration: `Trainer(profiler=BottleneckProfiler())`.

A Lightning Profiler that times Lightning's actions (training_step,
backward, optimizer_step, data fetching, callbacks and hooks) for the whole
run, like SimpleProfiler, and records the fit stage with bottleneck's agent
(the window, the sampler, the diagnosis) into a run directory per stage and
rank: <dirpath>/bottleneck-<stage>[-<filename>][-<rank>] (dirpath defaults to
the Trainer's log_dir, as Lightning's profilers do). describe() prints the
verdict and the action table."""
import atexit
import os
import time

try:
    from lightning.pytorch.profilers import Profiler
except ImportError:  # the older package name
    from pytorch_lightning.profilers import Profiler

from ._api import Report, profile


class BottleneckProfiler(Profiler):
    """settings are profile()'s keywords (active=, skip_first=, ...)."""

    def __init__(self, dirpath=None, filename=None, stages=("fit",), **settings):
        super().__init__(dirpath=dirpath, filename=filename)
        self.stages = tuple(stages)
        self._settings = settings
        self._open = {}  # action -> start time
        self.actions = {}  # action -> [calls, total seconds]
        self._session = None
        self._session_start = None
        self.wall_s = 0.0
        self.run_dir = None

    def setup(self, stage, local_rank=None, log_dir=None):
        super().setup(stage=stage, local_rank=local_rank, log_dir=log_dir)
        if stage in self.stages and self._session is None:
            out = os.path.join(self.dirpath or ".", "bottleneck-" + self._prepare_filename(extension=""))
            self._session = profile(out=out, **self._settings)
            self._session.__enter__()
            self._session_start = time.perf_counter()
            self.run_dir = self._session.run_dir
            # Lightning calls neither describe() nor teardown() when fit
            # raises: save the recording when the process exits then
            atexit.register(self._finish)

    def start(self, action_name):
        self._open[action_name] = time.perf_counter()

    def stop(self, action_name):
        t0 = self._open.pop(action_name, None)
        if t0 is None:
            return
        a = self.actions.setdefault(action_name, [0, 0.0])
        a[0] += 1
        a[1] += time.perf_counter() - t0

    def _finish(self):
        if self._session is None:
            return
        session, self._session = self._session, None
        atexit.unregister(self._finish)
        self.wall_s = time.perf_counter() - self._session_start
        session.__exit__(None, None, None)

    def report(self):
        """The bottleneck report of the recorded stage (a Report)."""
        self._finish()
        if self.run_dir is None:
            raise RuntimeError("BottleneckProfiler: no stage of %s has run" % (self.stages,))
        return Report(self.run_dir)

    def summary(self):
        self._finish()
        lines = []
        if self.run_dir is not None:
            text = str(self.report())
            lines.append(text.split("\n\n", 1)[0])  # the verdict block
            lines.append("bottleneck run directory: %s" % self.run_dir)
        if self.actions:
            lines.append("")
            lines.append("%-60s %8s %12s %12s %7s" % ("Lightning action", "calls", "mean (ms)", "total (s)", "% wall"))
            for name, (calls, total) in sorted(self.actions.items(), key=lambda kv: -kv[1][1]):
                pct = "%.1f" % (100 * total / self.wall_s) if self.wall_s else "-"
                lines.append("%-60s %8d %12.3f %12.3f %7s" % (name[:60], calls, 1000 * total / calls, total, pct))
        return os.linesep.join(lines)

    def teardown(self, stage):
        # also reached without describe() (an exception ended the run)
        self._finish()
        super().teardown(stage=stage)
