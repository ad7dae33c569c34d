"""Planted bottleneck: inference over a dataset one sample at a time
(DataLoader(batch_size=1)). Each op does one sample's work and every op,
module call and Python line is paid per sample; batching the samples
(batch_size=32) does many samples' work in little more time: here 0.38 s
for the 600 samples one at a time, 0.12 s in batches of 32.

    bottleneck run examples/diagnose/one_sample_infer.py
"""
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)).eval()
    data = TensorDataset(torch.randn(600, 16, 512))
    hits = 0
    with torch.inference_mode():
        for (x,) in DataLoader(data, batch_size=1):
            hits += int(model(x).argmax(-1).eq(0).sum())  # PLANTED: one sample per model call
    print("hits", hits)


if __name__ == "__main__":
    main()
