"""Run by frameworks_test.go: executes a notebook headlessly (nbclient) that
profiles a training loop with bottleneck_profiler.profile() and shows the
report as the cell's value; writes the HTML the cell displayed to
WORKDIR/shown.html. `notebook_check.py WORKDIR`."""
import os
import sys

import nbclient
import nbformat
from nbformat.v4 import new_code_cell, new_notebook

CELLS = [
    """import torch, bottleneck_profiler
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)""",
    """with bottleneck_profiler.profile(out="nb-run", skip_first=2, warmup=1, active=3) as p:
    for _ in range(12):
        loss = model(torch.randn(16, 32)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()""",
    "p.report()",
]

nb = new_notebook(cells=[new_code_cell(c) for c in CELLS])
nbclient.NotebookClient(nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": sys.argv[1]}}).execute()
shown = [o for o in nb.cells[-1].outputs if o.get("output_type") == "execute_result"]
assert shown, nb.cells[-1].outputs
with open(os.path.join(sys.argv[1], "shown.html"), "w") as f:
    f.write(shown[0]["data"]["text/html"])
