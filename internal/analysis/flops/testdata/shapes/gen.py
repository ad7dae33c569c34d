"""Generates cpu_shapes.json.gz and flop_counter.json for the flops tests.

A small model (linear, conv2d incl. strided/dilated/grouped, conv1d,
transposed conv, bmm, baddbmm, addmm, SDPA) runs once under
torch.profiler(record_shapes=True) on the CPU, and once under
torch.utils.flop_counter.FlopCounterMode; flop_counter.json keeps the
counter's per-op totals (forward only) to compare the trace-derived
FLOPs with. Run with the repository's venv:
    .venv/bin/python internal/analysis/flops/testdata/shapes/gen.py
"""
import gzip
import json
import os
import shutil
import tempfile

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

torch.manual_seed(0)
here = os.path.dirname(os.path.abspath(__file__))

lin = torch.nn.Linear(64, 96)
conv = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
conv_d = torch.nn.Conv2d(16, 32, 3, padding=2, dilation=2, groups=4, bias=False)
conv1 = torch.nn.Conv1d(8, 12, 5, stride=1)
convt = torch.nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)


def step():
    x = torch.randn(32, 64)
    y = lin(x)  # addmm
    z = torch.mm(y, torch.randn(96, 48))
    img = torch.randn(4, 3, 32, 32)
    c = conv(img)
    c2 = conv_d(c)
    t = convt(c)
    s = conv1(torch.randn(2, 8, 50))
    a = torch.bmm(torch.randn(6, 20, 30), torch.randn(6, 30, 10))
    b = torch.baddbmm(torch.randn(6, 20, 10), torch.randn(6, 20, 30), torch.randn(6, 30, 10))
    q, k, v = torch.randn(2, 4, 40, 16), torch.randn(2, 4, 50, 16), torch.randn(2, 4, 50, 24)
    o = F.scaled_dot_product_attention(q, k, v)
    am = torch.addmm(torch.randn(10, 7), torch.randn(10, 5), torch.randn(5, 7))
    return z.sum() + c2.sum() + t.sum() + s.sum() + a.sum() + b.sum() + o.sum() + am.sum()


with torch.no_grad():
    step()  # warm-up
    counter = FlopCounterMode(display=False)
    with counter:
        step()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()

d = tempfile.mkdtemp()
try:
    p = os.path.join(d, "t.json")
    prof.export_chrome_trace(p)
    with open(p, "rb") as f, open(os.path.join(here, "cpu_shapes.json.gz"), "wb") as out:
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as g:
            shutil.copyfileobj(f, g)
finally:
    shutil.rmtree(d)

counts = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
with open(os.path.join(here, "flop_counter.json"), "w") as f:
    json.dump({"torch": torch.__version__, "total": counter.get_total_flops(), "by_op": counts}, f, indent=1, sort_keys=True)
    f.write("\n")
print(json.dumps(counts, indent=1))
