"""Where the bottleneck binary is, and the console command that runs it."""
import os
import shutil
import subprocess
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_EXE = "bottleneck.exe" if os.name == "nt" else "bottleneck"


def binary_path():
    """The bottleneck binary: $BOTTLENECK_BINARY, else the one this wheel
    carries, else `bottleneck` on PATH (a source checkout)."""
    env = os.environ.get("BOTTLENECK_BINARY")
    if env:
        return env
    bundled = os.path.join(_HERE, "bin", _EXE)
    if os.path.isfile(bundled):
        return bundled
    found = shutil.which("bottleneck")
    if found:
        return found
    raise FileNotFoundError("bottleneck binary not found: install the bottleneck-profiler wheel, "
                            "put bottleneck on PATH, or set BOTTLENECK_BINARY")


def main():
    """Console entry point `bottleneck`: replace this process by the binary
    (same pid, signals and exit status). `bottleneck run` uses this
    interpreter unless told otherwise, the one the package is installed in."""
    exe = os.path.join(_HERE, "bin", _EXE)
    if not os.path.isfile(exe):  # never PATH here: it would find this script
        sys.stderr.write("bottleneck: the binary is missing from %s (broken install?)\n" % os.path.dirname(exe))
        return 127
    os.environ.setdefault("BOTTLENECK_PYTHON", sys.executable)
    argv = [exe] + sys.argv[1:]
    if os.name == "nt":
        return subprocess.call(argv)
    os.execv(exe, argv)
