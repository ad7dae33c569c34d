"""Record a small CPU training loop with torch.profiler and write, beside the
trace, what prof.key_averages() says, so the Go test can compare the
operator table with PyTorch's own numbers.

usage: python record_cpu.py OUTDIR
"""
import json
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile, record_function

out = sys.argv[1]
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(8 * 14 * 14, 10)
)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(16, 3, 16, 16)
y = torch.randint(0, 10, (16,))

with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    for _ in range(3):
        with record_function("train_step"):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
        prof.step()

prof.export_chrome_trace(os.path.join(out, "trace.json"))
rows = [
    {
        "name": e.key,
        "count": e.count,
        "self_cpu_us": e.self_cpu_time_total,
        "cpu_total_us": e.cpu_time_total,
    }
    for e in prof.key_averages()
]
with open(os.path.join(out, "key_averages.json"), "w") as f:
    json.dump({"torch": torch.__version__, "rows": rows}, f)
