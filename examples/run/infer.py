"""An inference loop without optimizer or DataLoader: steps come from the
outermost nn.Module forward calls (the documented fallback)."""
import sys

import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).eval()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
with torch.inference_mode():
    total = 0.0
    for i in range(n):
        x = torch.randn(32, 64)
        total += float(model(x).sum())
print("inference done", n, "batches")
