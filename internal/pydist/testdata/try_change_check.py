"""Run by frameworks_test.go (TestTryChange) with the source package:
try_change_check.py REPO_ROOT, in an empty folder. Calls try_change() as a
user would and fails loudly on anything unexpected."""
import glob
import os
import sys

import bottleneck_profiler as bp

root = sys.argv[1]
slow = os.path.join(root, "examples", "diagnose", "slow_dataset.py")

# two changes at once, a bool written as true: both reach the agent
r = bp.try_change(slow, num_workers=2, persistent_workers=True, steps=4, out="try-api")
assert os.path.samefile(r.run_dir, "try-api"), r.run_dir
j = r.json
assert j["schema"] == "bottleneck.try/v1", j["schema"]
assert j["set"] == {"num_workers": "2", "persistent_workers": "true"}, j["set"]
assert len(j["pairs"]) == 1 and j["pairs"][0]["mean_speedup"] > 0, j["pairs"]
sites = [s for c in j["applied"] if c["applied"] for s in c["sites"]]
assert any("slow_dataset.py:33: num_workers 0 -> 2" in s for s in sites), j["applied"]
assert str(r).startswith("num_workers=2,persistent_workers=true (tried): "), str(r)
assert j["predicted"]["rule"] == "input.loader", j["predicted"]

# a change the agent cannot make: the binary refuses it before any run
try:
    bp.try_change(slow, workers=4)
    raise AssertionError("workers=4 accepted")
except bp.BottleneckError as e:
    assert "no such change" in str(e) and "exit status 2" in str(e), e
try:
    bp.try_change(slow)
    raise AssertionError("no change accepted")
except TypeError:
    pass

# a program that fails: its status, and the runs kept in the default folder
try:
    bp.try_change(os.path.join(root, "examples", "run", "exit3.py"), threads=1, steps=3)
    raise AssertionError("a failing program measured")
except bp.BottleneckError as e:
    assert "exit status 3" in str(e), e
assert len(glob.glob(os.path.join("bottleneck-runs", "*-try", "base-1.log"))) == 1, os.listdir(".")
print("try_change ok")
