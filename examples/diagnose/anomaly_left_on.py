"""Planted bottleneck: autograd's anomaly detection left on after chasing
a NaN. It records a Python stack for every op of the forward and checks
every backward output for NaN (a device sync per backward node on a GPU).

    bottleneck run examples/diagnose/anomaly_left_on.py

    --fix applies the change the report advises (scripts/predict-vs-measured
    compares its predicted saving with the measured one).
"""
import sys

import torch
import torch.nn.functional as F


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    torch.autograd.set_detect_anomaly("--fix" not in sys.argv)  # PLANTED: debugging left on
    layers = torch.nn.ModuleList([torch.nn.Linear(128, 128) for _ in range(12)])
    head = torch.nn.Linear(128, 10)
    opt = torch.optim.SGD(list(layers.parameters()) + list(head.parameters()), lr=0.01)
    for step in range(120):
        x = torch.randn(64, 128)
        y = torch.randint(0, 10, (64,))
        for layer in layers:
            x = F.gelu(layer(x)) + x
        loss = F.cross_entropy(head(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
