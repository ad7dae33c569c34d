"""A torch.compile'd MLP profiled from its very first step: the first
recorded step holds the compilation (start-up), the others are the steady
state. Writes the trace to argv[1] (docs/verdicts.md, corpus case
run_cold_compile)."""
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
model = torch.compile(model)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 256), torch.randn(64, 256)

with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=0, active=5, repeat=1),
             on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as prof:
    for _ in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        prof.step()
