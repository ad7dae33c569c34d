"""Planted bottleneck: a graph network's message passing written as a
gather by edge source and a sum into edge targets,
out.index_add_(0, dst, h[src]). The backward of h[src] (index_put_ with
accumulate) is slow on a CPU, and gathers and scatters, not matmuls, take
most of the step; one sparse matmul (A @ h with A the adjacency in CSR)
computes the same 2-3x faster.

    bottleneck run examples/diagnose/message_passing.py
"""
import torch
from torch import nn

NODES, EDGES, DIM, CLASSES = 20000, 150000, 64, 5


class GraphLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.lin = nn.Linear(2 * dim, dim)

    def forward(self, h, src, dst, deg):
        agg = torch.zeros_like(h).index_add_(0, dst, h[src])  # PLANTED: gather and scatter by edge, one row at a time
        return torch.relu(self.lin(torch.cat([h, agg / deg], 1)))


class GraphNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([GraphLayer(DIM) for _ in range(3)])
        self.out = nn.Linear(DIM, CLASSES)

    def forward(self, h, src, dst, deg):
        for layer in self.layers:
            h = layer(h, src, dst, deg)
        return self.out(h)


def main():
    torch.manual_seed(0)
    x = torch.randn(NODES, DIM)
    src, dst = torch.randint(0, NODES, (EDGES,)), torch.randint(0, NODES, (EDGES,))
    deg = torch.zeros(NODES).index_add_(0, dst, torch.ones(EDGES)).clamp(min=1).unsqueeze(1)
    y = torch.randint(0, CLASSES, (NODES,))
    model = GraphNet()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(30):
        loss = nn.functional.cross_entropy(model(x, src, dst, deg), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("loss", round(loss.item(), 3))


if __name__ == "__main__":
    main()
