"""Planted cause: work that does not belong in the step. After every
optimizer step the program evaluates the model on a validation set under
torch.no_grad(): several forward passes per training step, none of which
trains anything.

    bottleneck run examples/diagnose/eval_every_step.py

    --fix applies the change the report advises (scripts/predict-vs-measured
    compares its predicted saving with the measured one).
"""
import sys

import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    val = [(torch.randn(256, 256), torch.randint(0, 10, (256,))) for _ in range(10)]
    for step in range(60):
        model.train()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if "--fix" in sys.argv and step % 10 != 0:
            continue  # the advice: evaluate every N steps
        model.eval()
        correct = 0
        with torch.no_grad():
            for vx, vy in val:
                correct += (model(vx).argmax(1) == vy).sum().item()  # PLANTED: validation every step
        if step % 20 == 0:
            print("step", step, "val acc", correct / (10 * 256))


if __name__ == "__main__":
    main()
