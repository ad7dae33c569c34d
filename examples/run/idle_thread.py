"""A training loop next to a thread that only waits (like a rich/tqdm
refresh thread blocked in Condition.wait): the Python tables must rank the
loop's on-CPU time, with the waiting thread listed apart.

    python idle_thread.py --steps 30
"""
import argparse
import threading

import torch


def refresh(cv):
    with cv:
        cv.wait(60)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    a = ap.parse_args()
    cv = threading.Condition()
    threading.Thread(target=refresh, args=(cv,), name="refresh-thread", daemon=True).start()
    model = torch.nn.Linear(64, 64)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    total = 0
    for _ in range(a.steps):
        opt.zero_grad()
        model(torch.randn(64, 64)).sum().backward()
        opt.step()
        total += sum(i * i for i in range(30000))  # Python work on the CPU
    print("done %d" % (total > 0))


if __name__ == "__main__":
    main()
