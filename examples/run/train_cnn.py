"""A small CNN training loop on synthetic data (CPU or CUDA).

    bottleneck run examples/run/train_cnn.py --steps 20 --batch-size 16
"""
import argparse
import time

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(4)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return self.fc(self.pool(x).flatten(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--log", default="", help="write one line per step: step start_unix duration_s")
    ap.add_argument("--sync-every-step", action="store_true", help="call loss.item() every step")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads(N) (0: torch's default)")
    args = ap.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dev = torch.device(args.device)
    model = Net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(args.batch_size, 3, args.size, args.size, device=dev)
    y = torch.randint(0, 10, (args.batch_size,), device=dev)
    log = open(args.log, "w") if args.log else None
    t_start = time.time()
    for step in range(args.steps):
        t0 = time.time()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if args.sync_every_step:
            loss.item()
        if log:
            if dev.type == "cuda":
                torch.cuda.synchronize()
            log.write("%d %.6f %.6f\n" % (step, t0, time.time() - t0))
    if log:
        log.close()
    print("trained %d steps in %.2fs, final loss %.4f" % (args.steps, time.time() - t_start, loss.item()))


if __name__ == "__main__":
    main()
