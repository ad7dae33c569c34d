"""In-process entry points of the agent, for the Python API
(`with bottleneck_profiler.profile(): ...`): start the same Agent that
`bottleneck run` starts (step detection, torch.profiler window, sampler,
evidence), but inside a process that is already running, then stop it and
leave the process as it was (hooks, signal handler, import watcher removed).

Loaded by bottleneck_profiler with _bottleneck_agent already in
sys.modules (the wheel ships both files; they are not embedded in the
binary, which never needs this one).
"""
import os
import signal
import sys

import _bottleneck_agent as _agentmod


class AlreadyProfiled(RuntimeError):
    """An agent is already recording this process (`bottleneck run`, or an
    enclosing profile())."""


def active_agent():
    """The agent recording this process and not yet finished, or None."""
    a = _agentmod.get_agent()
    return a if a is not None and not a.finished else None


def start(cfg):
    """Start an agent with cfg (the JSON object `bottleneck collect --begin`
    prints) in this process and return it."""
    if active_agent() is not None:
        raise AlreadyProfiled("bottleneck is already recording this process (run dir %s)" % active_agent().run_dir)
    agent = _agentmod.Agent(cfg, "in-process")
    agent._inprocess_prev_sigterm = signal.getsignal(signal.SIGTERM)
    # as `bottleneck run` does: keep Kineto's own log lines (USDT
    # profiler_start ...) off the program's stderr; read when the profiler
    # first starts, so it works unless the program profiled before
    agent._inprocess_set_kineto_log = "KINETO_LOG_LEVEL" not in os.environ
    if agent._inprocess_set_kineto_log:
        os.environ["KINETO_LOG_LEVEL"] = "6"
    _agentmod._agent = agent
    try:
        agent.start()
    except BaseException:
        _undo_hooks(agent)
        _agentmod._agent = None
        raise
    return agent


def stop(agent, exc=None):
    """Finish agent (write every file) and remove what it installed.
    exc: the exception that ended the profiled block, if any."""
    try:
        if exc is None:
            agent.finish("ok", None)
        elif isinstance(exc, KeyboardInterrupt):
            agent.finish("interrupted", None, signal_name="SIGINT", exc="KeyboardInterrupt")
        else:
            agent.finish("exception", None, exc="%s: %s" % (type(exc).__name__, exc))
    finally:
        _undo_hooks(agent)
        if _agentmod._agent is agent:
            _agentmod._agent = None


def _undo_hooks(agent):
    """Remove the process-wide hooks agent installed, so that a later
    profile() starts clean and the program runs as without bottleneck."""
    agent._remove_forward_hooks()
    if agent.frameworks is not None:
        agent.frameworks.uninstall()
    for name in ("optimizer_hook", "optimizer_pre_hook"):
        h = getattr(agent, name, None)
        if h is not None:
            h.remove()
            setattr(agent, name, None)
    dl = sys.modules.get("torch.utils.data.dataloader")
    cls = getattr(dl, "_BaseDataLoaderIter", None)
    nxt = getattr(cls, "__next__", None) if cls is not None else None
    if getattr(nxt, "_bottleneck_wrapped", False):
        cls.__next__ = nxt.__wrapped__
    mp = getattr(dl, "_MultiProcessingDataLoaderIter", None)
    init = getattr(mp, "__init__", None) if mp is not None else None
    if getattr(init, "_bottleneck_wrapped", False):
        mp.__init__ = init.__wrapped__
    wm = getattr(agent, "workers_mod", None)
    if wm is not None:
        wm.uninstall(getattr(agent, "worker_loop", None))
    if getattr(agent, "_inprocess_set_kineto_log", False):
        os.environ.pop("KINETO_LOG_LEVEL", None)
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _agentmod._TorchImportWatcher)]
    try:
        if signal.getsignal(signal.SIGTERM) == agent._on_sigterm:
            signal.signal(signal.SIGTERM, agent._inprocess_prev_sigterm)
    except (ValueError, TypeError):  # not the main thread
        pass
