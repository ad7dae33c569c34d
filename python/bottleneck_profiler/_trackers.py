"""Hand the verdict, key numbers and report files of a recorded block to the
experiment trackers the program already uses: a W&B run (wandb.run) or an
active MLflow run. Nothing is imported: a tracker the program has not
imported and started is left alone."""
import os
import sys


def key_numbers(report_json):
    """{"verdict", "confidence", "share_pct", "step_ms"} of the first
    trace's diagnosis; {} when there was no trace."""
    traces = (report_json.get("trace_report") or {}).get("traces") or []
    if not traces:
        return {}
    d = traces[0].get("diagnosis") or {}
    v = d.get("verdict") or {}
    out = {"verdict": v.get("primary"), "confidence": v.get("confidence"), "share_pct": v.get("share_pct")}
    if d.get("step_us") is not None:
        out["step_ms"] = d["step_us"] / 1000.0
    return {k: x for k, x in out.items() if x is not None}


def _files(run_dir):
    return [os.path.join(run_dir, n) for n in ("report.html", "report.txt", "report.json")
            if os.path.isfile(os.path.join(run_dir, n))]


def publish(run_dir, report_json):
    """Publish to every active tracker; returns the names of those used.
    A tracker's failure is reported on stderr, never raised: the program's
    own run must not fail because of it."""
    nums = key_numbers(report_json)
    used = []
    wandb = sys.modules.get("wandb")
    if wandb is not None and getattr(wandb, "run", None) is not None:
        try:
            run = wandb.run
            for k, v in nums.items():
                run.summary["bottleneck/" + k] = v
            art = wandb.Artifact("bottleneck-report", type="bottleneck-report")
            for f in _files(run_dir):
                art.add_file(f)
            run.log_artifact(art)
            used.append("wandb")
        except Exception as e:
            sys.stderr.write("bottleneck_profiler: W&B upload failed: %s: %s\n" % (type(e).__name__, e))
    mlflow = sys.modules.get("mlflow")
    if mlflow is not None and mlflow.active_run() is not None:
        try:
            for k in ("verdict", "confidence"):
                if k in nums:
                    mlflow.set_tag("bottleneck." + k, nums[k])
            metrics = {"bottleneck." + k: float(nums[k]) for k in ("share_pct", "step_ms") if k in nums}
            if metrics:
                mlflow.log_metrics(metrics)
            for f in _files(run_dir):
                mlflow.log_artifact(f, artifact_path="bottleneck")
            used.append("mlflow")
        except Exception as e:
            sys.stderr.write("bottleneck_profiler: MLflow upload failed: %s: %s\n" % (type(e).__name__, e))
    return used
