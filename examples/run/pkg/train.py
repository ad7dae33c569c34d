"""Run with -m (relative import of .helpers): python -m pkg.train"""
import sys

import torch

from .helpers import scale

m = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(int(scale(6))):
    opt.zero_grad()
    m(torch.randn(8, 4)).sum().backward()
    opt.step()
print("module", __name__, __spec__.name, sys.argv[1:])
