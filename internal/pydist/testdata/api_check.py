"""Run by wheel_test.go with the installed wheel's interpreter:
api_check.py EXPECTED_VERSION RUN_DIR_OF_BOTTLENECK_RUN. Exercises the
Python API as a user would and fails loudly on anything unexpected."""
import glob
import json
import os
import sys

import torch

import bottleneck_profiler as bp

want_version, run_dir = sys.argv[1], sys.argv[2]
assert bp.__version__ == want_version, (bp.__version__, want_version)
assert os.path.dirname(bp.__file__).endswith(os.path.join("site-packages", "bottleneck_profiler")), bp.__file__


def train(steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        loss = model(torch.randn(16, 32)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


train(3)  # before profile(): nothing recorded, nothing hooked
for i in (1, 2):  # a second block starts clean: the first one's hooks are gone
    with bp.profile(out="api-run-%d" % i, skip_first=2, warmup=1, active=3) as p:
        train(12)
    rep = p.report()
    assert os.path.samefile(rep.run_dir, "api-run-%d" % i), rep.run_dir
    ev = json.load(open(os.path.join(rep.run_dir, "evidence-rank0.json")))
    assert ev["step_source"] == "optimizer" and ev["steps"] == 11, (ev["step_source"], ev["steps"])
    assert glob.glob(os.path.join(rep.run_dir, "trace-rank0*.pt.trace.json.gz"))
    manifest = json.load(open(os.path.join(rep.run_dir, "manifest.json")))
    assert manifest["command"]["mode"] == "in-process" and manifest["state"] == "ended", manifest["command"]
    assert rep.json["trace_report"]["traces"][0]["diagnosis"]["verdict"]["primary"], rep.json["trace_report"]
    text = str(rep)
    assert text.startswith("Verdict:") and "profile() in:" in text, text[:300]
    html = rep._repr_html_()
    assert html.startswith("<iframe") and "srcdoc=" in html and "&lt;html" in html.lower(), html[:200]
    assert p._repr_html_() == html
    assert p.trackers_used == [], p.trackers_used  # no tracker imported here

# trace=False: no window, so no trace analysis and no report.html; the
# notebook shows the text report
with bp.profile(out="api-run-notrace", trace=False) as p:
    train(12)
rep = p.report()
assert "trace_report" not in rep.json and not os.path.exists(rep.html_path), os.listdir(rep.run_dir)
assert "No trace was written" in str(rep), str(rep)[-400:]
assert rep._repr_html_().startswith("<iframe") and "&lt;pre&gt;" in rep._repr_html_()

# the process runs on as before: no hook of the agent is left
from torch.optim.optimizer import _global_optimizer_post_hooks  # noqa: E402
assert not _global_optimizer_post_hooks, _global_optimizer_post_hooks
assert "KINETO_LOG_LEVEL" not in os.environ

# analyze(): the JSON report of the trace `bottleneck run` wrote
trace = glob.glob(os.path.join(run_dir, "trace-rank0*.pt.trace.json.gz"))[0]
a = bp.analyze(trace, top=5)
assert a["traces"][0]["diagnosis"]["verdict"]["primary"], a.keys()
try:
    bp.analyze(os.path.join(run_dir, "no-such-trace.json"))
except bp.BottleneckError as e:
    assert "no-such-trace.json" in str(e), e
else:
    raise AssertionError("analyze of a missing file did not raise")
print("api ok")
