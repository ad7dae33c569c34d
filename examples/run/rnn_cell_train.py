"""A training loop that calls its module once per time step before each
optimizer.step(): a hand-written RNN cell unrolled over the sequence
(20 time steps, or argv[2]). The steps are the optimizer's, not the
cell's calls (docs/run.md, "Steps"). With argv[3] "manual" there is no
optimizer: the update is written by hand (as pytorch/tutorials' char-RNN
does), and a step is an iteration, from one sequence's first cell call to
the next.
"""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
cell = nn.RNNCell(8, 16)
head = nn.Linear(16, 2)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 12
seq = int(sys.argv[2]) if len(sys.argv) > 2 else 20
manual = len(sys.argv) > 3 and sys.argv[3] == "manual"
if not manual:
    opt = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
for step in range(n):
    x, y = torch.randn(seq, 4, 8), torch.randint(0, 2, (4,))
    h = torch.zeros(4, 16)
    for t in range(seq):
        h = cell(x[t], h)
    loss = nn.functional.cross_entropy(head(h), y)
    if manual:
        loss.backward()
        with torch.no_grad():
            for p in list(cell.parameters()) + list(head.parameters()):
                p.add_(p.grad, alpha=-0.1)
                p.grad = None
        continue
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained", n, "steps")
