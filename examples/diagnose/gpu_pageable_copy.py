"""Planted bottleneck (CUDA): copy-bound. Every step copies a large batch
from pageable host memory to the device, synchronously.

    bottleneck run examples/diagnose/gpu_pageable_copy.py

--fix applies the change the report advises (scripts/predict-vs-measured
compares the two): the host tensor is pinned once and copied with
non_blocking=True.
"""
import sys

import torch


def main():
    if not torch.cuda.is_available():
        sys.exit("needs CUDA")
    torch.manual_seed(0)
    dev = torch.device("cuda")
    fix = "--fix" in sys.argv
    host = torch.randn(64, 1024, 1024)  # 256 MiB in pageable memory
    if fix:  # the advice: pinned memory, an asynchronous copy
        host = host.pin_memory()
    model = torch.nn.Linear(1024, 16).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    for step in range(30):
        x = host.to(dev, non_blocking=fix)  # PLANTED: big pageable host-to-device copy every step
        opt.zero_grad()
        model(x[:, :8]).pow(2).mean().backward()
        opt.step()


if __name__ == "__main__":
    main()
