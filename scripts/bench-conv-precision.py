#!/usr/bin/env python3
"""A training step (forward, backward, SGD with momentum) of torchvision
models in four settings: fp32, bf16 autocast, channels_last, and both.
Prints each setting's median step time over rounds interleaved, and its
speed-up against fp32 (a benchmark, not a test).

The figures behind cpu.native's and gpu.kernels' bf16 advice for
depthwise CNNs (docs/diagnosis.md) come from it:

    python scripts/bench-conv-precision.py --device cpu --batch 16 --size 128 \\
        mobilenet_v3_small efficientnet_b0 shufflenet_v2_x0_5 resnet18 regnet_x_400mf
    python scripts/bench-conv-precision.py --device cpu --batch 16 --size 128 \
        timm:convnext_atto timm:convnextv2_atto timm:inception_next_atto \
        timm:edgenext_xx_small timm:ghostnet_100
    python scripts/bench-conv-precision.py --device cuda --batch 64 --size 224 \\
        --warmup 10 --steps 20 mobilenet_v3_small efficientnet_b0

A model named timm:NAME is timm's (timm.create_model), for example
timm:convnext_atto, whose depthwise convolutions have no stride.

Needs torch and torchvision (and timm for timm: models).
"""
import argparse
import statistics
import time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", help="torchvision.models names, or timm:NAME")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=128, help="image height and width")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps a setting a round")
    ap.add_argument("--steps", type=int, default=6, help="timed steps a setting a round")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    dev = torch.device(a.device)
    x0 = torch.randn(a.batch, 3, a.size, a.size, device=dev)
    y = torch.randint(0, 2, (a.batch,), device=dev)
    loss_fn = torch.nn.CrossEntropyLoss()

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    for name in a.models:
        if name.startswith("timm:"):
            import timm
            model = timm.create_model(name[len("timm:"):], num_classes=2, **({"img_size": a.size} if "vit" in name else {})).to(dev)
        else:
            model = torchvision.models.__dict__[name](num_classes=2).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        times = {}
        for _ in range(a.rounds):
            for mode in ("fp32", "bf16", "channels_last", "bf16+channels_last"):
                layout = torch.channels_last if "channels_last" in mode else torch.contiguous_format
                model.to(memory_format=layout)
                x = x0.to(memory_format=layout)

                def step():
                    with torch.autocast(dev.type, dtype=torch.bfloat16, enabled="bf16" in mode):
                        loss = loss_fn(model(x), y)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()

                for _ in range(a.warmup):
                    step()
                sync()
                t = time.perf_counter()
                for _ in range(a.steps):
                    step()
                sync()
                times.setdefault(mode, []).append((time.perf_counter() - t) / a.steps * 1e3)
        base = statistics.median(times["fp32"])
        print(name, " | ".join("%s %.1f ms (%.2fx)" % (k, statistics.median(v), base / statistics.median(v))
                               for k, v in times.items()), flush=True)


if __name__ == "__main__":
    main()
