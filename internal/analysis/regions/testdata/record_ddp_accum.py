"""Record rank 0 of a two-rank DistributedDataParallel run on the CPU
(gloo) that accumulates gradients over 3 micro-batches per update.

usage: python record_ddp_accum.py MODE OUT.json
  MODE sync:    every micro-batch's backward all-reduces (no no_sync)
  MODE no_sync: the first two micro-batches run under model.no_sync()
  MODE twice:   the model is called twice per update, one backward
"""
import contextlib
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.profiler import ProfilerActivity, profile, schedule


def run(rank, mode, out, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 32), torch.randint(0, 4, (8,))
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=1, active=3),
                 on_trace_ready=lambda p: rank == 0 and p.export_chrome_trace(out)) as prof:
        for _ in range(4):
            if mode == "twice":
                loss = torch.nn.functional.cross_entropy(model(x) + model(x), y)
                loss.backward()
            else:
                for micro in range(3):
                    ctx = model.no_sync() if mode == "no_sync" and micro < 2 else contextlib.nullcontext()
                    with ctx:
                        torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            opt.zero_grad()
            prof.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(run, args=(sys.argv[1], sys.argv[2], port), nprocs=2)
