"""Planted bottleneck: I/O in the step. A checkpoint is saved after every
optimizer step.

    bottleneck run examples/diagnose/checkpoint_every_step.py
"""
import os
import tempfile

import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(4, 256)
    ema = torch.randn(8 << 20)  # 32 MiB of extra state saved with the model
    path = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    for step in range(20):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "ema": ema, "step": step}, path)  # PLANTED: checkpoint every step
    os.remove(path)


if __name__ == "__main__":
    main()
