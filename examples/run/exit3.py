"""Trains a few steps, then calls sys.exit(3)."""
import sys

import torch

m = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(12):
    opt.zero_grad()
    m(torch.randn(8, 4)).sum().backward()
    opt.step()
print("exiting with 3")
sys.exit(3)
