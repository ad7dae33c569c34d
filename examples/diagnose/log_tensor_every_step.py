"""Planted cause: work that does not belong in the step. Every step the
program formats whole tensors (the logits and a weight) into a log line:
torch's tensor printing costs far more than the small step itself.

    bottleneck run examples/diagnose/log_tensor_every_step.py
"""
import io

import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(96, 64), torch.randint(0, 10, (96,))
    log = io.StringIO()  # a log kept in memory: the cost is the formatting, not the file
    for step in range(150):
        opt.zero_grad()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss} logits {out} w {model[0].weight}", file=log)  # PLANTED: tensors logged every step
    print(len(log.getvalue()), "characters logged")


if __name__ == "__main__":
    main()
