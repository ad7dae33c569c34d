"""A training loop that runs until interrupted (or --seconds pass). Prints
"ready" to stdout once the first step is done, so a test can interrupt it."""
import sys
import time

import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
m = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(m.parameters(), lr=0.01)
t0 = time.time()
step = 0
while time.time() - t0 < seconds:
    opt.zero_grad()
    m(torch.randn(32, 64)).pow(2).mean().backward()
    opt.step()
    step += 1
    if step == 1:
        print("ready", flush=True)
    time.sleep(0.005)
print("finished", step)
