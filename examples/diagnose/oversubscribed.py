"""Planted bottleneck: CPU oversubscription. The training step uses every
core for its intra-op threads while as many DataLoader workers compute
their samples with torch ops at the same time: twice as many threads as
CPUs compete, and the usual advice (more threads, more workers) would make
it worse.

    bottleneck run examples/diagnose/oversubscribed.py
"""
import os

import torch
from torch.utils.data import DataLoader, Dataset

CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


class FeatureDataset(Dataset):
    def __len__(self):
        return 16 * 48

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        a = torch.randn(160, 160, generator=g)
        for _ in range(6):  # torch work in every worker, all the time
            a = (a @ a).tanh()
        return a.flatten()[:256], i % 4


def main():
    torch.set_num_threads(CPUS)  # PLANTED: every core for the main process...
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(FeatureDataset(), batch_size=16, num_workers=CPUS)  # ...and as many workers
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    main()
