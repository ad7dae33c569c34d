"""Training loops that call their model many times before the first
optimizer.step(), none of those calls a step:

    rollout     a reinforcement-learning loop: 100 forwards without autograd
                (acting on one observation at a time) collect a rollout, then
                4 updates train on it
    per-sample  each batch of 80 samples is fed to the model one sample at a
                time, and the summed loss makes one backward and one update

    bottleneck run examples/run/train_after_forwards.py rollout|per-sample [iterations]
"""
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
mode = sys.argv[1]
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 6
model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
updates = 0
for it in range(iters):
    if mode == "rollout":
        obs = torch.randn(100, 8)
        with torch.no_grad():
            actions = torch.stack([model(o).argmax() for o in obs])
        for batch in obs.split(25):
            loss = model(batch).logsumexp(1).mean() - 0.01 * actions.float().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            updates += 1
    else:
        x, y = torch.randn(80, 8), torch.randint(0, 4, (80,))
        loss = sum(nn.functional.cross_entropy(model(x[i:i + 1]), y[i:i + 1]) for i in range(80))
        opt.zero_grad()
        loss.backward()
        opt.step()
        updates += 1
print(mode, "updates", updates)
