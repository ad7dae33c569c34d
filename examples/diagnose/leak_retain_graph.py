"""Planted cause: memory that grows every step. The loss is summed into a
running total that stays a tensor with its graph, and backward keeps the
graph (retain_graph=True), so every step's activations stay alive.

    bottleneck run examples/diagnose/leak_retain_graph.py
"""
import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 512)
    running = 0.0
    for step in range(40):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward(retain_graph=True)
        opt.step()
        running += loss  # PLANTED: a tensor total keeps every step's graph alive
    print("mean loss", float(running) / 40)


if __name__ == "__main__":
    main()
