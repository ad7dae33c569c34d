"""bottleneck agent: what every file it writes into the run directory
shares (embedded in the bottleneck binary, loaded by _bottleneck_agent):
the format version they carry and the atomic write (a temporary name,
then a rename, so that a reader never sees half a file).

Documented in docs/run.md ("Run directory").
"""
import json
import os
import threading

FORMAT_VERSION = 1

# The names of the files a process writes into the run directory, per
# process tag (rank0, ...). internal/rundir owns them; TestAgentFileNames
# checks these against it. (_bottleneck_workers keeps WORKERS_DIR and
# _bottleneck_live LIVE_DIR themselves: each is loaded alone.)
PROGRESS_DIR = ".progress"  # <tag>.json: the phase, for bottleneck's progress line


def env_name(tag):
    return "env-%s.json" % tag


def evidence_name(tag):
    return "evidence-%s.json" % tag


def pyprofile_name(tag):
    return "pyprofile-%s.json" % tag


def pstats_name(tag):
    return "pyprofile-%s.pstats" % tag


def crash_name(tag):
    return "crash-%s.txt" % tag


def trace_name(tag, window=1):
    """The trace of the process's window-th profiler window."""
    if window == 1:
        return "trace-%s.pt.trace.json.gz" % tag
    return "trace-%s.w%d.pt.trace.json.gz" % (tag, window)


def atomic_write(path, data):
    """Write bytes or str to path through a temporary file and a rename."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = "%s.tmp-%d-%d" % (path, os.getpid(), threading.get_ident())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def atomic_write_json(path, obj):
    atomic_write(path, json.dumps(obj, separators=(",", ":"), default=str))
