"""A model of element-wise layers on large activations (eager): each op reads and writes HBM."""
import torch, torch.nn as nn

class Mix(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d); self.scale = nn.Parameter(torch.ones(d)); self.proj = nn.Linear(d, d)
    def forward(self, x):
        h = self.norm(x)
        h = h * torch.sigmoid(h) * self.scale
        h = torch.nn.functional.dropout(h, 0.1, self.training)
        h = h + 0.5 * torch.tanh(h) - h.pow(2) * 0.01
        return x + self.proj(h)

def main():
    torch.manual_seed(0)
    model = nn.Sequential(*[Mix(256) for _ in range(8)]).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(64, 4096, 256, device="cuda")
    for step in range(80):
        loss = model(x).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    print(loss.item())

if __name__ == "__main__":
    main()
