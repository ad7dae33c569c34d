# Batched inference profiled with with_stack=True and nothing else: no
# schedule, no record_function, no optimizer, no DataLoader. Only the
# outermost module's forward (the "nn.Module: Net_0" Python event) repeats.
import sys

import torch
from torch.profiler import ProfilerActivity, profile


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16 * 32 * 32, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def main(out):
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(8, 3, 32, 32)
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        for _ in range(8):
            model(x)
    prof.export_chrome_trace(out)


if __name__ == "__main__":
    main(sys.argv[1])
