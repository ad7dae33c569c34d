"""The PEP 517 build backend of bottleneck-profiler (pyproject.toml).

`pip install .`, `pip wheel .` and `pip install git+URL` build the wheel
with the project's own wheel builder (internal/pydist, the same code as
scripts/build-wheel, so both routes give the same package): it compiles
the Go binary for this machine and packs it with the Python package. It
needs Go on PATH; nothing is downloaded but Go modules.
"""
import os
import shutil
import subprocess

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _go():
    go = shutil.which("go")
    if go is None:
        raise RuntimeError(
            "building bottleneck-profiler from source needs Go (1.26 or later) on PATH: "
            "https://go.dev/dl/ ; or install a built wheel (scripts/build-wheel)")
    return go


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    out = subprocess.run(
        [_go(), "run", "./internal/pydist/buildwheel", "-o", os.path.abspath(wheel_directory), "-platform", "host"],
        cwd=_ROOT, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    return os.path.basename(out.strip().splitlines()[-1])
