"""Planted bottleneck: gradient accumulation under DistributedDataParallel
without model.no_sync(). Two ranks on gloo accumulate 4 micro-batches per
optimizer update, and every micro-batch's backward all-reduces the
gradients, where the update needs them once: with no_sync() around the
first three the step took 168 -> 92 ms on a 2-core machine.

    bottleneck run -- torchrun --nproc_per_node 2 examples/diagnose/ddp_accumulate.py
"""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

MICRO_BATCHES = 4


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(dist.get_rank())
    torch.set_num_threads(1)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(30):
        for micro in range(MICRO_BATCHES):
            x, y = torch.randn(16, 512), torch.randint(0, 10, (16,))
            loss = torch.nn.functional.cross_entropy(model(x), y) / MICRO_BATCHES
            loss.backward()  # PLANTED: every micro-batch all-reduces the gradients
        opt.step()
        opt.zero_grad()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
