"""Planted cause: Python garbage collection in the step. The program holds
a large vocabulary of Python objects and calls gc.collect() after every
optimizer step: each full collection walks every live object.

    bottleneck run examples/diagnose/gc_collect_every_step.py

    --fix applies the change the report advises (scripts/predict-vs-measured
    compares its predicted saving with the measured one).
"""
import gc
import sys

import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    vocab = {"tok%d" % i: [i, (i, i + 1)] for i in range(100_000)}  # many live Python objects
    model = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 128)
    for step in range(30):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        if "--fix" not in sys.argv or step % 10 == 9:
            gc.collect()  # PLANTED: a full collection every step (--fix: every 10)
    print(len(vocab), "tokens")


if __name__ == "__main__":
    main()
