"""Planted bottleneck: the training DataLoader, though it has 4 workers,
cannot keep up: each sample waits 3 ms on a slow read (a network file
system, simulated by a sleep). The evaluation loader beside it, run every
20 steps over a small in-memory set, has num_workers=0 and costs little.
The input finding must judge the training loader (its wait), name it,
and never tell it num_workers=0 (the evaluation loader's setting).

    bottleneck run examples/diagnose/two_loaders.py
"""
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset


class RemoteShards(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x, self.y = torch.randn(n, 128, generator=g), torch.randint(0, 10, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.003)  # PLANTED: a slow read per sample, 4 workers are not enough
        return self.x[i], self.y[i]


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    train = DataLoader(RemoteShards(64 * 60), batch_size=64, shuffle=True, num_workers=4, persistent_workers=True)
    evaluation = DataLoader(TensorDataset(torch.randn(256, 128), torch.randint(0, 10, (256,))), batch_size=128)
    for step, (x, y) in enumerate(train, 1):
        model.train()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            model.eval()
            with torch.no_grad():
                correct = sum((model(vx).argmax(1) == vy).sum().item() for vx, vy in evaluation)
            print("step", step, "val acc", correct / 256)


if __name__ == "__main__":
    main()
