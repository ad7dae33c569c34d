"""Planted bottleneck: every step's outputs are concatenated onto one kept
tensor, which each step then searches whole: a step copies and scans
everything the run kept so far, so the steps get slower as the run goes
on and no window of a few steps is its steady state.

    bottleneck run examples/diagnose/growing_bank.py
"""
import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    bank = torch.empty(0, 128)
    for step in range(160):
        x = torch.randn(256, 128)
        out = model(x)
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        bank = torch.cat([bank, out.detach()])
        nearest = (bank @ out.detach().T).argmax(0)  # PLANTED: searches everything kept so far
        del nearest


if __name__ == "__main__":
    main()
