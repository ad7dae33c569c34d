"""Planted bottleneck: a hand-written greedy generation loop appends each
new token to its input and runs the model over the whole sequence again,
with no cache of the earlier positions' keys and values: every token
costs more than the one before, so the steps get slower as the run goes
on and the run's cost grows with the square of its length.

    bottleneck run examples/diagnose/generate_no_cache.py
"""
import torch
from torch import nn

VOCAB, DIM = 1000, 256


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = nn.Embedding(512, DIM)
        layer = nn.TransformerEncoderLayer(DIM, 4, 4 * DIM, dropout=0.0, batch_first=True)
        self.body = nn.TransformerEncoder(layer, 4)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, ids):
        n = ids.shape[1]
        h = self.embed(ids) + self.pos(torch.arange(n))
        mask = nn.Transformer.generate_square_subsequent_mask(n)
        return self.head(self.body(h, mask=mask, is_causal=True))  # PLANTED: runs over the whole sequence every call


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    model = TinyLM().eval()
    ids = torch.randint(0, VOCAB, (1, 8))
    with torch.no_grad():
        for _ in range(240):
            next_id = model(ids)[:, -1].argmax(-1, keepdim=True)
            ids = torch.cat([ids, next_id], dim=1)
    print("generated", ids.shape[1] - 8, "tokens")


if __name__ == "__main__":
    main()
