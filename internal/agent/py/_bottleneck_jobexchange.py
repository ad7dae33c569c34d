"""bottleneck agent: the job exchange of a multi-node run without a shared
directory (`bottleneck run -- torchrun --nnodes N ...`, no --job-dir;
docs/distributed.md, "Live runs across nodes without a shared
directory").

torchrun's agent on node rank 0 serves a TCPStore for its workers
(TORCHELASTIC_USE_AGENT_STORE=True, at MASTER_ADDR:MASTER_PORT) that lives
as long as that torchrun process, and that process outlives every one of
its workers. So, at the end of each rank's run (atexit, once the agent has
written its files):

1. the rank's summary is computed where its trace is: `bottleneck
   summarize` over a view of the run directory holding this rank's files
   only (the same analysis `--job-dir` runs after the program);
2. the rank connects to the store as a client and leaves one message:
   n = add(PREFIX + "count", 1), then set(PREFIX + "msg<n>", message);
3. global rank 0 (on node rank 0, beside the store) then reads the
   messages as they arrive into RUN/exchange/received/rank<N>.json until
   every rank of the world has reported or the wait (run --job-wait) is
   over, and writes RUN/exchange/collected.json. bottleneck on node 0
   merges them into the job report once the program has ended.

While rank 0 waits, the store stays up: node 0's torchrun cannot end
before its rank 0 does. The program's output and exit status are not
touched; a failure is written to RUN/exchange/rank<N>.error for
bottleneck to show. Stdlib only (and torch, which the program imported).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time

FORMAT = "bottleneck.job-exchange/1"
COLLECTED_FORMAT = "bottleneck.job-exchange-collected/1"

# Names in the run directory; internal/jobdir (exchange.go) owns them.
EXCHANGE_DIR = "exchange"
RECEIVED_DIR = "received"
COLLECTED_NAME = "collected.json"


def error_name(rank):
    return "rank%d.error" % rank


def received_name(rank):
    return "rank%d.json" % rank


def sent_name(rank):
    return "rank%d.sent" % rank


# A store that does not answer in this long is gone (node 0's torchrun
# ended): the rank gives up rather than hold its exit longer.
CONNECT_S = 10.0
# How often rank 0 looks for new messages while it waits.
POLL_S = 0.05
# Bounds the rank's own summary (one trace; seconds for the largest).
SUMMARIZE_S = 300.0

_TRACE_PREFIXES = ("trace-", "evidence-", "env-", "pyprofile-")


def key_prefix(environ):
    """The keys of this job's exchange: one per torchrun run id and restart
    (a restarted worker group reports again, under its own prefix)."""
    return "bottleneck/%s/%s/" % (environ.get("TORCHELASTIC_RUN_ID", "none"),
                                  environ.get("TORCHELASTIC_RESTART_COUNT", "0"))


def _int(environ, name, default=-1):
    try:
        return int(environ.get(name, ""))
    except ValueError:
        return default


def job_key(environ):
    """What says which job a message belongs to (jobdir.Key)."""
    master = ""
    if environ.get("MASTER_ADDR") and environ.get("MASTER_PORT"):
        addr = environ["MASTER_ADDR"]
        master = ("[%s]:%s" if ":" in addr else "%s:%s") % (addr, environ["MASTER_PORT"])
    return {"run_id": environ.get("TORCHELASTIC_RUN_ID", ""), "master": master,
            "world_size": max(0, _int(environ, "WORLD_SIZE", 0)),
            "nodes": max(0, _int(environ, "GROUP_WORLD_SIZE", 0))}


def rank_view(run_dir, tag, view):
    """Make view a run directory holding only this process's files (links
    to them): what `bottleneck summarize` reads to summarise this rank
    alone, with its evidence and the agent's step numbers."""
    os.makedirs(view)
    names = ["manifest.json"]
    for name in os.listdir(run_dir):
        if any(name.startswith(p + tag + ".") for p in _TRACE_PREFIXES):
            names.append(name)
    for name in names:
        src = os.path.join(run_dir, name)
        if os.path.isfile(src):
            os.symlink(src, os.path.join(view, name))


