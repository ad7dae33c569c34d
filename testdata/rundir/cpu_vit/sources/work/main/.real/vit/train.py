# lucidrains/vit-pytorch's ViT (vit_pytorch 1.26.14 from PyPI, MIT), as its
# README builds one, trained on CIFAR-10-shaped random images: 32 x 32,
# patch 4 (65 tokens), dim 256, depth 6, 8 heads, MLP 512, dropout 0.1.
import sys, time
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from vit_pytorch import ViT

torch.manual_seed(0)
steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
model = ViT(image_size=32, patch_size=4, num_classes=10, dim=256, depth=6, heads=8, mlp_dim=512, dropout=0.1, emb_dropout=0.1)
opt = torch.optim.Adam(model.parameters(), lr=3e-4)
data = TensorDataset(torch.randn(64 * steps, 3, 32, 32), torch.randint(0, 10, (64 * steps,)))
loader = DataLoader(data, batch_size=64, shuffle=True)
times = []
for x, y in loader:
    t = time.perf_counter()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t)
times.sort()
print(f"median step {1000 * times[len(times) // 2]:.0f} ms")
