# Trains johnma2006/mamba-minimal's Mamba (model.py, unchanged) as a
# language model on synthetic token sequences: the shape of a first
# experiment with the repository on a laptop CPU.
import argparse, time
import torch
import torch.nn.functional as F
import os
if os.environ.get("UNBIND"):
    from model_unbind import Mamba, ModelArgs
else:
    from model import Mamba, ModelArgs

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq", type=int, default=128)
p.add_argument("--d-model", type=int, default=128)
p.add_argument("--layers", type=int, default=4)
a = p.parse_args()

torch.manual_seed(0)
args = ModelArgs(d_model=a.d_model, n_layer=a.layers, vocab_size=1024)
model = Mamba(args)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
data = torch.randint(0, 1024, (256, a.seq + 1))
t0 = time.time()
times = []
for step in range(a.steps):
    ts = time.perf_counter()
    idx = torch.randint(0, data.shape[0], (a.batch,))
    x, y = data[idx, :-1], data[idx, 1:]
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - ts)
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.3f} {time.time()-t0:.1f}s", flush=True)
times.sort()
print(f"median step {times[len(times)//2]*1000:.0f} ms")
