"""The Python API: profile() around a block of an already running program,
analyze() of trace files, try_change() of a program run as it is and
changed. All call the bottleneck binary for everything but the recording
itself, so reports are the ones `bottleneck run` writes."""
import html
import importlib.util
import json
import os
import subprocess
import sys
import time

from . import _trackers
from ._binary import binary_path

_HERE = os.path.dirname(os.path.abspath(__file__))

# profile() keyword -> where it goes in the agent settings (manifest.json's
# "settings"; `bottleneck run --help` documents each).
_PROFILER_KEYS = ("skip_first", "wait", "warmup", "active", "min_window_s", "early_start_s", "repeat", "record_shapes",
                  "profile_memory", "with_stack", "with_flops", "with_modules")
_TOP_KEYS = ("python_profiler", "sample_interval", "window_sample_interval", "step_source", "sync_debug")


class BottleneckError(RuntimeError):
    """The bottleneck binary failed; the message carries its stderr."""


def _call(args, check=True):
    p = subprocess.run([binary_path()] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if check and p.returncode != 0:
        raise BottleneckError("bottleneck %s: exit status %d\n%s" % (args[0], p.returncode, err.strip()))
    return p.returncode, out, err


def _agent_dir():
    """The agent's Python files: in the wheel, bottleneck_profiler/_agent;
    in a source checkout, internal/agent/py."""
    for d in (os.path.join(_HERE, "_agent"), os.path.join(_HERE, "..", "..", "internal", "agent", "py")):
        if os.path.isfile(os.path.join(d, "_bottleneck_inprocess.py")):
            return os.path.abspath(d)
    raise FileNotFoundError("bottleneck_profiler: the agent files are missing (broken install?)")


def _load(name, directory):
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, os.path.join(directory, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def _inprocess():
    d = _agent_dir()
    # `bottleneck run` loads _bottleneck_agent as a top-level module and
    # keeps it out of sys.modules (sys._bottleneck_agent in script and -m
    # modes); reuse it so that a profile() inside the run sees its agent
    running = getattr(sys, "_bottleneck_agent", None)
    if running is not None and "_bottleneck_agent" not in sys.modules:
        sys.modules["_bottleneck_agent"] = running
    _load("_bottleneck_agent", d)
    return _load("_bottleneck_inprocess", d)


class Report(object):
    """A run directory's report: str() is the text report, _repr_html_ the
    HTML report (Jupyter shows it inline), json the report as Python objects."""

    def __init__(self, run_dir):
        self.run_dir = run_dir

    def _read(self, name):
        with open(os.path.join(self.run_dir, name), encoding="utf-8") as f:
            return f.read()

    @property
    def text(self):
        return self._read("report.txt")

    @property
    def json(self):
        return json.loads(self._read("report.json"))

    @property
    def html_path(self):
        return os.path.join(self.run_dir, "report.html")

    def __str__(self):
        return self.text

    def __repr__(self):
        return self.text

    def _repr_html_(self):
        # report.html is a whole document with its own styles and scripts:
        # an iframe keeps them apart from the notebook's
        if os.path.isfile(self.html_path):
            doc = self._read("report.html")
        else:  # no trace was written: the text report is all there is
            doc = "<pre>%s</pre>" % html.escape(self.text)
        return ('<iframe title="bottleneck report" style="width:100%%;height:900px;border:1px solid #ccc" '
                'srcdoc="%s"></iframe>' % html.escape(doc, quote=True))


class profile(object):
    """Record the enclosed block of this running program the way `bottleneck
    run` records a whole program (steps detected from optimizer.step(),
    DataLoader batches or module forwards; a torch.profiler window of
    steady-state steps; the Python sampler), then write the run directory
    and its reports when the block ends.

        with bottleneck_profiler.profile(active=5) as p:
            for batch in loader: ...
        p.report()

    out: the run directory (default ./bottleneck-runs/<timestamp>).
    trace=False: no torch.profiler window. trackers=False: do not hand the
    verdict and report to an active W&B or MLflow run (trackers_used says
    which were). Other keywords are the settings
    of `bottleneck run` of the same names: skip_first, wait, warmup,
    active, early_start_s, repeat, record_shapes, profile_memory, with_stack, with_flops,
    with_modules, python_profiler, sample_interval, window_sample_interval,
    step_source, sync_debug.

    Inside `bottleneck run` the program is already recorded: the block runs
    unrecorded and report() is the run's, once it has ended.
    """

    def __init__(self, out=None, trace=True, trackers=True, **settings):
        prof = {}
        top = {}
        for k, v in settings.items():
            if k in _PROFILER_KEYS:
                prof[k] = v
            elif k in _TOP_KEYS:
                top[k] = v
            else:
                raise TypeError("profile() got an unexpected keyword argument %r" % k)
        prof["enabled"] = bool(trace)
        if "active" in prof and "min_window_s" not in prof:
            prof["min_window_s"] = 0  # the steps asked for, however short (as `run --active`)
        top["profiler"] = prof
        self._settings = top
        self._out = out
        self._trackers = trackers
        self.trackers_used = []
        self._agent = None
        self._mod = None
        self._outer = False  # recorded by `bottleneck run`, not by this block
        self.run_dir = None

    def _begin(self):
        # the binary owns the defaults and the manifest; the settings given
        # here are merged over its defaults
        args = ["collect", "--begin", "--python", sys.executable, "--pid", str(os.getpid())]
        if self._out is not None:
            args += ["--out", os.fspath(self._out)]
        args += ["--settings", json.dumps(self._settings), "--"] + list(sys.argv)
        return json.loads(_call(args)[1])

    def __enter__(self):
        self._mod = _inprocess()
        outer = self._mod.active_agent()
        if outer is not None:
            self._outer = True
            self.run_dir = outer.run_dir
            return self
        cfg = self._begin()
        self.run_dir = cfg["run_dir"]
        self._agent = self._mod.start(cfg)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._agent is None:
            return False
        agent, self._agent = self._agent, None
        self._mod.stop(agent, exc)
        try:
            _call(["collect", self.run_dir])
        except BottleneckError as e:
            if exc is None:
                raise
            # the block's own exception is what the user must see
            sys.stderr.write("bottleneck_profiler: %s\n" % e)
            return False
        if self._trackers:
            self.trackers_used = _trackers.publish(self.run_dir, Report(self.run_dir).json)
        return False

    def report(self):
        """The report of the recorded block (a Report)."""
        if self.run_dir is None:
            raise BottleneckError("profile(): nothing recorded yet (use it as `with profile() as p:`)")
        if self._agent is not None:
            raise BottleneckError("profile(): the block is still running; call report() after it")
        if self._outer and not os.path.exists(os.path.join(self.run_dir, "report.txt")):
            raise BottleneckError("profile(): this program is recorded by `bottleneck run`, which writes the "
                                  "report when the program ends, into %s" % self.run_dir)
        return Report(self.run_dir)

    def _repr_html_(self):
        return self.report()._repr_html_()


def analyze(*paths, **options):
    """`bottleneck analyze --json PATHS...` as Python objects. options are
    analyze's flags (top=20, rank=1, steps="3-7", definition="hta").
    A report is returned even when the input had problems (exit status 3,
    described in the report); BottleneckError when nothing was readable."""
    if not paths:
        raise TypeError("analyze() needs at least one trace file or directory")
    args = ["analyze", "--json"]
    for k, v in options.items():
        flag = "--" + k.replace("_", "-")
        if v is True:
            args.append(flag)
        elif v not in (False, None):
            args += [flag, str(v)]
    args += ["--"] + [os.fspath(p) for p in paths]
    code, out, err = _call(args, check=False)
    if code not in (0, 3) or not out.strip():
        raise BottleneckError("bottleneck analyze: exit status %d\n%s" % (code, err.strip()))
    return json.loads(out)


class Tried(object):
    """What try_change() measured: str() is `bottleneck try`'s text (the
    measured speed-up with its 95% interval beside the prediction), json
    its try.json as Python objects, run_dir the folder of the runs."""

    def __init__(self, run_dir, text):
        self.run_dir = run_dir
        self.text = text
        with open(os.path.join(run_dir, "try.json"), encoding="utf-8") as f:
            self.json = json.load(f)

    def __str__(self):
        return self.text

    def __repr__(self):
        return self.text


def _change_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _new_try_dir():
    # the binary's default folder (./bottleneck-runs/<timestamp>-try),
    # named here so that its try.json can be read back
    base = os.path.join("bottleneck-runs", time.strftime("%Y%m%d-%H%M%S") + "-try")
    d, i = base, 1
    while os.path.exists(d):
        i += 1
        d = "%s-%d" % (base, i)
    return d


def try_change(program, *args, **options):
    """`bottleneck try`: run a program as it is and again with changes the
    agent makes at run time, without editing it, and compare the two (the
    mean step's speed-up with its 95% interval, beside what the first run's
    diagnosis predicted). Returns a Tried.

        r = bottleneck_profiler.try_change("train.py", "--epochs", "1", num_workers=4)
        print(r)                       # the measured line, the prediction
        r.json["pairs"][0]["mean_speedup"]

    program is a script (or a module with module=True), args its
    arguments. The changes are keywords (`bottleneck try --help` lists
    them: num_workers, pin_memory, threads, gc_freeze, tf32, ...); the
    other keywords are try's flags: compare=True (as-is and changed twice,
    interleaved), steps (timed a run, default 10), module, python (default
    this interpreter), out (the runs' folder, new or empty; default
    ./bottleneck-runs/<timestamp>-try), timeout (seconds a run). The
    program runs twice (four times with compare), with its side effects
    each time. BottleneckError when a run of it failed or a change is not
    one the agent can make."""
    flags = {"compare": None, "steps": None, "module": None, "python": None, "out": None, "timeout": None}
    changes = {}
    for k, v in options.items():
        if k in flags:
            flags[k] = v
        else:
            changes[k] = v
    if not changes:
        raise TypeError("try_change() needs at least one change, e.g. num_workers=4")
    out = os.fspath(flags["out"]) if flags["out"] is not None else _new_try_dir()
    argv = ["try", "-o", out, "--python", flags["python"] or sys.executable]
    for k in sorted(changes):
        argv += ["--set", "%s=%s" % (k, _change_value(changes[k]))]
    if flags["compare"]:
        argv.append("--compare")
    if flags["steps"] is not None:
        argv += ["--steps", str(int(flags["steps"]))]
    if flags["timeout"] is not None:
        argv += ["--timeout", "%gs" % float(flags["timeout"])]
    if flags["module"]:
        argv.append("-m")
    argv += [os.fspath(program)] + [str(a) for a in args]
    code, text, err = _call(argv, check=False)
    if code != 0:
        raise BottleneckError("bottleneck try: exit status %d\n%s" % (code, err.strip()))
    return Tried(out, text)
