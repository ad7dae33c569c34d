"""An evaluation loop that forgot torch.no_grad(): its forwards run with
autograd on, fewer than the 64 a training loop may make before its first
optimizer.step(), and each request takes a while (time.sleep stands for
decoding it). No backward runs, so after a second the steps lock on
the forwards (docs/run.md, "Steps").

    bottleneck run examples/run/infer_grad.py 40
"""
import sys
import time

import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
correct = 0
for i in range(n):
    time.sleep(0.1)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    correct += int((model(x).argmax(1) == y).sum())
print("evaluated", n, "batches")
