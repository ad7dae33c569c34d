"""Planted cause: framework overhead of tiny ops. A hand-written momentum
optimizer loops over 400 small parameter tensors and issues several
elementwise ops for each, every step.

    bottleneck run examples/diagnose/tiny_ops_update.py

    --fix applies the change the report advises (scripts/predict-vs-measured
    compares its predicted saving with the measured one).
"""
import sys

import torch


class Momentum(torch.optim.Optimizer):
    def __init__(self, params, lr=0.01, momentum=0.9):
        super().__init__(params, {"lr": lr, "momentum": momentum})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            if "--fix" in sys.argv:  # one torch._foreach_* op per update for all parameters
                ps = [p for p in group["params"]]
                bufs = [self.state[p].setdefault("buf", torch.zeros_like(p)) for p in ps]
                torch._foreach_mul_(bufs, group["momentum"])
                torch._foreach_add_(bufs, [p.grad for p in ps])
                torch._foreach_clamp_min_(bufs, -1)
                torch._foreach_clamp_max_(bufs, 1)
                torch._foreach_add_(ps, bufs, alpha=-group["lr"])
                continue
            for p in group["params"]:
                buf = self.state[p].setdefault("buf", torch.zeros_like(p))
                buf.mul_(group["momentum"]).add_(p.grad).clamp_(-1, 1); p.sub_(group["lr"] * buf)  # PLANTED: per-parameter ops


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    params = [torch.randn(16, requires_grad=True) for _ in range(400)]
    opt = Momentum(params)
    x = torch.randn(400 * 16)
    for step in range(30):
        opt.zero_grad()
        (torch.cat(params) * x).pow(2).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
