"""Planted bottleneck: every step's outputs are concatenated onto one kept
tensor, and each step compares everything kept with everything kept (a
neighbour graph rebuilt from scratch): a step's cost grows with the run,
so the steps get slower as the run goes on and no window of a few steps
is its steady state.

    bottleneck run examples/diagnose/growing_bank.py
"""
import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    bank = torch.empty(0, 128)
    for step in range(150):
        x = torch.randn(32, 128)
        out = model(x)
        loss = out.pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        bank = torch.cat([bank, out.detach()])
        nearest = (bank @ bank.T).argmax(1)  # PLANTED: compares everything kept so far, every step
        del nearest


if __name__ == "__main__":
    main()
