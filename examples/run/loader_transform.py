"""A training loop whose DataLoader loads in the main process (no
workers) through a module transform, as torchvision's Normalize is: the
model the steps call is Net, not the transform.

    python loader_transform.py [STEPS]
"""
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Normalize(nn.Module):
    def forward(self, x):
        return (x - 0.5) / 0.25


class Images(Dataset):
    def __init__(self, n):
        self.x = torch.rand(n, 64)
        self.transform = Normalize()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.transform(self.x[i]), i % 10


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(x)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Images(16 * steps), batch_size=16, num_workers=0)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("trained", steps, "steps")


if __name__ == "__main__":
    main()