def summarize(exe, run_dir, tag, host, scratch):
    """This rank's summaries (one per profiler window), as `bottleneck
    summarize` gives them, with the trace paths of the run directory.
    Raises RuntimeError with bottleneck's own words when none came."""
    view = os.path.join(scratch, ".view-%s-%d" % (tag, os.getpid()))
    try:
        rank_view(run_dir, tag, view)
        p = subprocess.run([exe, "summarize", view, "--host", host, "--workers", "1"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=SUMMARIZE_S)
    finally:
        shutil.rmtree(view, ignore_errors=True)
    out = []
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if not line:
            continue
        s = json.loads(line)
        f = s.get("file")
        if isinstance(f, str) and f.startswith(view + os.sep):
            s["file"] = os.path.join(run_dir, f[len(view) + 1:])
        out.append(s)
    if not out:
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError("summarize exited with status %d: %s" % (p.returncode, err[-1] if err else "no summary"))
    return out


def _store(torch, environ):
    from datetime import timedelta
    return torch.distributed.TCPStore(environ["MASTER_ADDR"], int(environ["MASTER_PORT"]), is_master=False,
                                      timeout=timedelta(seconds=CONNECT_S), wait_for_workers=False)


def send(store, prefix, message):
    """Leave message in the store: its sequence number first (so that the
    collector reads only new keys), then the message under it."""
    data = json.dumps(message, separators=(",", ":")).encode("utf-8")
    n = store.add(prefix + "count", 1)
    store.set(prefix + "msg%d" % n, data)
    return n, len(data)


class _Signals:
    """While rank 0 waits, SIGTERM (torchrun stopping its workers) and
    SIGINT end the wait instead of the process: what has arrived is
    written and the process ends as it was ending, with the status its
    program gave it (without the exchange it would have ended before the
    signal came)."""

    def __init__(self):
        self.got = None
        self.prev = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for s in (signal.SIGTERM, signal.SIGINT):
                try:
                    self.prev[s] = signal.signal(s, self._on)
                except (ValueError, OSError):
                    pass
        return self

    def _on(self, signum, frame):
        self.got = signum

    def __exit__(self, *exc):
        for s, h in self.prev.items():
            signal.signal(s, h)


def collect(store, prefix, world, out_dir, wait_s, write_json, began=None, clock=time.monotonic, sleep=time.sleep):
    """Read every rank's message into out_dir/received/ until all world
    ranks have reported or wait_s has passed; returns the collected record
    (written last, as collected.json). began: when this rank's exchange
    began (clock's time), for its whole cost."""
    received_dir = os.path.join(out_dir, RECEIVED_DIR)
    os.makedirs(received_dir, exist_ok=True)
    start = clock()
    deadline = start + wait_s
    ranks, seen, pending = set(), 0, set()
    problems = []
    reason = "wait over"
    with _Signals() as sig:
        while True:
            n = store.add(prefix + "count", 0)
            pending.update(range(seen + 1, n + 1))
            seen = max(seen, n)
            for i in sorted(pending):
                key = prefix + "msg%d" % i
                if not store.check([key]):
                    continue  # its rank counted itself and has not set it yet
                pending.discard(i)
                raw = store.get(key)
                try:
                    msg = json.loads(raw.decode("utf-8"))
                    rank = int(msg["rank"])
                except (ValueError, KeyError, TypeError) as e:
                    problems.append("message %d: not a rank's message (%s)" % (i, e))
                    continue
                if rank in ranks:
                    problems.append("rank %d reported twice; the later message is dropped" % rank)
                    continue
                write_json(os.path.join(received_dir, received_name(rank)), msg)
                ranks.add(rank)
            if world > 0 and len(ranks) >= world:
                reason = "all ranks"
                break
            if sig.got is not None:
                reason = "signal %d" % sig.got
                break
            if clock() >= deadline:
                break
            sleep(min(POLL_S, max(0.0, deadline - clock())))
        rec = {"format": COLLECTED_FORMAT, "world_size": world, "ranks": sorted(ranks),
               "missing": [r for r in range(world) if r not in ranks], "waited_s": round(clock() - start, 6),
               "wait_s": wait_s, "ended": reason, "problems": problems,
               "exchange_s": round(clock() - (start if began is None else began), 6)}
        write_json(os.path.join(out_dir, COLLECTED_NAME), rec)
    return rec


def exchange(agent, cfg, write_json, environ=None):
    """The exchange at the end of one rank's run (see the module's doc).
    Never raises: a failure is this rank's error file."""
    env = os.environ if environ is None else environ
    out_dir = os.path.join(agent.run_dir, EXCHANGE_DIR)
    rank = _int(env, "RANK")
    try:
        os.makedirs(out_dir, exist_ok=True)
        if rank < 0:
            raise RuntimeError("no RANK in the environment: not a torchrun worker")
        if env.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
            raise RuntimeError("torchrun serves its workers no store of its own (TORCHELASTIC_USE_AGENT_STORE=%s): "
                               "nothing outlives the ranks to carry their summaries; use --job-dir"
                               % (env.get("TORCHELASTIC_USE_AGENT_STORE") or "unset"))
        if agent.torch is None:
            raise RuntimeError("the program never imported torch")
        host = socket.gethostname()
        msg = {"format": FORMAT, "rank": rank, "node": _int(env, "GROUP_RANK"), "local_rank": _int(env, "LOCAL_RANK"),
               "host": host, "run_dir": os.path.abspath(agent.run_dir), "tag": agent.tag, "job": job_key(env),
               "exit": {k: agent.exit.get(k) for k in ("reason", "code", "signal")}}
        t0 = time.monotonic()
        try:
            msg["summaries"] = summarize(cfg["exe"], agent.run_dir, agent.tag, host, out_dir)
        except Exception as e:
            msg["problem"] = "%s: %s" % (type(e).__name__, e)
        t1 = time.monotonic()
        msg["summarize_s"] = round(t1 - t0, 6)
        prefix = key_prefix(env)
        store = _store(agent.torch, env)
        t2 = time.monotonic()
        seq, size = send(store, prefix, msg)
        t3 = time.monotonic()
        # what this rank's exit cost it, for bottleneck on this node
        write_json(os.path.join(out_dir, sent_name(rank)), {
            "seq": seq, "bytes": size, "summarize_s": round(t1 - t0, 6),
            "connect_s": round(t2 - t1, 6), "send_s": round(t3 - t2, 6)})
        if rank == 0:
            collect(store, prefix, max(0, _int(env, "WORLD_SIZE", 0)), out_dir, float(cfg.get("wait_s", 120)), write_json, began=t0)
    except Exception as e:
        try:
            name = error_name(rank) if rank >= 0 else "pid%d.error" % os.getpid()
            with open(os.path.join(out_dir, name), "w") as f:
                f.write("%s: %s\n" % (type(e).__name__, e))
        except Exception:
            pass
