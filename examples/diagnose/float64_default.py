"""Planted bottleneck: the compute runs in float64. A physics-style MLP
whose author set float64 globally "for accuracy": every matmul and tanh
runs at half float32's speed on a CPU (far less on most GPUs).

    bottleneck run examples/diagnose/float64_default.py

    --fix applies the change the report advises (scripts/predict-vs-measured
    compares its predicted saving with the measured one).
"""
import sys

import torch

if "--fix" not in sys.argv:
    torch.set_default_dtype(torch.float64)  # PLANTED: every tensor and parameter is float64


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.Tanh(), torch.nn.Linear(256, 256), torch.nn.Tanh(),
                                torch.nn.Linear(256, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(2048, 32)
    y = torch.sin(x.sum(1, keepdim=True))
    for step in range(40):
        opt.zero_grad()
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
