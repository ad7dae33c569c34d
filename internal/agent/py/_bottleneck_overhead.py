"""The agent's cost measured inside one run (a benchmark, not a feature).

With BOTTLENECK_AB_BLOCK=N in the environment, the agent's work at the step
boundaries (step statistics, the --live view, the window's checks) and its
sampler are switched off for every other block of N steps, and each step's
time is kept under its block's state. scripts/bench-run-overhead.sh
(MODE=ab) compares the two: the same process, the same memory layout and
steps minutes apart, where two processes on a shared machine differ in
speed by more than the agent costs. What stays on in both states: the
hooks that count the steps (an optimizer post-hook and the call into the
agent, a few microseconds a step) and the collector's callbacks."""

import json
import os

ENV = "BOTTLENECK_AB_BLOCK"


class OverheadAB(object):
    def __init__(self, block, sampler):
        self.block = block
        self.sampler = sampler
        self.on = True
        self.steps = {True: [], False: []}  # [step, seconds] by state

    @classmethod
    def from_env(cls, sampler):
        try:
            block = int(os.environ.get(ENV, "0"))
        except ValueError:
            return None
        return cls(block, sampler) if block > 0 else None

    def step(self, n, dur):
        """Keeps step n's time (dur, None for the first) under its block's
        state and returns whether the agent works at this boundary and in
        the step that follows: its work at a boundary is in the next
        step's time."""
        if dur is not None:
            self.steps[self.on].append((n, dur))
        on = (n // self.block) % 2 == 0
        if on != self.on:
            self.on = on
            if self.sampler is not None:
                if on:
                    self.sampler.resume()
                else:
                    self.sampler.pause()
        return on

    def write(self, path):
        with open(path, "w") as f:
            json.dump({"block": self.block, "on": self.steps[True], "off": self.steps[False]}, f)
