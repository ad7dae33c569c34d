# A training loop profiled the common way: torch.profiler.profile() as a
# plain context manager around the loop, no schedule and no prof.step(), so
# the trace has no ProfilerStep#N marks. Its Dataset does Python work per
# sample in the main process (num_workers=0).
import math
import sys

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.data import DataLoader, Dataset


class Features(Dataset):
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        # per-sample feature work in Python
        feats = [math.sin(i * 0.37 + j) * math.cos(j * 0.11) for j in range(64) for _ in range(20)][:64]
        x = torch.tensor(feats)
        return x, int(x.sum() > 0)


def main(out, iterations):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(Features(), batch_size=32, shuffle=True)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for i, (x, y) in enumerate(loader):
            if i == iterations:
                break
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    prof.export_chrome_trace(out)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12)
