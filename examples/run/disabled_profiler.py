"""A training loop inside the legacy torch.autograd.profiler.profile
behind a flag, off unless asked for, as facebookresearch/dlrm's
dlrm_s_pytorch.py runs it (--enable-profiling). A profiler made with
enabled=False starts nothing, so bottleneck must record its own window.
As dlrm_s_pytorch.py does, the update runs inside the program's own
record_function: the agent's window then ends inside it (the step hook
runs inside optimizer.step()), where torch's stop warns
"collection.cpp:671] Warning: Optimizer.step#SGD.step", a line the
program never printed.

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
            loss = model(torch.randn(16, 32)).sum()
            with torch.autograd.profiler.record_function("backward and update"):
                opt.zero_grad()
                loss.backward()
                opt.step()
    if prof.enabled:
        print(prof.key_averages().table(row_limit=3))
    print("done")


if __name__ == "__main__":
    main()
