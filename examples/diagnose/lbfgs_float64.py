"""Planted bottleneck: the compute runs in float64. A sequence regressor
fit the way scientific code often fits one: an LSTMCell unrolled over the
time steps, trained full-batch with L-BFGS and a closure, and float64 set
globally "for L-BFGS's line search". The cell loop issues many small ops,
yet each of them runs in float64; float32 is the fix, and nn.LSTM in
float64 is no faster than this loop.

    bottleneck run examples/diagnose/lbfgs_float64.py

    --fix applies the change the report advises (float32);
    --lstm swaps the cell loop for nn.LSTM (the advice this program once got).
"""
import sys

import torch

if "--fix" not in sys.argv:
    torch.set_default_dtype(torch.float64)  # PLANTED: every tensor and parameter is float64


class Regressor(torch.nn.Module):
    def __init__(self, n_in, hidden, fused):
        super().__init__()
        self.fused = fused
        self.cell = torch.nn.LSTMCell(n_in, hidden)
        self.lstm = torch.nn.LSTM(n_in, hidden, batch_first=True) if fused else None
        self.head = torch.nn.Linear(hidden, 1)

    def forward(self, x):
        if self.fused:
            out, _ = self.lstm(x)
            return self.head(out[:, -1])
        h = x.new_zeros(x.shape[0], self.cell.hidden_size)
        c = h.clone()
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        return self.head(h)


def main():
    torch.set_num_threads(1)  # steadier timings on a shared machine
    torch.manual_seed(0)
    batch, steps, n_in, hidden = 64, 16, 8, 32
    x = torch.randn(batch, steps, n_in)
    y = torch.sin(x.sum((1, 2))).unsqueeze(1)
    model = Regressor(n_in, hidden, "--lstm" in sys.argv)
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=10)

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    for epoch in range(16):
        opt.step(closure)


if __name__ == "__main__":
    main()
