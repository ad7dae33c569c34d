"""A DataLoader whose workers cannot keep up: each item costs a Python loop
(CPU) or a sleep in SlowDataset.__getitem__, with 2 worker processes under
a given start method, so the training step waits for data.

    python slow_dataset_workers.py --start-method spawn --cost cpu
    python slow_dataset_workers.py --cost fast --hidden 1024   # workers keep up: not input-bound
    python slow_dataset_workers.py --pool          # plus a multiprocessing Pool (not DataLoader)
"""
import argparse
import multiprocessing as mp
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __init__(self, n, cost, work):
        self.n = n
        self.cost = cost
        self.work = work

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.cost == "cpu":
            acc = 0
            for k in range(self.work):  # the line that costs the workers' time
                acc += k * k % 7
        elif self.cost == "sleep":
            time.sleep(self.work * 1e-7)
            acc = 0
        else:
            acc = 0
        return torch.full((16,), float(i % 5 + acc % 3)), i % 2


def square(v):
    return v * v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--start-method", default="fork")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cost", choices=("cpu", "sleep", "fast"), default="cpu")
    ap.add_argument("--work", type=int, default=60000, help="loop iterations (cpu) or 0.1 us units (sleep) per item")
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--hidden", type=int, default=256, help="width of the model (a larger step)")
    ap.add_argument("--persistent", action="store_true")
    ap.add_argument("--pool", action="store_true", help="also run a multiprocessing Pool")
    args = ap.parse_args()
    ctx = mp.get_context(args.start_method)
    if args.pool:
        with ctx.Pool(2) as pool:
            print("pool", sum(pool.map(square, range(2000))))
    batch = 4
    dl = DataLoader(SlowDataset(args.batches * batch, args.cost, args.work), batch_size=batch,
                    num_workers=args.workers, multiprocessing_context=ctx if args.workers else None,
                    persistent_workers=args.persistent and args.workers > 0)
    # the step is a small CPU model: one thread leaves the CPUs to the workers
    torch.set_num_threads(1)
    torch.manual_seed(0)
    h = args.hidden
    model = torch.nn.Sequential(torch.nn.Linear(16, h), torch.nn.ReLU(), torch.nn.Linear(h, h), torch.nn.ReLU(),
                                torch.nn.Linear(h, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    seen = 0
    for x, y in dl:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        seen += len(y)
    print("samples", seen, "checksum", round(float(sum(p.detach().sum() for p in model.parameters())), 3))


if __name__ == "__main__":
    main()
