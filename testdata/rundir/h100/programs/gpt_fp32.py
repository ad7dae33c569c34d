"""GPT-style LM trained in fp32 on a GPU (no autocast, no TF32): synthetic tokens."""
import torch, torch.nn as nn, torch.nn.functional as F

class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1 = nn.LayerNorm(d); self.ln2 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, h, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))

class GPT(nn.Module):
    def __init__(self, vocab=8192, d=768, h=12, n=8, T=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, d); self.pos = nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block(d, h) for _ in range(n))
        self.ln = nn.LayerNorm(d); self.head = nn.Linear(d, vocab, bias=False)
    def forward(self, idx):
        T = idx.shape[1]
        mask = torch.triu(torch.ones(T, T, device=idx.device, dtype=torch.bool), 1)
        x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))
        for b in self.blocks:
            x = b(x, mask)
        return self.head(self.ln(x))

def main():
    torch.manual_seed(0)
    dev = "cuda"
    model = GPT().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(60):
        idx = torch.randint(0, 8192, (16, 512), device=dev)
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), idx[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.3f}", flush=True)

if __name__ == "__main__":
    main()
