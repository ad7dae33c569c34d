"""Control for the tiny-ops rule: a model with many ops that are each
large (40 wide linear layers on a large batch). Its native ops are real
computation: no framework-overhead finding may appear.

    bottleneck run examples/diagnose/large_ops.py
"""
import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh()) for _ in range(40)])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 256)
    for step in range(30):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


if __name__ == "__main__":
    main()
