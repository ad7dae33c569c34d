"""DataLoader with worker processes under a given start method. The dataset
class is defined in this script, so the spawn start method has to re-import
it in each worker as __mp_main__ (pickling by reference to __main__).

    python dataloader_workers.py --start-method spawn --workers 2 --persistent --pin-memory
"""
import argparse
import multiprocessing as mp
import os
import time

import torch
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __init__(self, n, delay):
        self.n = n
        self.delay = delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        time.sleep(self.delay)
        return torch.full((8,), float(i)), i % 2


def square(v):
    return v * v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--start-method", default="fork")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--persistent", action="store_true")
    ap.add_argument("--pin-memory", action="store_true")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--n", type=int, default=48)
    ap.add_argument("--delay", type=float, default=0.002)
    ap.add_argument("--pool", action="store_true", help="also run a multiprocessing pool")
    ap.add_argument("--loader-per-epoch", action="store_true", help="make a new DataLoader for each epoch")
    args = ap.parse_args()
    ctx = mp.get_context(args.start_method)
    data = SlowDataset(args.n, args.delay)

    def loader():
        return DataLoader(data, batch_size=4, num_workers=args.workers,
                          multiprocessing_context=ctx if args.workers else None,
                          persistent_workers=args.persistent and args.workers > 0, pin_memory=args.pin_memory)

    dl = loader()
    model = torch.nn.Linear(8, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    seen = 0
    for _ in range(args.epochs):
        if args.loader_per_epoch:
            dl = loader()
        for x, y in dl:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            seen += len(y)
    if args.pool:
        with ctx.Pool(2) as pool:
            print("pool", sum(pool.map(square, range(10))))
    print("batches ok, samples", seen, "pid", os.getpid())


if __name__ == "__main__":
    main()
