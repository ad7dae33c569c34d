"""bottleneck agent, multiprocessing children: how the processes the
program starts itself (mp.Process targets, a Pool's workers; not
DataLoader workers, which _bottleneck_workers samples) use the CPUs while
they run, read from the parent about once a second (embedded in the
bottleneck binary, loaded by _bottleneck_agent).

bottleneck profiles the program's own process only: Hogwild training in
mp.Process children leaves its steps in processes nobody profiles. Their
threads' Linux schedstat (time on a CPU, time runnable but waiting for
one) still says whether they fit the machine: each child starts with
torch's default of one intra-op thread per CPU, so N children want N
times the CPUs there are (pytorch/examples' mnist_hogwild, 2 children on
2 CPUs: 86-160 s, against 17 s with torch.set_num_threads(1) in each).

Documented in docs/run.md ("Child processes").
"""
import os
import threading
import time

_WORKER_LOOP_MODULE = "torch.utils.data._utils.worker"


class Children(object):
    """The children started, and their threads' scheduling summed over
    the readings (read from the sampler thread; started from any)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.processes = 0  # started, DataLoader workers aside
        self._pids = set()  # alive at the last reading
        self._last = {}  # (pid, tid) -> (cpu ns, wait ns)
        self._read_at = None  # perf_counter of the last reading with a child alive
        self.cpu_s = 0.0
        self.wait_s = 0.0
        self.wall_s = 0.0  # the readings' span with a child alive
        self.most_alive = 0  # the most children alive at one reading

    def started(self, pid):
        with self.lock:
            self.processes += 1
            self._pids.add(pid)

    def read(self):
        """Adds each live child thread's time on a CPU and waiting for one
        since the last reading."""
        with self.lock:
            pids = list(self._pids)
        if not pids:
            self._read_at = None
            return
        now = time.perf_counter()
        cpu = wait = alive = 0
        seen = set()
        for pid in pids:
            try:
                tids = os.listdir("/proc/%d/task" % pid)
            except OSError:
                with self.lock:
                    self._pids.discard(pid)  # ended (its last second is lost)
                continue
            alive += 1
            for tid in tids:
                try:
                    with open("/proc/%d/task/%s/schedstat" % (pid, tid), "rb") as f:
                        c, w = f.read(128).split()[:2]
                    c, w = int(c), int(w)
                except (OSError, ValueError):
                    continue
                key = (pid, tid)
                seen.add(key)
                last = self._last.get(key)
                if last is not None:  # a thread first seen counts from here on
                    cpu += c - last[0]
                    wait += w - last[1]
                self._last[key] = (c, w)
        self._last = {k: v for k, v in self._last.items() if k in seen}
        self.most_alive = max(self.most_alive, alive)
        if self._read_at is not None:
            self.cpu_s += cpu / 1e9
            self.wait_s += wait / 1e9
            self.wall_s += now - self._read_at
        self._read_at = now if seen else None

    def evidence(self):
        """The "children" record, or None when the program started none."""
        if not self.processes:
            return None
        return {"processes": self.processes, "most_alive": self.most_alive, "wall_s": round(self.wall_s, 6),
                "cpu_s": round(self.cpu_s, 6), "wait_s": round(self.wait_s, 6)}


def install(children, pid):
    """Counts the processes multiprocessing starts in process pid, but
    DataLoader workers; returns an undo function (None when there is
    nothing to hook)."""
    if not os.path.isdir("/proc/self/task"):
        return None
    import multiprocessing.process as mpp
    orig = mpp.BaseProcess.start

    def start(self):
        # read before: start() drops the target (bpo-30775)
        worker = getattr(getattr(self, "_target", None), "__module__", None) == _WORKER_LOOP_MODULE
        orig(self)
        try:
            if os.getpid() == pid and not worker:
                children.started(self.pid)
        except Exception:
            pass

    start.__wrapped__ = orig
    mpp.BaseProcess.start = start

    def undo():
        if mpp.BaseProcess.start is start:
            mpp.BaseProcess.start = orig
    return undo
