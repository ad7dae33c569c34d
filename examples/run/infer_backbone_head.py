"""An inference loop that calls a backbone and then a head, each an
outermost nn.Module call, for every request: a step is one request (the
backbone's calls), not one module call. With "grad" after the number of
requests it runs with autograd on, as programs that forget
torch.inference_mode() do: the head's input then carries the backbone's
autograd history, and the steps are still one per request.

    bottleneck run examples/run/infer_backbone_head.py 40 [grad]
"""
import sys

import torch
import torch.nn as nn

backbone = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU()).eval()
head = nn.Linear(256, 2).eval()
n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
grad = len(sys.argv) > 2 and sys.argv[2] == "grad"
with torch.enable_grad() if grad else torch.inference_mode():
    votes = 0
    for i in range(n):
        x = torch.randn(8, 64)
        votes += int(head(backbone(x)).argmax(1).sum())
print("inference done", n, "requests")
