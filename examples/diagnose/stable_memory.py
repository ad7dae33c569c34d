"""Control for memory growth and garbage collection: a large footprint that
stays the same (a 256 MiB buffer allocated at start-up, a model with large
activations), losses kept as Python floats, and one gc.collect() at
start-up. No memory-growth or GC finding may appear.

    bottleneck run examples/diagnose/stable_memory.py
"""
import gc

import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    table = torch.zeros(64 << 20)  # 256 MiB, allocated once
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 512)
    gc.collect()  # once, after start-up
    losses = []
    for step in range(40):
        opt.zero_grad()
        loss = model(x).pow(2).mean() + 0 * table[step]
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("mean loss", sum(losses) / len(losses))


if __name__ == "__main__":
    main()
