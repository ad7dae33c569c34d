"""Control for the off-step rule: a validation pass like
eval_every_step.py's but smaller (2 batches) and every 50 steps, and one
print of a tensor at the end. Neither belongs to the step, and together
they take a few percent of the run: no off-step finding may appear (with
eval_every_step.py's 10 batches, three passes held 16% of a 150-step run:
not in every step, but not negligible either).

    bottleneck run examples/diagnose/eval_every_50_steps.py
"""
import torch


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))
    val = [(torch.randn(128, 256), torch.randint(0, 10, (128,))) for _ in range(2)]
    for step in range(1, 151):
        model.train()
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        if step % 50 == 0:
            model.eval()
            with torch.no_grad():
                correct = sum((model(vx).argmax(1) == vy).sum().item() for vx, vy in val)
            print("step", step, "val acc", correct / (2 * 128))
    print("final weight", model[2].weight)


if __name__ == "__main__":
    main()
