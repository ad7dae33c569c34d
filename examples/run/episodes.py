"""An RL-style loop: a policy called once per environment step on one
observation, and one update per episode; episode i lasts 5 + i steps, so
the steps (episodes) do more items as the run goes on.

    bottleneck run examples/run/episodes.py 40
"""
import sys

import torch

torch.manual_seed(0)
policy = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
for episode in range(n):
    logps = []
    obs = torch.randn(4)
    for t in range(5 + episode):
        probs = torch.softmax(policy(obs), -1)
        action = int(torch.multinomial(probs, 1))
        logps.append(torch.log(probs[action]))
        obs = torch.randn(4)
    loss = -torch.stack(logps).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print("trained", n, "episodes")
