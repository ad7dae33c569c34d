"""Record three small training loops with torch.profiler: blocks under
torch.utils.checkpoint (reentrant and not) and the same without it, so the
Go test can check what the operator table counts as recomputed forward.

Each loop runs 3 steps of a model of three Linear -> LayerNorm -> GELU
blocks, the first two checkpointed: 2 blocks x 3 steps = 6 recomputed
aten::linear and 6 aten::layer_norm calls.

usage: python record_checkpoint.py OUTDIR
"""
import os
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile
from torch.utils.checkpoint import checkpoint

out = sys.argv[1]
torch.manual_seed(0)
torch.set_num_threads(1)


class Net(nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(32, 32), nn.LayerNorm(32), nn.GELU()) for _ in range(3))

    def forward(self, x):
        for i, b in enumerate(self.blocks):
            if i < 2 and self.mode != "plain":
                x = checkpoint(b, x, use_reentrant=self.mode == "reentrant")
            else:
                x = b(x)
        return x.sum()


for mode in ("reentrant", "nonreentrant", "plain"):
    net = Net(mode)
    x = torch.randn(8, 32, requires_grad=mode == "reentrant")  # reentrant needs an input with grad
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(3):
            net.zero_grad()
            net(x).backward()
            prof.step()
    prof.export_chrome_trace(os.path.join(out, mode + ".json"))
