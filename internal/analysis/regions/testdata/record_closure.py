"""Record a small CPU training loop whose optimizer takes a closure (as
Lightning's automatic optimization does): forward and backward run
inside Optimizer.step, then the update.

usage: python record_closure.py OUT.json
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
x, y = torch.randn(256, 64), torch.randint(0, 10, (256,))


def closure():
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    return loss


with profile(activities=[ProfilerActivity.CPU]) as prof:
    for _ in range(4):
        opt.step(closure)
        prof.step()
prof.export_chrome_trace(sys.argv[1])
