# A GPT-2 (6 layers, 512 wide, from its config) trained with the Hugging Face
# Trainer on random tokens, its arguments parsed by HfArgumentParser as the
# library's example scripts do. Prints the median step time (steps 30 on).
import statistics, time
import torch
from transformers import (GPT2Config, GPT2LMHeadModel, HfArgumentParser, Trainer,
                          TrainerCallback, TrainingArguments)

class Tokens(torch.utils.data.Dataset):
    def __init__(self, n, length, vocab):
        self.data = torch.randint(0, vocab, (n, length), generator=torch.Generator().manual_seed(0))
    def __len__(self):
        return len(self.data)
    def __getitem__(self, i):
        return {"input_ids": self.data[i], "labels": self.data[i].clone()}

class StepTimes(TrainerCallback):
    def __init__(self):
        self.t, self.times = None, []
    def on_step_end(self, args, state, control, **kw):
        now = time.perf_counter()
        if self.t is not None:
            self.times.append(now - self.t)
        self.t = now

(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
model = GPT2LMHeadModel(GPT2Config(n_layer=6, n_head=8, n_embd=512, vocab_size=16384, n_positions=512))
cb = StepTimes()
Trainer(model=model, args=args, train_dataset=Tokens(8192, 256, 16384), callbacks=[cb]).train()
if torch.cuda.is_available():
    torch.cuda.synchronize()
print("median step ms %.2f over %d steps" % (1e3 * statistics.median(cb.times[30:]), len(cb.times[30:])))
