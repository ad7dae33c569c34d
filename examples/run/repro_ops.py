"""A forward-only loop of four ops for `bottleneck repro`: a matmul, a
conv2d, scaled_dot_product_attention and a pointwise GELU, each over ~1 ms
on a CPU. Steps are the outermost nn.Module forward calls."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(512, 512))
        self.conv = nn.Conv2d(16, 32, 3, padding=1)

    def forward(self, x, img, q, k, v):
        y = torch.mm(x, self.w)
        c = self.conv(img)
        a = F.scaled_dot_product_attention(q, k, v)
        g = F.gelu(c)
        return y.sum() + g.sum() + a.sum()


def main():
    torch.manual_seed(0)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    model = Block().eval()
    x = torch.randn(512, 512)
    img = torch.randn(8, 16, 64, 64)
    q, k, v = (torch.randn(4, 8, 256, 64) for _ in range(3))
    with torch.inference_mode():
        total = 0.0
        for _ in range(n):
            total += float(model(x, img, q, k, v))
    print("done", n, "steps")


if __name__ == "__main__":
    main()
