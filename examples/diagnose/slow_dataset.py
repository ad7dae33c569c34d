"""Planted bottleneck: input-bound. Each sample takes 5 ms to produce and the
DataLoader runs without workers, so the training step waits for data.

    bottleneck run examples/diagnose/slow_dataset.py

    --fix applies the change the report advises (scripts/predict-vs-measured
    compares its predicted saving with the measured one).
"""
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __len__(self):
        return 8 * 20

    def __getitem__(self, i):
        time.sleep(0.005)  # PLANTED: slow sample loading in the main process
        return torch.randn(64), i % 4


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    dataset = SlowDataset()
    if "--fix" in sys.argv:  # the advice: __getitem__ made cheaper (the samples made once, up front)
        dataset = [dataset[i] for i in range(len(dataset))]
    loader = DataLoader(dataset, batch_size=8, num_workers=0)
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    main()
