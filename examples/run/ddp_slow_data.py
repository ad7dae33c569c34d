"""DDP training on gloo where one rank is slow: its Dataset sleeps in
__getitem__ (the data path), or with --slow-compute it runs extra matmuls
each step (its compute path), so it reaches every all-reduce late and the
other ranks wait for it. For a multi-node run on one machine:

    bottleneck run --job-dir /tmp/job -- torchrun --nnodes 2 --node-rank 0 \
        --nproc-per-node 2 --master-addr 127.0.0.1 --master-port 29600 \
        ddp_slow_data.py --slow-rank 3 --slow-ms 40
    (and the same with --node-rank 1)
"""
import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset


class Batches(Dataset):
    def __init__(self, n, delay_s):
        self.n, self.delay_s = n, delay_s

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay_s:
            time.sleep(self.delay_s)  # the slow rank's input: a slow disk, a slow decode
        return torch.randn(32), torch.randn(4)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--slow-ms", type=float, default=40)
    ap.add_argument("--slow-compute", type=int, default=0,
                    help="instead: the slow rank runs this many extra 256x256 matmuls per step (its compute path)")
    ap.add_argument("--kill-rank", type=int, default=-1,
                    help="this rank dies by SIGKILL after its steps (as an out-of-memory kill would end it)")
    ap.add_argument("--kill-after", type=float, default=5,
                    help="... this many seconds after the others' last step")
    args = ap.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    slow = rank == args.slow_rank
    delay = args.slow_ms / 1000 if slow and not args.slow_compute else 0
    extra = args.slow_compute if slow else 0
    w = torch.randn(256, 256)
    # one sample per batch: the delay is paid once per step
    loader = DataLoader(Batches(args.steps, delay), batch_size=1)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        for _ in range(extra):
            w = torch.tanh(w @ w)  # the slow rank's extra compute
        opt.step()
    dist.barrier()
    print("rank %d of %d done" % (rank, dist.get_world_size()))
    dist.destroy_process_group()
    if rank == args.kill_rank:
        sys.stdout.flush()
        time.sleep(args.kill_after)
        os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    main()
