"""Two-rank DDP training on the gloo backend, for
    torchrun --nproc_per_node 2 ddp_gloo.py --steps 12
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(args.steps):
        opt.zero_grad()
        model(torch.randn(16, 32)).sum().backward()
        opt.step()
    dist.barrier()
    print("rank %d of %d done (RANK=%s)" % (rank, dist.get_world_size(), os.environ.get("RANK")))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
