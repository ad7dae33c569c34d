"""A training loop inside the legacy torch.autograd.profiler.profile
behind a flag, off unless asked for, as facebookresearch/dlrm's
dlrm_s_pytorch.py runs it (--enable-profiling). A profiler made with
enabled=False starts nothing, so bottleneck must record its own window.

    python disabled_profiler.py [--enable-profiling]
"""
import sys

import torch


def main():
    model = torch.nn.Linear(32, 32)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    prof = torch.autograd.profiler.profile("--enable-profiling" in sys.argv, record_shapes=True)
    with prof:
        for _ in range(12):
            opt.zero_grad()
            model(torch.randn(16, 32)).sum().backward()
            opt.step()
    if prof.enabled:
        print(prof.key_averages().table(row_limit=3))
    print("done")


if __name__ == "__main__":
    main()
