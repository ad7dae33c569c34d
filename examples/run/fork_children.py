"""Forks after the profiled window, the ways programs do: a bare os.fork()
child that prints without flushing and exits with sys.exit(3), a
multiprocessing fork pool, and DataLoader fork workers. Under plain python
it finishes in about a second; a profiler inherited by the children must
not make it hang.

    python fork_children.py --steps 12 --fork-at 8
"""
import argparse
import multiprocessing as mp
import os
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset


def square(v):
    return v * v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--fork-at", type=int, default=8)
    a = ap.parse_args()
    model = torch.nn.Linear(16, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(a.steps):
        opt.zero_grad()
        model(torch.randn(8, 16)).sum().backward()
        opt.step()
        if step == a.fork_at:
            pid = os.fork()
            if pid == 0:
                print("child %d computed %d" % (step, sum(range(1000))))  # not flushed: exit must flush it
                sys.exit(3)
            _, status = os.waitpid(pid, 0)
            print("child exit status %d" % os.waitstatus_to_exitcode(status), flush=True)
            with mp.get_context("fork").Pool(2) as pool:
                print("pool %d" % sum(pool.map(square, range(10))), flush=True)
            data = TensorDataset(torch.arange(32.0).reshape(16, 2))
            loader = DataLoader(data, batch_size=4, num_workers=2, multiprocessing_context="fork")
            print("loader %d" % int(sum(b[0].sum().item() for b in loader)), flush=True)
    print("done")


if __name__ == "__main__":
    main()
