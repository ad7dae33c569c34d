"""Planted bottleneck: a background thread that parses JSON log lines in
pure Python all the time. Python runs one thread at a time, so the
training loop waits for the GIL between its ops: 400 steps took 75 s
beside the thread and 0.24 s without it.

    bottleneck run examples/diagnose/gil_thread.py
"""
import json
import threading

import torch
from torch import nn

stop = threading.Event()


def parse_logs():
    line = json.dumps({"step": list(range(50)), "msg": "x" * 100})
    total = 0
    while not stop.is_set():
        total += sum(json.loads(line)["step"])  # PLANTED: pure Python that holds the GIL


def main():
    torch.manual_seed(0)
    threading.Thread(target=parse_logs, daemon=True).start()
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    for _ in range(30):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    stop.set()
    print(f"loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
