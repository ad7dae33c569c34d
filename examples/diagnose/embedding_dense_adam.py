"""Planted cause: a dense gradient on a large embedding table. A
recommendation-style model looks up 20 rows per sample in a 200,000-row
table; the table's gradient is dense (sparse=False, the default), so every
step the backward builds a gradient the size of the whole table and Adam
updates all 200,000 rows, though a batch touches about 5,000 of them.

    bottleneck run examples/diagnose/embedding_dense_adam.py

The fix: nn.EmbeddingBag(..., sparse=True) with torch.optim.SparseAdam for
the table and Adam for the rest.
"""
import torch
import torch.nn as nn


class Recommender(nn.Module):
    def __init__(self, rows=200_000, dim=64):
        super().__init__()
        self.table = nn.EmbeddingBag(rows, dim, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, idx, offsets):
        return self.mlp(self.table(idx, offsets)).squeeze(-1)


def main():
    torch.manual_seed(0)
    model = Recommender()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(20):
        idx = torch.randint(0, 200_000, (256 * 20,))
        offsets = torch.arange(0, 256 * 20, 20)
        loss = nn.functional.binary_cross_entropy_with_logits(model(idx, offsets), torch.rand(256))
        opt.zero_grad()
        loss.backward()
        opt.step()  # PLANTED: Adam over every row of a dense embedding gradient


if __name__ == "__main__":
    main()
