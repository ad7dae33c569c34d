"""Hugging Face integration: `Trainer(..., callbacks=[BottleneckCallback()])`.

Records the training loop (on_train_begin .. on_train_end) with bottleneck's
agent: the agent detects the steps (optimizer.step() of the Trainer's
optimizer), records a torch.profiler window of steady-state steps, samples
Python, and writes the run directory <output_dir>/bottleneck[-rank<N>] with
its reports when training ends."""
import os

from transformers import TrainerCallback

from ._api import Report, profile


class BottleneckCallback(TrainerCallback):
    """out: the run directory (default <output_dir>/bottleneck, one per
    process when there are several); settings are profile()'s keywords."""

    def __init__(self, out=None, **settings):
        self.out = out
        self._settings = settings
        self._session = None
        self.run_dir = None

    def on_train_begin(self, args, state, control, **kwargs):
        if self._session is not None:
            return
        out = self.out or os.path.join(args.output_dir or ".", "bottleneck")
        if getattr(args, "world_size", 1) > 1:
            out += "-rank%d" % args.process_index
        self._session = profile(out=out, **self._settings)
        self._session.__enter__()
        self.run_dir = self._session.run_dir

    def on_train_end(self, args, state, control, **kwargs):
        if self._session is None:
            return
        session, self._session = self._session, None
        session.__exit__(None, None, None)

    def report(self):
        """The bottleneck report of the training run (a Report)."""
        if self.run_dir is None or self._session is not None:
            raise RuntimeError("BottleneckCallback: training has not run to its end")
        return Report(self.run_dir)
