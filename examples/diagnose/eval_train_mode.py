"""Planted cause: an evaluation loop that forgot model.eval(). It runs
under torch.inference_mode(), but the model stays in training mode, so
every forward draws dropout's random masks (and BatchNorm normalises by
the batch's statistics instead of its running ones, which changes the
outputs). No backward runs, so the diagnosis names model.eval() first;
with it a batch took 133 ms instead of 212 here.

    bottleneck run examples/diagnose/eval_train_mode.py
"""
import torch
import torch.nn as nn


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Dropout(0.2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.Dropout(0.2),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    correct = 0
    with torch.inference_mode():
        for i in range(40):
            x, y = torch.randn(16, 3, 48, 48), torch.randint(0, 10, (16,))
            out = model(x)  # PLANTED: the model is still in training mode
            correct += int((out.argmax(1) == y).sum())
    print("accuracy", correct / (40 * 16))


if __name__ == "__main__":
    main()
