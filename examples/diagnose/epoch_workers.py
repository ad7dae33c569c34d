"""Planted bottleneck: many short epochs over an in-memory dataset, with
worker processes that the DataLoader starts and stops again at every
epoch (persistent_workers=False, the default): starting them costs more
than the batches they load.

    bottleneck run examples/diagnose/epoch_workers.py
"""
import torch
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(512, 64), torch.randint(0, 10, (512,)))
    loader = DataLoader(data, batch_size=64, shuffle=True, num_workers=2)
    model = torch.nn.Linear(64, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(40):
        for x, y in loader:  # PLANTED: the workers start again for every 8-batch epoch
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
