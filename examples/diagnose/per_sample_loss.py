"""Planted cause: the loss is written as a loop over the batch's rows (a
focal loss, one softmax, index, power and log per sample), so the step
runs thousands of tiny ops, and the backward as many again. The model's
own forward is a few large ops; a larger batch or torch.compile(model)
would not touch the loop. Written over the whole batch
(softmax(logits, 1).gather(1, y[:, None])), the step is ~12x faster.

    bottleneck run examples/diagnose/per_sample_loss.py
"""
import torch
import torch.nn as nn


def focal_loss(logits, y, gamma=2.0):
    losses = []
    for i in range(logits.shape[0]):
        p = torch.softmax(logits[i], dim=0)[y[i]]; losses.append(-(1 - p) ** gamma * torch.log(p + 1e-8))  # PLANTED: per-row loss
    return torch.stack(losses).mean()


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(30):
        x, y = torch.randn(128, 128), torch.randint(0, 10, (128,))
        loss = focal_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
