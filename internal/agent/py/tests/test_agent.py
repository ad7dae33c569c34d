"""Unit tests of the bottleneck agent (standard library only, no torch
needed). Run by internal/agent's Go test:

    python -m unittest discover -s internal/agent/py/tests -v
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_DIR = os.path.dirname(HERE)
sys.path.insert(0, AGENT_DIR)

import _bottleneck_agent as A  # noqa: E402
import _bottleneck_files as F  # noqa: E402


@unittest.skipUnless(hasattr(os, "register_at_fork") and hasattr(signal, "pthread_sigmask"), "POSIX fork")
class ForkSigtermTest(unittest.TestCase):
    SCRIPT = """
import os, signal, sys, time
sys.path.insert(0, %r)
import _bottleneck_agent as A
def handler(signum, frame):  # stands for the agent's
    pass
signal.signal(signal.SIGTERM, handler)
# registered first, so it runs in the child before the agent's hooks:
# a SIGTERM that reaches a worker as soon as it is forked
os.register_at_fork(after_in_child=lambda: os.kill(os.getpid(), signal.SIGTERM) if %r else None)
A.default_sigterm_in_children(handler)
pid = os.fork()
if pid == 0:
    time.sleep(3)
    os._exit(7)
_, status = os.waitpid(pid, 0)
print(os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status),
      signal.getsignal(signal.SIGTERM) is handler, signal.pthread_sigmask(signal.SIG_BLOCK, []) == set())
