"""A CPU training loop that evaluates every 5 steps, inside the recorded
window: 3 of its 16 recorded steps hold an evaluation pass (forwards
under torch.no_grad, no backward) and are outliers; together they are a
large share of the loop's time (docs/verdicts.md, corpus case
eval_every_5)."""
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
val = [(torch.randn(256, 256), torch.randint(0, 10, (256,))) for _ in range(12)]


def evaluate():
    model.eval()
    correct = 0
    with torch.no_grad():
        for vx, vy in val:
            correct += (model(vx).argmax(1) == vy).sum().item()
    model.train()
    return correct


with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=16, repeat=1),
             on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as prof:
    for step in range(18):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % 5 == 4:
            evaluate()
        prof.step()
