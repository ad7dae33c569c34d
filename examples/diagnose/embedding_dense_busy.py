"""Control for embedding_dense_adam.py: a dense gradient on an embedding
table that each batch mostly touches. A 50,000-row table, 1,024 samples
of 20 ids a step: about 17,000 distinct rows, a third of the table, so a
sparse gradient would hold nearly as many rows as the dense one
(measured here on 2 CPUs, median step: 9.8 ms dense, 8.4 ms with
sparse=True and SparseAdam, 3.8 ms with Adam(fused=True)). The update
is the cause, not the gradient's layout: no sparse-gradient advice.

    bottleneck run examples/diagnose/embedding_dense_busy.py
"""
import torch
import torch.nn as nn


class Recommender(nn.Module):
    def __init__(self, rows=50_000, dim=64):
        super().__init__()
        self.table = nn.EmbeddingBag(rows, dim, mode="sum")
        self.mlp = nn.Sequential(nn.Linear(dim, 128), nn.ReLU(), nn.Linear(128, 1))

    def forward(self, idx, offsets):
        return self.mlp(self.table(idx, offsets)).squeeze(-1)


def main():
    torch.manual_seed(0)
    model = Recommender()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(30):
        idx = torch.randint(0, 50_000, (1024 * 20,))
        offsets = torch.arange(0, 1024 * 20, 20)
        loss = nn.functional.binary_cross_entropy_with_logits(model(idx, offsets), torch.rand(1024))
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
