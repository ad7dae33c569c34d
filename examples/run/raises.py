"""Trains a few steps, then raises an exception (exit status 1)."""
import torch


def fail(step):
    raise RuntimeError("planted failure at step %d" % step)


m = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for step in range(12):
    opt.zero_grad()
    m(torch.randn(8, 4)).sum().backward()
    opt.step()
fail(12)
