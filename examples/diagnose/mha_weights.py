"""Planted bottleneck: a small vision transformer whose blocks call
nn.MultiheadAttention with its default need_weights=True, so every layer
computes and returns the attention weights with softmax and bmm instead
of the fused scaled_dot_product_attention kernel (need_weights=False).

    bottleneck run examples/diagnose/mha_weights.py
"""
import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, dim=192, heads=6):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.norm1(x)
        a, _ = self.attn(h, h, h)  # PLANTED: the attention weights are computed and thrown away
        x = x + a
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patches = nn.Conv2d(3, 192, 8, 8)
        self.blocks = nn.Sequential(*[Block() for _ in range(3)])
        self.head = nn.Linear(192, 10)

    def forward(self, x):
        x = self.patches(x).flatten(2).transpose(1, 2)
        return self.head(self.blocks(x).mean(1))


def main():
    torch.manual_seed(0)
    model = ViT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    x, y = torch.randn(8, 3, 128, 128), torch.randint(0, 10, (8,))
    for _ in range(25):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
