"""Planted bottleneck: host-bound (Python). Every step builds a feature in a
pure-Python loop before a tiny model runs.

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
        feats = [math.sin(i * 0.001) * math.cos(i * 0.002) for i in range(100000)]  # PLANTED: Python loop in the step
        scale = 1.0 + sum(feats) * 1e-6
        opt.zero_grad()
        model(x * scale).pow(2).mean().backward()
        opt.step()


if __name__ == "__main__":
    main()
