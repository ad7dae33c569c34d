"""A tiny Hugging Face Trainer run: a BERT built from a config (2 layers,
hidden size 32, no weights downloaded) classifying random token sequences
from a slow Dataset. `python hf_train.py OUTPUT_DIR [--bottleneck] [--evaluate]`:
with --bottleneck, callbacks=[BottleneckCallback()] (run directory
OUTPUT_DIR/bottleneck); without it, a plain Trainer for `bottleneck run`.
With --evaluate, an evaluation of 32 samples every 8 steps."""
import os
import sys
import time

import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments


class SlowTokens(torch.utils.data.Dataset):
    def __init__(self, n=512, seq=16, vocab=100):
        g = torch.Generator().manual_seed(0)
        self.ids = torch.randint(0, vocab, (n, seq), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        end = time.perf_counter() + 0.005  # tokenisation stand-in
        while time.perf_counter() < end:
            pass
        return {"input_ids": self.ids[i], "labels": self.labels[i]}


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the tiny model gains nothing from more; fewer threads, steadier timings
    cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=32, num_labels=2)
    evaluate = "--evaluate" in sys.argv
    ev = dict(eval_strategy="steps", eval_steps=8, per_device_eval_batch_size=8) if evaluate else {}
    args = TrainingArguments(output_dir=out, max_steps=16, per_device_train_batch_size=8, logging_strategy="no",
                             save_strategy="no", report_to=[], use_cpu=True, dataloader_num_workers=0,
                             disable_tqdm=True, **ev)
    callbacks = []
    if "--bottleneck" in sys.argv:
        from bottleneck_profiler.huggingface import BottleneckCallback
        callbacks.append(BottleneckCallback(skip_first=3, warmup=1, active=4))
    trainer = Trainer(model=BertForSequenceClassification(cfg), args=args, train_dataset=SlowTokens(),
                      eval_dataset=SlowTokens(n=32) if evaluate else None, callbacks=callbacks)
    trainer.train()
    print("trained %d steps" % trainer.state.global_step)


if __name__ == "__main__":
    main()
