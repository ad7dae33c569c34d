"""Planted cause: the training loop augments its batch one sample at a
time with tensor ops (random crop, flip, colour jitter, normalisation)
on the main thread, outside the model, before every step. The model's
forward, backward and update are a minority of the step, so
torch.compile(model) or faster convolutions would not help much.

    bottleneck run examples/diagnose/inline_augment.py
"""
import torch
import torch.nn as nn

MEAN = torch.tensor([0.49, 0.48, 0.45]).view(3, 1, 1)
STD = torch.tensor([0.25, 0.24, 0.26]).view(3, 1, 1)


def augment(batch):
    out = []
    for img in batch:
        i, j = torch.randint(0, 9, (2,)).tolist()
        flip = [2] if torch.rand(()) < 0.5 else []
        out.append(((img[:, i:i + 128, j:j + 128].float().div(255).flip(flip) * (0.8 + 0.4 * torch.rand(3, 1, 1))).clamp(0, 1) - MEAN) / STD)  # PLANTED: per-sample augmentation in the loop
    return torch.stack(out)


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 16, 5, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(16, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randint(0, 256, (256, 3, 136, 136), dtype=torch.uint8)
    labels = torch.randint(0, 10, (256,))
    for step in range(30):
        idx = torch.randint(0, 256, (64,))
        x = augment(images[idx])
        loss = nn.functional.cross_entropy(model(x), labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
