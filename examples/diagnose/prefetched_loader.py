"""Planted cause: a DataLoader whose workers cannot keep up, hidden from a
window of early steps by a deep prefetch queue. Four workers read each
image from slow storage (a 16 ms sleep stands for the read: 512 ms a
batch of 32) with prefetch_factor=8; a few seconds of set-up after the
iterator is made (a checkpoint to load, a logger to start) let them fill
the queue with 32 batches. The first ~35 steps take those and never
wait; every step after waits for data, most of it (a step computes for
~15 ms, a batch comes every ~130 ms).

    bottleneck run examples/diagnose/prefetched_loader.py

The run's DataLoader wait, not the window's, is the limiter: more
workers (they sleep, they need no CPU) or faster reads.
"""
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Images(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        time.sleep(0.016)  # PLANTED: the read from slow storage, in 4 workers
        img = np.random.default_rng(i).random((3, 64, 64), dtype=np.float32)
        return torch.from_numpy(img), i % 10


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Images(), batch_size=32, num_workers=4, prefetch_factor=8, persistent_workers=True)
    batches = iter(loader)
    time.sleep(4.5)  # set-up after the iterator starts its workers: the queue fills
    for step in range(100):
        x, y = next(batches)  # waits for data once the queue is drained
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
