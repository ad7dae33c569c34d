"""Training in two stages, as fine-tuning recipes do: the head alone with
one optimizer, then the whole model with a new one (the first kept, as a
program that trains layer by layer keeps one per layer). The second
optimizer's steps take over the steps once the first has stopped.

    bottleneck run examples/run/train_in_stages.py [HEAD_STEPS] [FULL_STEPS]
"""
import sys

import torch

torch.manual_seed(0)
torch.set_num_threads(1)
head_steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
full_steps = int(sys.argv[2]) if len(sys.argv) > 2 else 40
body = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU())
head = torch.nn.Linear(256, 10)
x, y = torch.randn(256, 256), torch.randint(0, 10, (256,))

head_opt = torch.optim.SGD(head.parameters(), lr=0.01)
for _ in range(head_steps):  # stage 1: the body frozen
    with torch.no_grad():
        features = body(x)
    loss = torch.nn.functional.cross_entropy(head(features), y)
    head_opt.zero_grad()
    loss.backward()
    head_opt.step()

full_opt = torch.optim.SGD(list(body.parameters()) + list(head.parameters()), lr=0.001)
for _ in range(full_steps):  # stage 2: the whole model
    loss = torch.nn.functional.cross_entropy(head(body(x)), y)
    full_opt.zero_grad()
    loss.backward()
    full_opt.step()
print("trained", head_steps, "+", full_steps, "steps")
