"""A tiny Lightning training run (a config-built MLP, no downloads) on a
slow Dataset. `python lightning_train.py [RUN_PARENT [FAIL_AT_STEP]] [--validate]`:
with RUN_PARENT, Trainer(profiler=BottleneckProfiler(dirpath=RUN_PARENT));
without it, a plain Trainer, for `bottleneck run` to compare against. With
FAIL_AT_STEP, training_step raises at that step (a crashing run). With
--validate, a validation pass of 4 batches every 8 steps."""
import os
import sys

import lightning as L
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slow_data import SlowDataset  # noqa: E402


VALIDATE = "--validate" in sys.argv
ARGS = [a for a in sys.argv[1:] if a != "--validate"]
FAIL_AT_STEP = int(ARGS[1]) if len(ARGS) > 1 else -1


class MLP(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))

    def training_step(self, batch, batch_idx):
        if batch_idx == FAIL_AT_STEP:
            raise RuntimeError("failing at step %d as asked" % batch_idx)
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the tiny model gains nothing from more; fewer threads, steadier timings
    profiler = None
    if ARGS:
        from bottleneck_profiler.lightning import BottleneckProfiler
        profiler = BottleneckProfiler(dirpath=ARGS[0], skip_first=3, warmup=1, active=4)
    val = {}
    if VALIDATE:
        val = dict(val_check_interval=8, limit_val_batches=4, num_sanity_val_steps=0)
    trainer = L.Trainer(max_steps=16, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, profiler=profiler, **val)
    loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=8, shuffle=True)
    val_loader = torch.utils.data.DataLoader(SlowDataset(), batch_size=8) if VALIDATE else None
    trainer.fit(MLP(), loader, val_loader)
    print("trained %d steps" % trainer.global_step)


if __name__ == "__main__":
    main()
