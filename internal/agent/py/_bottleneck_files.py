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
