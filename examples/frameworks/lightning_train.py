"""A tiny Lightning training run (a config-built MLP, no downloads) on a
slow Dataset. `python lightning_train.py [RUN_PARENT [FAIL_AT_STEP]]`: with
RUN_PARENT, Trainer(profiler=BottleneckProfiler(dirpath=RUN_PARENT));
without it, a plain Trainer, for `bottleneck run` to compare against. With
FAIL_AT_STEP, training_step raises at that step (a crashing run)."""
import os
import sys

import lightning as L
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slow_data import SlowDataset  # noqa: E402


FAIL_AT_STEP = int(sys.argv[2]) if len(sys.argv) > 2 else -1


class MLP(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        if batch_idx == FAIL_AT_STEP:
            raise RuntimeError("failing at step %d as asked" % batch_idx)
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the tiny model gains nothing from more; fewer threads, steadier timings
    profiler = None
    if len(sys.argv) > 1:
        from bottleneck_profiler.lightning import BottleneckProfiler
        profiler = BottleneckProfiler(dirpath=sys.argv[1], skip_first=3, warmup=1, active=4)
    trainer = L.Trainer(max_steps=16, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, profiler=profiler)
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=8, shuffle=True)
    trainer.fit(MLP(), loader)
    print("trained %d steps" % trainer.global_step)


if __name__ == "__main__":
    main()
