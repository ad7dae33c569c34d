"""An MLP trained with torch.compile on a GPU, bf16 autocast."""
import torch, torch.nn as nn

def main():
    torch.manual_seed(0)
    model = nn.Sequential(*[m for _ in range(6) for m in (nn.Linear(2048, 2048), nn.GELU(), nn.LayerNorm(2048))]).cuda()
    cmodel = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(512, 2048, device="cuda")
    for step in range(150):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = cmodel(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    print("loss", loss.item())

if __name__ == "__main__":
    main()
