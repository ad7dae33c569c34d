"""Planted bottleneck (CUDA): launch-bound. Hundreds of tiny element-wise
kernels per step, each shorter than its launch.

    bottleneck run examples/diagnose/gpu_tiny_kernels.py
"""
import sys

import torch


def main():
    if not torch.cuda.is_available():
        sys.exit("needs CUDA")
    torch.manual_seed(0)
    dev = torch.device("cuda")
    w = torch.randn(256, device=dev, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.001)
    for step in range(30):
        opt.zero_grad()
        y = w
        for _ in range(300):
            y = y * 0.999 + 0.001  # PLANTED: hundreds of tiny kernels per step
        y.sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