"""

    def run_script(self, kill):
        out = subprocess.run([sys.executable, "-c", self.SCRIPT % (AGENT_DIR, kill)], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout.split()

    def test_sigterm_right_after_fork_ends_the_child(self):
        # the child dies of the SIGTERM; the parent keeps its handler and mask
        self.assertEqual(self.run_script(True), [str(int(signal.SIGTERM)), "True", "True"])

    def test_child_runs_as_usual(self):
        self.assertEqual(self.run_script(False), ["-7", "True", "True"])


class FilesTest(unittest.TestCase):
    def test_atomic_write_leaves_no_temporary(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.json")
            F.atomic_write_json(p, {"a": 1})
            F.atomic_write_json(p, {"a": 2})
            self.assertEqual(json.load(open(p)), {"a": 2})
            self.assertEqual(os.listdir(d), ["x.json"])

    def test_traceback_loses_trailing_agent_frames(self):
        # A Ctrl-C can land inside one of the agent's hooks; the program's
        # traceback must still show only its own frames.
        def user_code():
            F.atomic_write_json(os.path.join(tempfile.gettempdir(), "no", "such", "dir", "x"), {})

        try:
            user_code()
        except OSError as e:
            tb = e.__traceback__
        names = []
        t = A._trim_agent_frames(tb)
        while t is not None:
            names.append(t.tb_frame.f_code.co_name)
            t = t.tb_next
        self.assertEqual(names, ["test_traceback_loses_trailing_agent_frames", "user_code"])

    def test_code_of_every_module_is_the_agents(self):
        # the sampler and the traceback trimming know the agent's frames by
        # their file: every module the agent loads must be one of its files
        for fn in (A.Agent.start, A.Agent._step, A.Agent.write_evidence, A.base_env, A.atomic_write_json,
                   A.Sampler.sample_once, A.is_library_file):
            self.assertTrue(A.is_agent_file(fn.__code__.co_filename), fn.__code__.co_filename)
        self.assertFalse(A.is_agent_file(__file__))


class IdentityTest(unittest.TestCase):
    class Opt(object):
        pass

    def test_an_object_at_a_freed_ones_address_is_another(self):
        first = self.Opt()
        ident, seen = A._Identity(first), A._IdentitySet()
        seen.add(first)
        self.assertTrue(ident.of(first) and seen.has(first))
        address = id(first)
        del first
        # CPython hands the freed block to the next object of the same
        # size: look for one at the old address
        reused = [o for o in (self.Opt() for _ in range(100)) if id(o) == address]
        if not reused:
            self.skipTest("no object made at the freed address")
        self.assertFalse(ident.of(reused[0]) or seen.has(reused[0]))

    def test_the_set_forgets_the_freed(self):
        seen, kept = A._IdentitySet(), []
        for i in range(200):
            o = self.Opt()
            seen.add(o)
            if i % 50 == 0:
                kept.append(o)
        self.assertLess(len(seen._by_id), 70)
        self.assertTrue(all(seen.has(o) for o in kept))


class ForwardLockTest(unittest.TestCase):
    def test_forwards_inside_an_optimizer_step_do_not_lock(self):
        # LBFGS's step(closure) calls the model many times before it
        # returns: those forwards are inside one step, however long it takes
        a = A.Agent({"run_dir": tempfile.mkdtemp()}, "script")
        a.step_counts["forward"] = 100
        a._first_forward_t = time.perf_counter() - 2 * A._UNSTEPPED_OPTIMIZER_WAIT_S
        a._optimizer_made = True
        self.assertNotEqual(a._forwards_to_lock(), float("inf"))  # the wait is over: forwards may lock
        a._on_optimizer_step_begin(None, (), {})
        self.assertEqual(a._forwards_to_lock(), float("inf"))
        a._optimizer_step_begun = False  # what the post hook does first
        self.assertNotEqual(a._forwards_to_lock(), float("inf"))


class SyncCaptureTest(unittest.TestCase):
    def make_agent(self, d):
        return A.Agent({"run_dir": d, "python_profiler": "off", "profiler": {"enabled": False}}, "script")

    def test_sync_warning_recorded_at_user_line_and_hidden(self):
        with tempfile.TemporaryDirectory() as d:
            a = self.make_agent(d)
            a._orig_showwarning = warnings.showwarning
            user_code = compile(
                "def step():\n"
                "    warnings.warn('called a synchronizing CUDA operation')\n"
                "for _ in range(3):\n"
                "    step()\n", "/home/user/train.py", "exec")
            old = warnings.showwarning
            warnings.showwarning = a._showwarning
            try:
                with warnings.catch_warnings():
                    warnings.showwarning = a._showwarning
                    warnings.simplefilter("always")
                    exec(user_code, {"warnings": warnings})
            finally:
                warnings.showwarning = old
            self.assertEqual(a.sync_total, 3)
            sites = list(a.sync_sites.values())
            self.assertEqual(len(sites), 1)
            self.assertEqual(sites[0]["file"], "/home/user/train.py")
            self.assertEqual(sites[0]["line"], 2)
            self.assertEqual(sites[0]["func"], "step")
            self.assertEqual(sites[0]["stack"][1]["line"], 4)

    def test_other_warnings_pass_through(self):
        with tempfile.TemporaryDirectory() as d:
            a = self.make_agent(d)
            seen = []
            a._orig_showwarning = lambda *args: seen.append(str(args[0]))
            a._showwarning(UserWarning("something else"), UserWarning, "f.py", 1)
            self.assertEqual(seen, ["something else"])
            self.assertEqual(a.sync_total, 0)


class EvidenceTest(unittest.TestCase):
    def test_no_torch_evidence_says_what_is_missing(self):
        with tempfile.TemporaryDirectory() as d:
            a = A.Agent({"run_dir": d, "python_profiler": "sample", "sample_interval": 0.005,
                         "profiler": {"enabled": True}}, "script")
            a.start()
            time.sleep(0.05)
            a.finish("ok", 0)
            a.finish("ok", 0)  # idempotent
            files = sorted(os.listdir(d))
            self.assertIn("evidence-rank0.json", files)
            self.assertIn("pyprofile-rank0.json", files)
            self.assertIn("env-rank0.json", files)
            ev = json.load(open(os.path.join(d, "evidence-rank0.json")))
            self.assertTrue(ev["final"])
            self.assertEqual(ev["exit"]["reason"], "ok")
            if "torch" not in sys.modules:
                whats = [m["what"] for m in ev["missing"]]
                self.assertIn("torch.profiler trace", whats)
            env = json.load(open(os.path.join(d, "env-rank0.json")))
            self.assertEqual(env["python"]["version"].split(".")[:2], [str(v) for v in sys.version_info[:2]])

    def test_tags_are_claimed_once(self):
        with tempfile.TemporaryDirectory() as d:
            a = A.Agent({"run_dir": d}, "launcher")
            b = A.Agent({"run_dir": d}, "launcher")
            ta, tb = a.claim_tag(), b.claim_tag()
            self.assertNotEqual(ta, tb)
            self.assertTrue(tb.startswith(ta + "-pid"))


SCRIPT = r'''
import json, os, sys, pickle
class Point:
    def __init__(self, x): self.x = x
def square(v): return v * v
if __name__ == "__main__":
    info = {
        "name": __name__, "file": __file__, "spec": repr(__spec__), "package": __package__,
        "argv": sys.argv, "path0": sys.path[0], "cached": __cached__,
        "loader": type(__loader__).__name__, "pickled": len(pickle.dumps(Point(3))) > 0,
        "main_is_module": sys.modules["__main__"].__dict__ is globals(),
        "agent_on_path": any("_bottleneck" in os.listdir(p) for p in sys.path if os.path.isdir(p) and p),
        "agent_modules": sorted(m for m in sys.modules if "bottleneck" in m),
        "threads": [t.name for t in __import__("threading").enumerate()],
        "depth": len(__import__("traceback").extract_stack()),
    }
    if os.environ.get("WITH_SPAWN"):
        import multiprocessing as mp
        with mp.get_context("spawn").Pool(1) as pool:
            info["spawn"] = pool.map(square, [2, 3])
    print(json.dumps(info))
'''

PKG_MOD = r'''
import json, sys
from .helper import VALUE
print(json.dumps({"name": __name__, "spec": __spec__.name, "package": __package__,
                  "argv0_suffix": sys.argv[0].endswith("mod.py"), "argv": sys.argv[1:],
                  "path0": sys.path[0], "value": VALUE}))
'''


class RunMainTest(unittest.TestCase):
    """The program must see what `python script.py` / `python -m` give it."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        self.script = os.path.join(d, "prog.py")
        with open(self.script, "w") as f:
            f.write(SCRIPT)
        os.makedirs(os.path.join(d, "pkg"))
        open(os.path.join(d, "pkg", "__init__.py"), "w").close()
        with open(os.path.join(d, "pkg", "helper.py"), "w") as f:
            f.write("VALUE = 42\n")
        with open(os.path.join(d, "pkg", "mod.py"), "w") as f:
            f.write(PKG_MOD)
        self.cfg = os.path.join(d, "cfg.json")
        with open(self.cfg, "w") as f:
            json.dump({"run_dir": os.path.join(d, "run"), "python_profiler": "sample",
                       "sample_interval": 0.005, "profiler": {"enabled": True}}, f)
        self.boot = os.path.join(AGENT_DIR, "_bottleneck_boot.py")

    def tearDown(self):
        self.tmp.cleanup()

    def run_py(self, args, env=None):
        e = dict(os.environ)
        e.update(env or {})
        e.pop("PYTHONPATH", None)
        p = subprocess.run([sys.executable] + args, cwd=self.tmp.name, env=e,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        return p

    def test_script_main_matches_plain_python(self):
        env = {"WITH_SPAWN": "1"}
        plain = self.run_py(["prog.py", "a", "--b"], env)
        agent = self.run_py([self.boot, self.cfg, "script", "prog.py", "a", "--b"], env)
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(agent.returncode, 0, agent.stderr)
        p, a = json.loads(plain.stdout), json.loads(agent.stdout)
        # the program's frames sit under the boot module and run_main: its
        # recursion limit is that much lower (documented in docs/run.md)
        self.assertEqual(a.pop("depth") - p.pop("depth"), 2)
        self.assertEqual(a, p)
        self.assertEqual(a["agent_modules"], [])
        self.assertEqual(a["threads"], ["MainThread"])
        self.assertEqual(a["spawn"], [4, 9])
        self.assertFalse(a["agent_on_path"])
        # exactly one process was profiled: spawn children never load the agent
        ev = [f for f in os.listdir(os.path.join(self.tmp.name, "run")) if f.startswith("evidence-")]
        self.assertEqual(ev, ["evidence-rank0.json"])

    def test_module_main_matches_plain_python(self):
        plain = self.run_py(["-m", "pkg.mod", "x", "-y"])
        agent = self.run_py([self.boot, self.cfg, "module", "pkg.mod", "x", "-y"])
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertEqual(agent.returncode, 0, agent.stderr)
        self.assertEqual(json.loads(agent.stdout), json.loads(plain.stdout))

    def test_sigterm_during_the_save_ends_it(self):
        # a second SIGTERM while the first one's save runs (or while the
        # program's end saves): the save completes, then SIGTERM ends the
        # process; before, the handler waited for the save's lock forever
        prog = '''import os, signal, sys, time
agent = sys._bottleneck_agent.get_agent()
progress = agent.progress
def saving(phase, **kw):
    progress(phase, **kw)
    if phase == "saving":
        os.kill(os.getpid(), signal.SIGTERM)
agent.progress = saving
if sys.argv[1] == "term":
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
'''
        with open(os.path.join(self.tmp.name, "term.py"), "w") as f:
            f.write(prog)
        for how in ("term", "end"):
            shutil.rmtree(os.path.join(self.tmp.name, "run"), ignore_errors=True)
            p = self.run_py([self.boot, self.cfg, "script", "term.py", how])
            self.assertEqual(p.returncode, -signal.SIGTERM, (how, p.stderr))
            with open(os.path.join(self.tmp.name, "run", "evidence-rank0.json")) as f:
                ev = json.load(f)
            self.assertTrue(ev["final"], how)
            self.assertEqual(ev["exit"]["reason"], "terminated" if how == "term" else "ok", how)

    def test_exit_codes_and_tracebacks(self):
        cases = {
            "import sys\nsys.exit(3)\n": (3, None),
            "import sys\nsys.exit('message')\n": (1, "message"),
            "def f():\n    raise ValueError('boom')\nf()\n": (1, "ValueError: boom"),
            "raise SystemExit\n": (0, None),
        }
        for src, (code, err) in cases.items():
            with open(self.script, "w") as f:
                f.write(src)
            plain = self.run_py(["prog.py"])
            agent = self.run_py([self.boot, self.cfg, "script", "prog.py"])
            self.assertEqual(plain.returncode, code, src)
            self.assertEqual(agent.returncode, code, (src, agent.stderr))
            if err:
                self.assertIn(err, agent.stderr)
            # tracebacks are the program's own: no agent frames
            self.assertNotIn("_bottleneck", agent.stderr)
            self.assertEqual(agent.stderr.strip().splitlines()[-1:], plain.stderr.strip().splitlines()[-1:])

    def test_keyboard_interrupt_dies_by_sigint(self):
        with open(self.script, "w") as f:
            f.write("raise KeyboardInterrupt\n")
        plain = self.run_py(["prog.py"])
        agent = self.run_py([self.boot, self.cfg, "script", "prog.py"])
        self.assertEqual(agent.returncode, plain.returncode)
        self.assertNotIn("_bottleneck", agent.stderr)
        with open(os.path.join(self.tmp.name, "run", "evidence-rank0.json")) as f:
            ev = json.load(f)
        self.assertEqual(ev["exit"]["reason"], "interrupted")

    def test_missing_script(self):
        agent = self.run_py([self.boot, self.cfg, "script", "nope.py"])
        self.assertEqual(agent.returncode, 2)
        self.assertIn("can't open file", agent.stderr)


class LauncherShimTest(unittest.TestCase):
    def load_shim(self):
        import importlib.util
        spec = importlib.util.spec_from_file_location("_shim_under_test", os.path.join(AGENT_DIR, "sitecustomize.py"))
        mod = importlib.util.module_from_spec(spec)
        saved = sys.modules.get("sitecustomize")
        old_env = os.environ.pop("BOTTLENECK_AGENT_CONFIG", None)
        try:
            spec.loader.exec_module(mod)
        finally:
            if saved is not None:
                sys.modules["sitecustomize"] = saved
            if old_env is not None:
                os.environ["BOTTLENECK_AGENT_CONFIG"] = old_env
        return mod

    def test_activation_rules(self):
        shim = self.load_shim()
        env = {"BOTTLENECK_AGENT_CONFIG": "/x/config.json"}
        old = sys.argv
        try:
            for argv, want in ((["train.py", "--lr", "1"], True),
                               (["/venv/bin/torchrun", "--nproc_per_node", "2", "t.py"], False),
                               (["/venv/bin/accelerate", "launch", "t.py"], False),
                               (["-c", "from multiprocessing.spawn import spawn_main"], False),
                               (["", ], False)):
                sys.argv = argv
                self.assertEqual(shim.should_activate(env), want, argv)
            sys.argv = ["train.py"]
            self.assertFalse(shim.should_activate({}))
            self.assertFalse(shim.should_activate(dict(env, BOTTLENECK_AGENT_ACTIVE="12")))
        finally:
            sys.argv = old

    def test_chains_to_existing_sitecustomize_and_profiles_script(self):
        with tempfile.TemporaryDirectory() as d:
            other = os.path.join(d, "other")
            os.makedirs(other)
            with open(os.path.join(other, "sitecustomize.py"), "w") as f:
                f.write("import os\nos.environ['CHAINED'] = 'yes'\n")
            with open(os.path.join(d, "prog.py"), "w") as f:
                f.write("import os, sys, json, subprocess\n"
                        "out = subprocess.run([sys.executable, '-c', 'import os; print(os.environ.get(\"BOTTLENECK_AGENT_ACTIVE\"))'],"
                        " stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()\n"
                        "print(json.dumps({'chained': os.environ.get('CHAINED'), 'child_sees_active': out,"
                        " 'agent': '_bottleneck_agent' in sys.modules, 'name': __name__,"
                        " 'threads': [t.name for t in __import__('threading').enumerate()]}))\n")
            cfg = os.path.join(d, "cfg.json")
            with open(cfg, "w") as f:
                json.dump({"run_dir": os.path.join(d, "run"), "python_profiler": "sample",
                           "profiler": {"enabled": True}}, f)
            env = dict(os.environ)
            env["PYTHONPATH"] = AGENT_DIR + os.pathsep + other
            env["BOTTLENECK_AGENT_CONFIG"] = cfg
            env.pop("BOTTLENECK_AGENT_ACTIVE", None)
            p = subprocess.run([sys.executable, "prog.py"], cwd=d, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = json.loads(p.stdout)
            self.assertEqual(out["chained"], "yes")
            # the agent runs (files below) but the program does not see it
            # in sys.modules nor its sampler thread in threading
            self.assertFalse(out["agent"])
            self.assertEqual(out["threads"], ["MainThread"])
            self.assertEqual(out["name"], "__main__")
            self.assertNotEqual(out["child_sees_active"], "None")
            files = sorted(os.listdir(os.path.join(d, "run")))
            self.assertIn("evidence-rank0.json", files)
            self.assertIn("pyprofile-rank0.json", files)
            self.assertEqual([f for f in files if f.startswith("evidence-")], ["evidence-rank0.json"])


class AutogradHistoryTest(unittest.TestCase):
    """_has_autograd_history: a forward whose inputs were computed with
    autograd on continues a graph, so it does not lock forward steps."""

    class T:  # stands for torch.Tensor: the one attribute the check reads
        def __init__(self, grad_fn=None):
            self.grad_fn = grad_fn

    class Odd:  # the program's own object: getattr raises what it likes
        def __getattr__(self, name):
            raise RuntimeError("not for you")

    def has(self, *args):
        return A._has_autograd_history(args, self.T)

    def test_history(self):
        T = self.T
        self.assertTrue(self.has(T(), T("AddmmBackward0")))  # an RNN cell's (x, h)
        self.assertTrue(self.has(T(), (T(), T("MulBackward0"))))  # an LSTM cell's (x, (h, c))
        self.assertTrue(self.has([T("CatBackward0")]))

    def test_no_history(self):
        T = self.T
        self.assertFalse(self.has())
        self.assertFalse(self.has(T(), T()))  # data, a leaf parameter
        self.assertFalse(self.has(1, "x", None, [T(), T()]))
        self.assertFalse(self.has(self.Odd(), T()))


class TensorShapesTest(unittest.TestCase):
    """_tensor_shapes: what a step's forward got, for a model fed more
    every step (one level into tuples and lists, at most four, nothing
    from the program's own objects)."""

    class T:  # stands for torch.Tensor: the one attribute read
        def __init__(self, *shape):
            self.shape = shape

    def test_shapes(self):
        T = self.T
        self.assertEqual(A._tensor_shapes((T(1, 15), 3, "x", (T(2), T())), T), [[1, 15], [2], []])
        self.assertEqual(A._tensor_shapes([[T(1)] * 6], T), [[1]] * 4)
        self.assertEqual(A._tensor_shapes((), T), [])
        self.assertEqual(A._tensor_shapes((AutogradHistoryTest.Odd(), {"a": T(1)}), T), [])

    def test_call_kwargs(self):
        """A model called with keyword arguments only (model(**inputs)):
        the hook's caller, Module._call_impl, holds them."""
        def hook():
            return A._call_kwargs(sys._getframe(1))

        def _call_impl(*args, **kwargs):  # as torch.nn.Module's
            return hook()

        T = self.T
        got = _call_impl(input_ids=T(1, 1), use_cache=True)
        self.assertEqual(A._tensor_shapes(got.values(), T), [[1, 1]])
        self.assertEqual(A._call_kwargs(sys._getframe(0)), {})  # no module call around


class DatasetInMemoryTest(unittest.TestCase):
    """_dataset_in_memory: a torchvision dataset holding its samples as
    one array is described (the array's shape, its transforms' names);
    any other dataset, or one whose .data is not its samples, is not."""

    class Data:  # stands for a tensor or an ndarray: the shape read
        def __init__(self, *shape):
            self.shape = shape

    class ToTensor:
        pass

    class Normalize:
        pass

    class Compose:
        def __init__(self, parts):
            self.transforms = parts

    def dataset(self, module, data, transform=None, target_transform=None):
        cls = type("MNIST", (), {"__module__": module, "__len__": lambda self: 60000})
        ds = cls()
        ds.data, ds.transform, ds.target_transform = data, transform, target_transform
        return ds

    def test_torchvision(self):
        ds = self.dataset("torchvision.datasets.mnist", self.Data(60000, 28, 28), self.Compose([self.ToTensor(), self.Normalize()]))
        self.assertEqual(A._dataset_in_memory(ds), {"memory_shape": [60000, 28, 28], "transforms": ["ToTensor", "Normalize"], "target_transform": False})
        one = self.dataset("torchvision.datasets.cifar", self.Data(60000, 32, 32, 3), self.ToTensor(), target_transform=self.ToTensor())
        self.assertEqual(A._dataset_in_memory(one), {"memory_shape": [60000, 32, 32, 3], "transforms": ["ToTensor"], "target_transform": True})

    def test_silent(self):
        # the program's own dataset with a .data, a .data that is not the
        # samples, none, and a length that fails
        self.assertEqual(A._dataset_in_memory(self.dataset("__main__", self.Data(60000, 28, 28))), {})
        self.assertEqual(A._dataset_in_memory(self.dataset("torchvision.datasets.mnist", self.Data(10, 28, 28))), {})
        self.assertEqual(A._dataset_in_memory(self.dataset("torchvision.datasets.mnist", None)), {})
        broken = type("Folder", (), {"__module__": "torchvision.datasets.folder", "__len__": lambda self: 1 / 0, "data": self.Data(1, 2, 3)})()
        self.assertEqual(A._dataset_in_memory(broken), {})
        self.assertEqual(A._dataset_in_memory(None), {})


class ProgressTest(unittest.TestCase):
    """progress: a new phase is written at once, the same phase's counters
    at most every _PROGRESS_EVERY_S (it was written at every step, 0.85 ms
    each inside the optimizer's step)."""

    def test_throttled(self):
        import types
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        a = types.SimpleNamespace(progress_path=os.path.join(d, "p.json"), tag="rank0", steps=1,
                                  _progress_phase=None, _progress_at=0.0)

        def written():
            with open(a.progress_path) as f:
                return json.load(f)
        A.Agent.progress(a, "recording", active_step=1)
        a.steps = 2
        A.Agent.progress(a, "recording", active_step=2)
        self.assertEqual(written()["active_step"], 1)  # the same phase, too soon
        A.Agent.progress(a, "writing trace", window=1)
        self.assertEqual(written()["phase"], "writing trace")  # a new phase at once
        a._progress_at -= A._PROGRESS_EVERY_S
        a.steps = 3
        A.Agent.progress(a, "writing trace", window=1)
        self.assertEqual(written()["step"], 3)  # the same phase, later


class HasGradsTest(unittest.TestCase):
    """_has_grads: a backward left a gradient in some module called."""

    class P:
        def __init__(self, grad=None):
            self.grad = grad

    class M:
        def __init__(self, *params):
            self.params = params

        def parameters(self):
            return iter(self.params)

    def test_grads(self):
        import weakref
        P, M = self.P, self.M
        frozen, trained = M(P(), P()), M(P(), P("g"))
        self.assertTrue(A._has_grads([weakref.ref(frozen), weakref.ref(trained)]))  # a frozen encoder beside a trained UNet
        self.assertFalse(A._has_grads([weakref.ref(frozen), None, weakref.ref(M())]))
        gone = M(P("g"))
        ref = weakref.ref(gone)
        del gone
        self.assertFalse(A._has_grads([ref]))


try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class OptimizerParamsTest(unittest.TestCase):
    """_optimizer_params: a dense 2-D gradient says how many rows the
    step's batch touched; a sparse or 1-D one does not."""

    def step(self, sparse):
        import torch
        emb = torch.nn.Embedding(1000, 8, sparse=sparse)
        head = torch.nn.Linear(8, 1)
        idx = torch.tensor([[3, 7, 7, 900], [3, 5, 11, 42]])  # 6 distinct rows
        head(emb(idx)).sum().backward()
        return A._optimizer_params(torch.optim.SGD(list(emb.parameters()) + list(head.parameters()), lr=0.1))

    def test_dense_table(self):
        rec = self.step(sparse=False)
        self.assertEqual(rec["sparse_grads"], 0)
        table, weight, bias = rec["largest"]
        self.assertEqual(table["shape"], [1000, 8])
        self.assertEqual(table["grad_rows"], 6)
        self.assertEqual(weight["grad_rows"], 1)  # the head's [1, 8] weight: one row
        self.assertNotIn("grad_rows", bias)

    def test_sparse_table(self):
        rec = self.step(sparse=True)
        table = rec["largest"][0]
        self.assertTrue(table["sparse_grad"])
        self.assertEqual(rec["sparse_grads"], 1)
        self.assertNotIn("grad_rows", table)

    def test_no_grad(self):
        import torch
        opt = torch.optim.SGD(torch.nn.Embedding(10, 2).parameters(), lr=0.1)
        self.assertNotIn("grad_rows", A._optimizer_params(opt)["largest"][0])


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class ConvCountsTest(unittest.TestCase):
    """_conv_counts: a model's layers (Linear and convolution modules,
    transposed ones too), its convolutions, the depthwise ones, and those
    with a stride (bf16 autocast slows their backward on a CPU); grouped
    convolutions that are not depthwise and transposed ones are not
    counted as such."""

    def test_counts(self):
        import torch
        nn = torch.nn
        model = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2),
            nn.Conv2d(16, 16, 3, stride=2, groups=16),  # depthwise, strided
            nn.Conv2d(16, 16, 3, groups=16),  # depthwise, stride 1
            nn.Conv2d(16, 32, 3, stride=2, groups=4),  # grouped
            nn.Sequential(nn.Conv1d(32, 32, 3, stride=(2,), groups=32)),  # nested, depthwise, strided
            nn.ConvTranspose2d(32, 32, 2, stride=2, groups=32),
            nn.ReLU())
        self.assertEqual(A._conv_counts(model, torch), {"layers": 6, "convs": 5, "depthwise": 3, "strided_depthwise": 2})

    def test_no_convolutions(self):
        import torch
        self.assertEqual(A._conv_counts(torch.nn.Linear(4, 2), torch), {"layers": 1})
        self.assertEqual(A._conv_counts(torch.nn.ReLU(), torch), {})
        self.assertEqual(A._conv_counts(object(), torch), {})  # not a module: nothing


