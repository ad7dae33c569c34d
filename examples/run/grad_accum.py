"""Gradient accumulation over 16 DataLoader batches per optimizer.step():
the first 8 batches lock the steps on the DataLoader (no optimizer has
stepped yet); the optimizer's first step moves them to optimizer steps,
one per 16 batches.

    bottleneck run examples/run/grad_accum.py [UPDATES]
"""
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
updates, accum = (int(sys.argv[1]) if len(sys.argv) > 1 else 32), 16
ds = TensorDataset(torch.randn(8 * accum * updates, 16), torch.randint(0, 4, (8 * accum * updates,)))
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
done = 0
for i, (x, y) in enumerate(DataLoader(ds, batch_size=8)):
    (nn.functional.cross_entropy(model(x), y) / accum).backward()
    if (i + 1) % accum == 0:
        opt.step()
        opt.zero_grad()
        done += 1
print("updates", done)
