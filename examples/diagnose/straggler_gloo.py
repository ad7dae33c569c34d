"""Planted bottleneck: a straggler rank. Two ranks on gloo all-reduce their
gradients every step; rank 1 also sleeps 30 ms per step, so rank 0 waits
for it in the collective.

    bottleneck run -- torchrun --nproc_per_node 2 examples/diagnose/straggler_gloo.py
"""
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 64)
    for step in range(20):
        if rank == 1:
            time.sleep(0.03)  # PLANTED: rank 1 is slow every step
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
