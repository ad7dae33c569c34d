"""Training that stops sending steps: a few short training steps, then
work with no optimizer step at all, which the profiler window must not
record without bound (it closes when steps stop coming):

    eval        30 short training steps, then an evaluation under no_grad
                (model forwards, no optimizer) that lasts SECONDS
    new-optim   a loop that makes a new optimizer every iteration and steps
                it 3 times (fine-tuning a copy per task), for SECONDS

    bottleneck run examples/run/train_then_eval.py eval|new-optim [SECONDS]
"""
import sys
import time

import torch
import torch.nn as nn

torch.manual_seed(0)
mode = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 4))
x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
if mode == "eval":
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(30):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    forwards, end = 0, time.monotonic() + seconds
    with torch.no_grad():
        while time.monotonic() < end:
            for _ in range(50):
                model(x)
            forwards += 50
    print("trained 30 steps, evaluated", "yes" if forwards > 0 else "no")
else:
    iters, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        for _ in range(3):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        iters += 1
    print("new optimizer every iteration:", "ran" if iters > 0 else "did not run")
sys.exit(4)
