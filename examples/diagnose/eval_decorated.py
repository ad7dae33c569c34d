"""Planted cause: work that does not belong in the step. The training loop
calls an evaluate() function decorated with @torch.no_grad() after every
optimizer step: a pass over the validation set per training step.

    bottleneck run examples/diagnose/eval_decorated.py
"""
import torch


@torch.no_grad()
def evaluate(model, batches):
    model.eval()
    loss = 0.0
    for vx, vy in batches:
        loss += torch.nn.functional.cross_entropy(model(vx), vy).item()
    model.train()
    return loss / len(batches)


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    val = [(torch.randn(256, 256), torch.randint(0, 10, (256,))) for _ in range(10)]
    for step in range(60):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        val_loss = evaluate(model, val)  # PLANTED: validation every step
        if step % 20 == 0:
            print("step", step, "val loss", val_loss)


if __name__ == "__main__":
    main()
