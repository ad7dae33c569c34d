"""A training loop that runs its own torch.profiler with a schedule and
exports a Chrome trace, as the PyTorch tutorials show. Only one Kineto
profiler can be active at a time: under bottleneck the program's own
profiler must win and its trace must be written.

    python own_profiler.py OUT_DIR
"""
import os
import sys

import torch
import torch.profiler as tp


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    model = torch.nn.Linear(32, 32)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def export(prof):
        path = os.path.join(out, "own-%d.pt.trace.json" % prof.step_num)
        prof.export_chrome_trace(path)
        print("exported", os.path.basename(path), flush=True)

    with tp.profile(activities=[tp.ProfilerActivity.CPU], schedule=tp.schedule(wait=1, warmup=1, active=2),
                    on_trace_ready=export) as prof:
        for _ in range(12):
            opt.zero_grad()
            model(torch.randn(16, 32)).sum().backward()
            opt.step()
            prof.step()
    print("done")


if __name__ == "__main__":
    main()
