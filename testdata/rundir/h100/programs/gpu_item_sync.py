"""Planted bottleneck (CUDA): sync-bound. loss.item() every step makes the
host wait for the device before it can queue the next step.

    bottleneck run examples/diagnose/gpu_item_sync.py
"""
import sys

import torch


def main():
    if not torch.cuda.is_available():
        sys.exit("needs CUDA")
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(6)]).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    x = torch.randn(512, 2048, device=dev)
    total = 0.0
    for step in range(30):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        total += loss.item()  # PLANTED: host-device sync every step
        for _ in range(20):  # host work that could overlap with the device
            torch.empty(1, device=dev)
    print(total)


if __name__ == "__main__":
    main()
