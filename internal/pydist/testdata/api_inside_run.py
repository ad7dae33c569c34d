"""Run by wheel_test.go under `bottleneck run -o RUN_DIR api_inside_run.py
RUN_DIR`: profile() inside a program `bottleneck run` already records adds
no recording of its own, and report() says where the run's report will be."""
import os
import sys

import torch

import bottleneck_profiler as bp

run_dir = sys.argv[1]
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with bp.profile(out="must-not-be-created") as p:
    for _ in range(12):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        opt.zero_grad()
assert os.path.samefile(p.run_dir, run_dir), (p.run_dir, run_dir)
assert not os.path.exists("must-not-be-created")
try:
    p.report()
except bp.BottleneckError as e:
    assert "bottleneck run" in str(e) and run_dir in str(e), e
else:
    raise AssertionError("report() inside bottleneck run did not explain")
print("inside run ok")
