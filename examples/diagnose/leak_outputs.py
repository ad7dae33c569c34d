"""Planted cause: memory that grows every step. The loop keeps each step's
validation predictions, computed with autograd on: every kept tensor holds
its graph and the activations saved for a backward that never comes.

    bottleneck run examples/diagnose/leak_outputs.py
"""
import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, x_val = torch.randn(64, 512), torch.randn(256, 512)
    predictions = []
    for step in range(40):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        predictions.append(model(x_val))  # PLANTED: keeps the graph and activations of every step
    print("kept", len(predictions), "predictions")


if __name__ == "__main__":
    main()
