"""Planted bottleneck: host-bound (Python). Every step builds a feature in a
pure-Python loop before a tiny model runs. The loop (~40 ms) is many times
the interpreter's 5 ms switch interval: the sampler waits for the GIL, and
takes it where the main thread lets it go (the backward's C++), so a loop
of ~10 ms lost most of its samples to the line after it in half the runs.

    bottleneck run examples/diagnose/python_preprocess.py
"""
import math

import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64)
    for step in range(20):
        feats = [math.sin(i * 0.001) * math.cos(i * 0.002) for i in range(400000)]  # PLANTED: Python loop in the step
        scale = 1.0 + sum(feats) * 1e-6
        opt.zero_grad()
        model(x * scale).pow(2).mean().backward()
        opt.step()


if __name__ == "__main__":
    main()
