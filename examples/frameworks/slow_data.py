"""The data the Lightning example trains on: a Dataset whose items take
5 ms each to produce (Python work in __getitem__, loaded without workers),
so the step waits on its input and the verdict is input-bound."""
import time

import torch


class SlowDataset(torch.utils.data.Dataset):
    def __init__(self, n=512, dim=32):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, dim, generator=g)
        self.y = torch.randint(0, 4, (n,), generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        end = time.perf_counter() + 0.005  # decoding / augmentation stand-in
        while time.perf_counter() < end:
            pass
        return self.x[i], self.y[i]
