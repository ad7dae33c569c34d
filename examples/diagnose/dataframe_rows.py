"""Planted bottleneck: a tabular Dataset that keeps a pandas DataFrame and
reads one row of it per sample in __getitem__ (df.iloc[i]), in a
DataLoader without workers. Each row read builds a pandas Series, which
costs far more than the row's 64 numbers: the step waits for data.
Converting the columns to one tensor in __init__ and indexing it removes
the cost (--tensors does, the control: no DataFrame advice then).

    bottleneck run examples/diagnose/dataframe_rows.py [--tensors]
"""
import argparse

import numpy as np
import pandas as pd
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = [f"f{i}" for i in range(64)]


class Table(Dataset):
    def __init__(self, n, tensors):
        rng = np.random.default_rng(0)
        self.df = pd.DataFrame(rng.random((n, len(FEATURES))), columns=FEATURES)
        self.df["label"] = rng.integers(0, 2, n)
        self.x = torch.from_numpy(self.df[FEATURES].to_numpy(np.float32)) if tensors else None
        self.y = torch.from_numpy(self.df["label"].to_numpy(np.float32)) if tensors else None

    def __len__(self):
        return len(self.df)

    def __getitem__(self, i):
        if self.x is not None:
            return self.x[i], self.y[i]
        row = self.df.iloc[i]
        x = torch.tensor(row[FEATURES].to_numpy(np.float32))  # PLANTED: a pandas row read per sample
        return x, torch.tensor(float(row["label"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tensors", action="store_true", help="convert the columns once (the control)")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    loader = DataLoader(Table(20_000, args.tensors), batch_size=128, shuffle=True)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == (150 if args.tensors else 60):
            break


if __name__ == "__main__":
    main()
