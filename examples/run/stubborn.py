"""Ignores the first Ctrl-C (catches KeyboardInterrupt and keeps going):
the second Ctrl-C, sent to bottleneck, kills it."""
import time

import torch

m = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
print("ready", flush=True)
t0 = time.time()
while time.time() - t0 < 120:
    try:
        opt.zero_grad()
        m(torch.randn(4, 8)).sum().backward()
        opt.step()
        time.sleep(0.01)
    except KeyboardInterrupt:
        print("ignoring Ctrl-C", flush=True)
