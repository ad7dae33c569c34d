"""A CPU training loop fed by a slow DataLoader, for `bottleneck diff`
tests: without workers the step waits for every batch (input-bound);
with --workers 2 the loading overlaps the compute.

    bottleneck run -o base examples/diff/loader_train.py
    bottleneck run -o new examples/diff/loader_train.py --workers 2
    bottleneck diff base new
"""
import argparse
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __len__(self):
        return 8 * 60

    def __getitem__(self, i):
        time.sleep(0.002)  # slow sample loading: 16 ms a batch of 8
        return torch.randn(512), i % 10


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=0)  # PLANTED: 0 -> 2
    args = p.parse_args()
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    w = torch.randn(2048, 2048)
    loader = DataLoader(SlowDataset(), batch_size=8, num_workers=args.workers)
    for x, y in loader:
        opt.zero_grad()
        h = model[0](x)
        for _ in range(3):
            h = h @ w  # compute of about the loading's size
        torch.nn.functional.cross_entropy(model[2](model[1](h)), y).backward()
        opt.step()


if __name__ == "__main__":
    main()
