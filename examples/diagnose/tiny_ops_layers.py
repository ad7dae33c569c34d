"""Planted cause: framework overhead of tiny ops. The model applies 150
tiny linear layers one after another in a Python loop: each op does a few
hundred multiply-adds, so the step is mostly PyTorch's per-op dispatch.

    bottleneck run examples/diagnose/tiny_ops_layers.py
"""
import torch


class Tower(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(150))

    def forward(self, x):
        for layer in self.layers:
            x = torch.tanh(layer(x))  # PLANTED: one tiny layer at a time
        return x


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = Tower()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, foreach=True)
    x = torch.randn(4, 8)
    for step in range(30):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


if __name__ == "__main__":
    main()
