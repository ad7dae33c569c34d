"""Knowledge distillation: a frozen teacher runs under torch.no_grad() in
every step and its logits feed the student's loss: the teacher's forward is
part of the step, not an evaluation pass.

    bottleneck run examples/diagnose/distill_teacher.py
"""
import torch
import torch.nn.functional as F


def mlp(width, depth):
    layers = [torch.nn.Linear(256, width), torch.nn.ReLU()]
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    teacher = mlp(1024, 3).eval()
    student = mlp(256, 1)
    opt = torch.optim.SGD(student.parameters(), lr=0.01)
    x, y = torch.randn(128, 256), torch.randint(0, 10, (128,))
    for step in range(60):
        with torch.no_grad():
            t_logits = teacher(x)  # the teacher's forward: part of the step
        s_logits = student(x)
        kd = F.kl_div(F.log_softmax(s_logits, -1), F.softmax(t_logits, -1), reduction="batchmean")
        loss = 0.5 * kd + 0.5 * F.cross_entropy(s_logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print("step", step, "loss", round(loss.item(), 3))


if __name__ == "__main__":
    main()
