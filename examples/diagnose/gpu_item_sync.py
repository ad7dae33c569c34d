"""Planted bottleneck (CUDA): sync-bound. loss.item() every step makes the
host wait for the device before it does its own per-step work (statistics
of the batch, on the CPU), which would otherwise run while the device
computes: host and device take turns instead of overlapping.

A step's device work is large on any GPU; the host's work is timed to
take half as long, so that without the sync it fits under the device's
work: the sync is what the step waits for, not the host. (Timed to take as
long, the host's work plus its launches and optimizer outlasted the
device's step once the sync was gone: on an H100 and an H200 the verdict
was host-bound, cutting the host's work replayed to save more than
removing the sync, and the fixed program's step was the host's.)

    bottleneck run examples/diagnose/gpu_item_sync.py

--fix applies the change the report advises (scripts/predict-vs-measured
compares the two): the loss is summed on the device and read once at the
end, so the host's work overlaps the device's.
"""
import sys
import time

import numpy as np
import torch


def host_work(rng, seconds):
    """The host's own per-step work: statistics over batches of values, for
    a time set by the device's step (a time, not an amount of work, so
    that every run of the example, fixed or not, does the same)."""
    end = time.perf_counter() + seconds
    acc = 0.0
    while time.perf_counter() < end:
        acc += float(np.sort(rng.standard_normal(4096))[2048])
    return acc


def main():
    if not torch.cuda.is_available():
        sys.exit("needs CUDA")
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(4)]).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)

    def step(x):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    # Enough device work a step that the host's launches are a small part
    # of it on any GPU (400 GFLOP: 8 ms on an H100, 50 ms on a T4), and
    # half as much host work: forward and backward timed here on the
    # device, alone, since optimizer steps are the program's steps.
    x = torch.randn(16384, 1024, device=dev)
    for _ in range(3):  # warm-up: cuBLAS handles, workspaces, lazy loading
        model(x).pow(2).mean().backward()
    times = []
    for _ in range(10):  # the device's time, by CUDA events: the same in every run
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        model(x).pow(2).mean().backward()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    device_s = sorted(times)[len(times) // 2]
    rng = np.random.default_rng(0)

    fix = "--fix" in sys.argv
    total = 0.0
    device_total = torch.zeros((), device=dev)
    for _ in range(40):
        loss = step(x)
        if fix:  # the advice: keep the sum on the device, read it once
            device_total += loss.detach()
        else:
            total += loss.item()  # PLANTED: host-device sync every step
        total += host_work(rng, device_s / 2)  # could run while the device computes the step
    print(round(total + float(device_total), 3))


if __name__ == "__main__":
    main()
