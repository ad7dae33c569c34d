"""Planted bottleneck: CPU compute-bound (native ops). Every step multiplies
large matrices on the CPU.

    bottleneck run examples/diagnose/cpu_matmul.py
"""
import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    a = torch.randn(768, 768)
    b = torch.randn(768, 768)
    model = torch.nn.Linear(768, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(20):
        with torch.no_grad():
            feats = a @ b @ b @ b  # PLANTED: large matrix products on the CPU
        opt.zero_grad()
        model(feats[:16]).pow(2).mean().backward()
        opt.step()


if __name__ == "__main__":
    main()