class PaddingTest(unittest.TestCase):
    """_padding: a call's attention_mask as positions computed, real
    tokens and positions padded to each batch's longest; nothing for a
    float (additive) mask, a mask of another rank, or none."""

    def test_padded(self):
        import torch
        m = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 0]])
        self.assertEqual(A._padding({"attention_mask": m}, torch), (12, 5, 6))
        self.assertEqual(A._padding({"attention_mask": m.bool()}, torch), (12, 5, 6))
        self.assertEqual(A._padding({"attention_mask": torch.ones(4, 8, dtype=torch.long)}, torch), (32, 32, 32))

    def test_no_mask(self):
        import torch
        self.assertIsNone(A._padding({}, torch))
        self.assertIsNone(A._padding(None, torch))
        self.assertIsNone(A._padding({"attention_mask": torch.zeros(2, 3)}, torch))  # float: additive
        self.assertIsNone(A._padding({"attention_mask": torch.ones(2, 3, 3, dtype=torch.long)}, torch))
        self.assertIsNone(A._padding({"attention_mask": [[1, 0]]}, torch))


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class FreshCallStepsTest(unittest.TestCase):
    """Once calls that continue an autograd graph were seen, a forward
    step starts at a fresh call (inputs without autograd history) of the
    module with the most of them: an encoder-decoder trained without
    torch.optim steps once an iteration, on its encoder, though its
    decoder is called more; a model called on fresh inputs alone steps
    at each of its calls, as before."""

    def run_loop(self, iterations, body):
        a = A.Agent({"run_dir": tempfile.mkdtemp(), "python_profiler": "off", "profiler": {"enabled": False}}, "script")
        a.torch = torch
        a._install_forward_hooks()
        try:
            for _ in range(iterations):
                body()
        finally:
            a._remove_forward_hooks()
        return a

    def test_encoder_decoder(self):
        nn = torch.nn
        enc, dec, out = nn.GRUCell(4, 8), nn.GRUCell(8, 8), nn.Linear(8, 3)

        def iteration():
            h = enc(torch.randn(2, 4))
            loss = 0
            for _ in range(6):  # the decoder fed its own state: 6 calls with history
                h = dec(h, h)
                loss = loss + out(h).sum()
            loss.backward()
            with torch.no_grad():
                for m in (enc, dec, out):
                    for p in m.parameters():
                        p.add_(p.grad, alpha=-0.01)
                        p.grad = None

        a = self.run_loop(20, iteration)
        self.assertEqual(a.step_source, "forward")
        self.assertEqual(a.step_module, id(enc))
        self.assertGreaterEqual(a.steps, 10)
        self.assertLessEqual(a.steps, 20)

    def test_fresh_inputs_only(self):
        model = torch.nn.Linear(4, 2)
        a = self.run_loop(100, lambda: model(torch.randn(3, 4)).sum().backward())
        self.assertEqual(a.step_source, "forward")
        self.assertFalse(a._fresh_steps_only)
        self.assertGreater(a.steps, 30)


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class ModelGradModeTest(unittest.TestCase):
    """A model whose first outermost call ran with gradients off (a
    distillation's teacher under torch.no_grad, or inference_mode) is
    recorded no_grad; the trained model, called with them, is not."""

    def test_teacher_and_student(self):
        teacher, student = torch.nn.Linear(4, 3), torch.nn.Linear(4, 3)
        a = A.Agent({"run_dir": tempfile.mkdtemp(), "python_profiler": "off", "profiler": {"enabled": False}}, "script")
        a.torch = torch
        a._install_forward_hooks()
        try:
            for _ in range(3):
                x = torch.randn(2, 4)
                with torch.no_grad():
                    t = teacher(x)
                (student(x) - t).pow(2).sum().backward()
            with torch.inference_mode():
                student(torch.randn(2, 4))  # an evaluation's call, from its own line
        finally:
            a._remove_forward_hooks()
        got = sorted((m["line"], m.get("no_grad", False)) for m in a.models.values())
        self.assertEqual([g for _, g in got], [True, False, True], a.models)


