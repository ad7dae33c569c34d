"""A GAN trained with 5 critic steps per generator step (WGAN-style): the
critic's optimizer steps first, but an iteration ends with the
generator's step, so a step is one iteration.

    bottleneck run examples/run/gan_critic.py 30
"""
import sys

import torch

torch.manual_seed(0)
G = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32))
D = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-4)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-4)
real = torch.randn(64, 32)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
for it in range(n):
    fake = G(torch.randn(64, 16))
    for _ in range(5):
        loss_d = D(fake.detach()).mean() - D(real).mean()
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
    loss_g = -D(fake).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
print("trained", n, "iterations")
