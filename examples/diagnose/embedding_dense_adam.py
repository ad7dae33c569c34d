"""Planted cause: a dense gradient on a large embedding table. A
recommendation-style model looks up 20 rows per sample in a 200,000-row
table; the table's gradient is dense (sparse=False, the default), so every
step the backward builds a gradient the size of the whole table and Adam
updates all 200,000 rows, though a batch touches about 5,000 of them.

    bottleneck run examples/diagnose/embedding_dense_adam.py

The fix: nn.EmbeddingBag(..., sparse=True) with torch.optim.SparseAdam for
the table and Adam for the rest.

The control, a table each batch mostly touches:

    bottleneck run examples/diagnose/embedding_dense_adam.py --rows 50000 --samples 1024

50,000 rows, 1,024 samples of 20 ids a step: about 17,000 distinct rows,
a third of the table, so a sparse gradient would hold nearly as many rows
as the dense one (measured here on 2 CPUs, median step: 9.8 ms dense,
8.4 ms with sparse=True and SparseAdam, 3.8 ms with Adam(fused=True)).
The update is the cause there, not the gradient's layout: no
sparse-gradient advice.
"""
import argparse

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
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--samples", type=int, default=256, help="samples of 20 ids a step")
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Recommender(rows=args.rows)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    n = args.samples
    for step in range(args.steps):
        idx = torch.randint(0, args.rows, (n * 20,))
        offsets = torch.arange(0, n * 20, 20)
        loss = nn.functional.binary_cross_entropy_with_logits(model(idx, offsets), torch.rand(n))
        opt.zero_grad()
        loss.backward()
        opt.step()  # PLANTED: Adam over every row of a dense embedding gradient


if __name__ == "__main__":
    main()