@unittest.skipUnless(HAVE_TORCH, "needs torch")
class ClosureStepsTest(unittest.TestCase):
    """An optimizer.step(closure) that evaluates its closure
    _CLOSURE_LOCK_EVALS times without returning, before any step ended,
    makes each evaluation a step (a PINN's L-BFGS with a large max_iter:
    its whole training one step); L-BFGS's default (up to 25 evaluations a
    step) and closures evaluated once a step keep optimizer steps."""

    def run_steps(self, make_opt, steps, source="auto"):
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
        a = A.Agent({"run_dir": tempfile.mkdtemp(), "python_profiler": "off", "profiler": {"enabled": False}, "step_source": source}, "script")
        a.torch = torch
        hooks = [register_optimizer_step_pre_hook(a._on_optimizer_step_begin), register_optimizer_step_post_hook(a._on_optimizer_step)]
        w = torch.nn.Parameter(torch.randn(8))
        target = torch.randn(8)
        opt = make_opt([w])
        evals = [0]

        def closure():
            evals[0] += 1
            opt.zero_grad()
            loss = ((w - target) ** 4).sum()
            loss.backward()
            return loss

        try:
            for _ in range(steps):
                opt.step(closure)
        finally:
            for h in hooks:
                h.remove()
        return a, evals[0]

    def test_one_long_step(self):
        # no tolerance ends it early: 200 evaluations in one step
        a, evals = self.run_steps(lambda p: torch.optim.LBFGS(p, max_iter=200, max_eval=200, tolerance_grad=-1, tolerance_change=-1), 1)
        self.assertEqual(evals, 200)
        self.assertEqual(a.step_source, "closure")
        self.assertEqual(a.step_counts["closure"], 200)
        self.assertEqual(a.steps, 200 - A._CLOSURE_LOCK_EVALS)  # each evaluation after the one that locked starts a step
        self.assertTrue(any("closure" in n for n in a.notes), a.notes)

    def test_default_lbfgs_keeps_optimizer_steps(self):
        a, evals = self.run_steps(lambda p: torch.optim.LBFGS(p, tolerance_grad=-1, tolerance_change=-1), 4)
        self.assertEqual(a.step_source, "optimizer")
        self.assertGreaterEqual(evals, 4 * 20)  # 20 iterations a step
        self.assertEqual(a.steps, 3)  # the first step locked them

    def test_asked_for(self):
        # --step-source closure: every evaluation a step from the first,
        # through every optimizer.step() (default L-BFGS: 20 a step)
        a, evals = self.run_steps(lambda p: torch.optim.LBFGS(p, tolerance_grad=-1, tolerance_change=-1), 3, source="closure")
        self.assertEqual(a.step_source, "closure")
        self.assertEqual(a.steps, evals - 1)  # the first evaluation locked them
        self.assertTrue(any("--step-source closure" in n for n in a.notes), a.notes)
        # and not asked for, the same program keeps optimizer steps (above)
        b, _ = self.run_steps(lambda p: torch.optim.LBFGS(p, tolerance_grad=-1, tolerance_change=-1), 3, source="optimizer")
        self.assertEqual(b.step_source, "optimizer")

    def test_closure_once_a_step(self):
        a, _ = self.run_steps(lambda p: torch.optim.SGD(p, lr=0.01), 40)
        self.assertEqual(a.step_source, "optimizer")
        self.assertEqual(a.step_counts["closure"], 1)  # wrapped until a step ended
