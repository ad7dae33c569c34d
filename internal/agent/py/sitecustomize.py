"""bottleneck launcher-mode shim (`bottleneck run -- LAUNCHER ...`).

bottleneck puts this directory first on PYTHONPATH. In every Python process
it first imports the sitecustomize that would have run without it (if any),
then activates the agent only in processes that run the user's program:
not in launchers (torchrun, accelerate, deepspeed), not in multiprocessing
children (`python -c ...`, spawn/forkserver), not in descendants of a
process that is already profiled, not when BOTTLENECK_AGENT_CONFIG is unset.
"""
import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))


def _chain():
    me = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    try:
        import importlib
        importlib.import_module("sitecustomize")
    except ImportError as e:
        if getattr(e, "name", None) != "sitecustomize":
            import traceback
            traceback.print_exc()
        if me is not None:
            sys.modules["sitecustomize"] = me
    except Exception:
        import traceback
        traceback.print_exc()
    finally:
        # keep our directory off sys.path: the program sees the path it
        # would see without bottleneck (children still get PYTHONPATH)
        sys.path[:] = [p for p in saved if os.path.abspath(p or ".") != _here]


_LAUNCHER_MODULES = (
    "torch.distributed.run", "torch.distributed.launch", "torch.distributed.elastic",
    "accelerate.commands", "deepspeed.launcher", "pip", "ensurepip", "venv", "multiprocessing",
)
_LAUNCHER_SCRIPTS = ("torchrun", "accelerate", "deepspeed", "pip", "pip3", "python-config")


def _program():
    """(kind, name) of what this interpreter runs: ("script", path),
    ("module", name), ("command", "") or ("interactive", "")."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 == "-c":
        return "command", ""
    if argv0 == "-m":
        orig = getattr(sys, "orig_argv", None)
        if orig is None:
            try:
                with open("/proc/self/cmdline", "rb") as f:
                    orig = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
            except OSError:
                orig = []
        for i, a in enumerate(orig[1:], 1):
            if a == "-m" and i + 1 < len(orig):
                return "module", orig[i + 1]
            if a.startswith("-m") and len(a) > 2:
                return "module", a[2:]
        return "module", ""
    if argv0 in ("", "-"):
        return "interactive", ""
    return "script", argv0


def should_activate(environ=None):
    env = os.environ if environ is None else environ
    if not env.get("BOTTLENECK_AGENT_CONFIG"):
        return False
    if env.get("BOTTLENECK_AGENT_ACTIVE"):
        return False
    if "--multiprocessing-fork" in sys.argv:
        return False
    kind, name = _program()
    if kind == "module":
        return bool(name) and not any(name == m or name.startswith(m + ".") for m in _LAUNCHER_MODULES)
    if kind == "script":
        base = os.path.basename(name)
        if base.endswith(".py"):
            base = base[:-3]
        return base not in _LAUNCHER_SCRIPTS
    return False


_chain()
if should_activate():
    try:
        import importlib.util
        _spec = importlib.util.spec_from_file_location("_bottleneck_agent", os.path.join(_here, "_bottleneck_agent.py"))
        _mod = importlib.util.module_from_spec(_spec)
        sys.modules["_bottleneck_agent"] = _mod
        try:
            _spec.loader.exec_module(_mod)
        finally:
            # the program's sys.modules holds no bottleneck module
            sys.modules.pop("_bottleneck_agent", None)
        _mod.activate_launcher(os.environ["BOTTLENECK_AGENT_CONFIG"])
    except Exception:
        import traceback
        sys.stderr.write("bottleneck: the agent could not start in this process:\n")
        traceback.print_exc()
