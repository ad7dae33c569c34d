"""A training loop that calls its module once per time step before each
optimizer.step(): a hand-written RNN cell unrolled over the sequence
(20 time steps, or argv[2]). The steps are the optimizer's, not the
cell's calls (docs/run.md, "Steps").
"""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
cell = nn.RNNCell(8, 16)
head = nn.Linear(16, 2)
opt = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 12
seq = int(sys.argv[2]) if len(sys.argv) > 2 else 20
for step in range(n):
    x, y = torch.randn(seq, 4, 8), torch.randint(0, 2, (4,))
    h = torch.zeros(4, 16)
    for t in range(seq):
        h = cell(x[t], h)
    loss = nn.functional.cross_entropy(head(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained", n, "steps")
