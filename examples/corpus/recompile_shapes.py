"""A torch.compile'd model (dynamic=False) fed batches whose sequence
length changes: after warm-up, the recorded steps 5-9 see lengths 16 (seen),
40 (new: recompiles), 16, 56 (new: recompiles), 16. Compilation in a step
after one that ran without it recurs: it is the program's cost, not
start-up. Writes the trace to argv[1] (docs/verdicts.md, corpus case
run_recompile_shapes)."""
import sys

import torch
from torch.profiler import ProfilerActivity, profile, schedule

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Embedding(1000, 64), torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1000))
cmodel = torch.compile(model, dynamic=False)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
lengths = [16, 24, 16, 24, 16, 16, 40, 16, 56, 16]

with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=0, warmup=5, active=5, repeat=1),
             on_trace_ready=lambda p: p.export_chrome_trace(sys.argv[1])) as prof:
    for t in lengths:
        x = torch.randint(0, 1000, (8, t))
        loss = torch.nn.functional.cross_entropy(cmodel(x).reshape(-1, 1000), x.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        prof.step()
