"""Planted cause: Python garbage collection in the step, triggered by
allocation. Every step keeps thousands of small Python records (a metrics
history of dicts and lists) next to a large live heap: the collector's
full collections, started by those allocations, walk all of it.

    bottleneck run examples/diagnose/gc_churn.py
"""
import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    index = [[i, str(i)] for i in range(600_000)]  # a large live heap built at start-up
    model = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 128)
    history = []
    for step in range(40):
        opt.zero_grad()
        out = model(x)
        out.pow(2).mean().backward()
        opt.step()
        history.extend([{"step": step, "row": r, "vals": [r, step]} for r in range(20_000)])  # PLANTED: 40k objects kept per step
    print(len(index), len(history))


if __name__ == "__main__":
    main()
