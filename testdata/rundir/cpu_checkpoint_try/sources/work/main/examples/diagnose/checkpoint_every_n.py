"""Planted bottleneck: a checkpoint of the model and the optimizer's state
(about 50 MB) written every 10 steps. The recorded window of a few steps
holds none of them, but every 10th step takes several times the median,
and over the run the writes cost about a third of the step time.

    bottleneck run examples/diagnose/checkpoint_every_n.py
"""
import os
import tempfile

import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(6)])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    x = torch.randn(4, 1024)  # a small batch: the write stands out of a ~35 ms step however fast the disk
    ckpt = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    for step in range(1, 151):
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, ckpt)  # PLANTED: a checkpoint every 10 steps, in the loop
    os.remove(ckpt)
    os.rmdir(os.path.dirname(ckpt))


if __name__ == "__main__":
    main()
