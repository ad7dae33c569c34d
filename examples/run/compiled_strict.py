"""A model compiled with torch.compile, trained with the strict stance
that turns any recompilation into an error, as a program that must never
recompile in production would. Exits 0 and prints the compile count.

    python compiled_strict.py --steps 14
"""
import argparse
import warnings

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=14)
    a = ap.parse_args()
    warnings.simplefilter("default")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    compiled = torch.compile(model, backend="eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(16, 32)
    for step in range(a.steps):
        opt.zero_grad()
        compiled(x).sum().backward()
        opt.step()
        if step == 0:
            torch.compiler.set_stance("fail_on_recompile")
    frames = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    print("unique graphs %d" % frames)


if __name__ == "__main__":
    main()
