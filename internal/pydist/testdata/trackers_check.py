"""Run by frameworks_test.go: `trackers_check.py WORKDIR`. A block profiled
inside an active W&B run (offline) and MLflow run (file store) hands both
the verdict, key numbers and report files; with trackers=False, neither."""
import json
import os
import sys

import mlflow
import torch
import wandb

import bottleneck_profiler as bp

work = sys.argv[1]


def train(steps):
    model = torch.nn.Linear(32, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(steps):
        model(torch.randn(16, 32)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()


wandb.init(project="bottleneck-test", mode="offline", dir=work)
mlflow.set_tracking_uri("file://" + os.path.join(work, "mlruns"))
with mlflow.start_run() as mr:
    with bp.profile(out=os.path.join(work, "run1"), skip_first=2, warmup=1, active=3) as p:
        train(12)
    assert sorted(p.trackers_used) == ["mlflow", "wandb"], p.trackers_used
    verdict = p.report().json["trace_report"]["traces"][0]["diagnosis"]["verdict"]["primary"]
    assert wandb.run.summary["bottleneck/verdict"] == verdict, dict(wandb.run.summary)
    assert wandb.run.summary["bottleneck/step_ms"] > 0
    client = mlflow.tracking.MlflowClient()
    run = client.get_run(mr.info.run_id)
    assert run.data.tags["bottleneck.verdict"] == verdict, run.data.tags
    assert run.data.metrics["bottleneck.step_ms"] > 0, run.data.metrics
    arts = sorted(os.path.basename(a.path) for a in client.list_artifacts(mr.info.run_id, "bottleneck"))
    assert arts == ["report.html", "report.json", "report.txt"], arts

    with bp.profile(out=os.path.join(work, "run2"), trackers=False, skip_first=2, warmup=1, active=3) as q:
        train(12)
    assert q.trackers_used == [], q.trackers_used
    assert len(client.list_artifacts(mr.info.run_id, "bottleneck")) == 3
wandb.finish()
print("trackers ok " + json.dumps(verdict))
