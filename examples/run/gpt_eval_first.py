"""A small GPT-like language model built from a config, trained on
synthetic tokens the way nanoGPT-style trainers do: an evaluation of
EVAL_BATCHES batches under no_grad before the first optimizer.step()
(the initial validation loss), then STEPS training steps. The steps are
optimizer steps, whatever the evaluation's length.

    bottleneck run examples/run/gpt_eval_first.py [STEPS] [EVAL_BATCHES]
"""
import math
import sys
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    vocab_size: int = 96
    block_size: int = 32
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.n_embd), nn.LayerNorm(cfg.n_embd)
        self.attn = nn.MultiheadAttention(cfg.n_embd, cfg.n_head, dropout=cfg.dropout, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(), nn.Linear(4 * cfg.n_embd, cfg.n_embd))
        mask = torch.triu(torch.ones(cfg.block_size, cfg.block_size, dtype=torch.bool), 1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        t = x.size(1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask[:t, :t], need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1))
        x = self.tok(idx) + self.pos(pos)
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss


def get_batch(gen, cfg, batch_size=8):
    # synthetic "text": a noisy repeating pattern the model can learn
    start = torch.randint(0, cfg.vocab_size, (batch_size, 1), generator=gen)
    seq = (start + torch.arange(cfg.block_size + 1)) % cfg.vocab_size
    return seq[:, :-1], seq[:, 1:]


@torch.no_grad()
def estimate_loss(model, cfg, batches):
    model.eval()
    gen = torch.Generator().manual_seed(1)
    total = 0.0
    for _ in range(batches):
        x, y = get_batch(gen, cfg)
        total += model(x, y)[1].item()
    model.train()
    return total / batches


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    eval_batches = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    torch.manual_seed(0)
    cfg = GPTConfig()
    model = GPT(cfg)
    # the validation loss of the untrained (or loaded) model first, the
    # optimizer made after it: the steps lock on the evaluation's forwards
    # at once, and must move to the optimizer's steps when they begin
    before = estimate_loss(model, cfg, eval_batches)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    for step in range(steps):
        x, y = get_batch(gen, cfg)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("initial loss near log(vocab):", abs(before - math.log(cfg.vocab_size)) < 1.0)
    print("trained", steps, "steps")


if __name__ == "__main__":
    main()
