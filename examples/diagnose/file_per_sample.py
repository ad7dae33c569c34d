"""Planted bottleneck: a dataset stored one sample per .pt file, read with
torch.load in __getitem__ by a DataLoader without workers. The step waits
for thousands of small file reads; workers overlap them, and one packed
file (a saved tensor, or np.memmap) read once removes them.

    bottleneck run examples/diagnose/file_per_sample.py
"""
import os
import tempfile

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class SampleFiles(Dataset):
    def __init__(self, root):
        self.paths = sorted(os.path.join(root, f) for f in os.listdir(root))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        sample = torch.load(self.paths[i])  # PLANTED: one file read per sample
        return sample["x"], sample["y"]


def main():
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as root:
        for i in range(2000):
            torch.save({"x": torch.randn(256), "y": i % 10}, os.path.join(root, f"{i:05d}.pt"))
        # A small model on one intra-op thread: the reads must dominate even on
        # a loaded machine, where tiny ops stall at OpenMP barriers otherwise.
        torch.set_num_threads(1)
        model = nn.Linear(256, 10)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in DataLoader(SampleFiles(root), batch_size=64, shuffle=True):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
