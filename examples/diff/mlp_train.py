"""A small CPU training loop for `bottleneck diff` tests: run it twice with
the same arguments (no significant change expected) or with a planted
change (--wide doubles the first layer's matmul; --item adds a .item()
call to every step; --add plants one line in the loop: gc a gc.collect()
call, save a torch.save checkpoint to a temporary file, item every
sample's class scores read to Python one .item() at a time).

    bottleneck run -o base examples/diff/mlp_train.py
    bottleneck run -o new examples/diff/mlp_train.py --wide
    bottleneck run -o gc examples/diff/mlp_train.py --add gc
    bottleneck diff base new
"""
import argparse
import gc
import os
import tempfile

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--wide", action="store_true", help="double the first layer's width")
    p.add_argument("--item", action="store_true", help="read the loss with .item() every step")
    p.add_argument("--add", choices=["gc", "save", "item"], help="plant one costly line in the loop")
    p.add_argument("--steps", type=int, default=60)
    args = p.parse_args()
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    hidden = 2048 if args.wide else 1024  # PLANTED (--wide): twice the matmul
    model = torch.nn.Sequential(torch.nn.Linear(512, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(512, 512)
    y = torch.randint(0, 10, (512,))
    losses, scores = [], []
    ckpt = os.path.join(tempfile.mkdtemp(), "ckpt.pt")
    for _ in range(args.steps):
        opt.zero_grad()
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        if args.item:
            losses.append(loss.item())  # PLANTED (--item): a host read every step
        if args.add == "gc":
            gc.collect()  # PLANTED (--add gc): a full collection every step
        elif args.add == "save":
            torch.save(model.state_dict(), ckpt)  # PLANTED (--add save): a checkpoint every step
        elif args.add == "item":
            scores = [[v.item() for v in row] for row in logits]  # PLANTED (--add item): every score read with .item()
    if os.path.exists(ckpt):
        os.remove(ckpt)
    os.rmdir(os.path.dirname(ckpt))
    print("done", len(losses), len(scores))


if __name__ == "__main__":
    main()
