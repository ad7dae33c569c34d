"""A CPU training loop that writes a checkpoint in one step of the
recorded window: that step is an outlier, left out of the steady-state
figures (docs/verdicts.md, corpus case run_checkpoint_outlier)."""
import io
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(128, 512), torch.randn(128, 512)
big = torch.randn(4096, 4096)

with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=6, repeat=1),
             on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as prof:
    for step in range(8):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        if step == 5:
            for _ in range(8):  # a checkpoint: serialise a large state
                torch.save({"model": model.state_dict(), "buf": big}, io.BytesIO())
        prof.step()
