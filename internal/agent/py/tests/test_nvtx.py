"""Tests of the NVTX ranges (_bottleneck_nvtx, `bottleneck run --nvtx`)
through a recording stand-in of torch.cuda.nvtx: no GPU, no Nsight."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_DIR = os.path.dirname(HERE)
sys.path.insert(0, AGENT_DIR)

import _bottleneck_nvtx as N  # noqa: E402
import _bottleneck_window as W  # noqa: E402


class Recorder(object):
    """torch.cuda.nvtx's range_push / range_pop, recorded; push returns
    the zero-based depth as NVTX does with a tool attached."""

    def __init__(self, fail=None):
        self.calls, self.depth, self.fail = [], 0, fail

    def range_push(self, msg):
        if self.fail is not None:
            raise self.fail
        self.calls.append(("push", msg))
        self.depth += 1
        return self.depth - 1

    def range_pop(self):
        self.calls.append(("pop",))
        self.depth -= 1
        return self.depth


def ranges(mode="steps", rec=None):
    r = N.Ranges(mode, nvtx=rec or Recorder())
    return r, r.nvtx


def balanced(calls):
    depth = 0
    for c in calls:
        depth += 1 if c[0] == "push" else -1
        if depth < 0:
            return False
    return depth == 0


class RangesTest(unittest.TestCase):
    def test_steps_and_phases_in_order(self):
        r, rec = ranges()
        r.begin("forward")  # before the first step: no range
        for n in (1, 2, 3):
            r.begin_step(n)
            for phase in (N.DATALOADER, N.FORWARD, N.BACKWARD, N.OPTIMIZER):
                r.begin(phase)
                r.end(phase)
            r.end_step()
        self.assertTrue(balanced(rec.calls))
        self.assertEqual([c[1] for c in rec.calls if c[0] == "push"],
                         ["step 1", "DataLoader wait", "forward", "backward", "optimizer step"] +
                         ["step 2", "DataLoader wait", "forward", "backward", "optimizer step"] +
                         ["step 3", "DataLoader wait", "forward", "backward", "optimizer step"])
        self.assertEqual(r.evidence()["step_ranges"], 3)
        self.assertEqual(r.missing(), [])  # a tool collected them (depths >= 0)

    def test_a_phase_that_raised_ends_with_its_step(self):
        # a forward that raised never ran its post hook: the next phase
        # nests in it until the step's end pops both
        r, rec = ranges()
        r.begin_step(1)
        r.begin(N.FORWARD)
        r.begin(N.BACKWARD)
        r.end(N.BACKWARD)
        self.assertEqual(rec.depth, 2)
        r.begin_step(2)  # the next step pops what the last one left
        self.assertEqual(rec.depth, 1)
        r.end("not open")  # ignored
        r.end("step 2")  # a phase's end never pops the step
        self.assertEqual(rec.depth, 1)
        r.close()
        self.assertEqual(rec.depth, 0)
        self.assertTrue(balanced(rec.calls))
        self.assertEqual(r.closed_at_exit, 1)

    def test_a_phase_end_pops_what_opened_inside_it(self):
        r, rec = ranges()
        r.begin_step(1)
        r.begin("optimizer_step")
        r.begin("training_step")
        r.end("optimizer_step")  # training_step was left open inside it
        self.assertEqual(r.stack, ["step 1"])
        r.close()
        self.assertTrue(balanced(rec.calls))

    def test_the_program_ends_mid_step(self):
        r, rec = ranges()
        r.begin_step(1)
        r.begin(N.FORWARD)
        r.begin("inner")
        r.close()
        r.close()  # idempotent
        self.assertTrue(balanced(rec.calls))
        self.assertEqual(r.closed_at_exit, 3)
        r.begin_step(2)  # after the finish: nothing
        r.begin(N.FORWARD)
        self.assertTrue(balanced(rec.calls))
        self.assertEqual(r.state, "closed")

    def test_other_threads_emit_nothing(self):
        r, rec = ranges()
        r.begin_step(1)
        t = threading.Thread(target=lambda: (r.begin_step(5), r.begin(N.FORWARD), r.end_step(), r.close()))
        t.start()
        t.join()
        self.assertEqual(rec.calls, [("push", "step 1")])
        self.assertEqual(r.left_open, 1)
        self.assertEqual(r.missing()[0]["why"], "1 ranges were left open: the program ended in another thread "
                                                 "than the one that ran the steps")

    def test_unavailable_nvtx_turns_them_off(self):
        err = RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")
        r, rec = ranges(rec=Recorder(fail=err))
        r.torch = types.SimpleNamespace(__version__="2.15.0+cpu")
        r.begin_step(1)
        r.begin(N.FORWARD)
        r.end_step()
        r.begin_step(2)
        r.close()
        self.assertEqual(rec.calls, [])
        self.assertEqual(r.state, "unavailable")
        self.assertEqual(r.missing(), [{
            "what": "NVTX ranges (--nvtx)",
            "why": "NVTX is unavailable in this torch build (2.15.0+cpu): torch.cuda.nvtx.range_push failed: "
                   "RuntimeError: NVTX functions not installed. Are you sure you have a CUDA build?; "
                   "the program ran without ranges"}])

    def test_no_tool_attached_is_said(self):
        class NoTool(Recorder):
            def range_push(self, msg):
                Recorder.range_push(self, msg)
                return N.NO_TOOL
        r, _ = ranges(rec=NoTool())
        r.begin_step(1)
        r.close()
        why = r.missing(cuda_available=False)[0]["why"]
        self.assertIn("no NVTX tool was attached", why)
        self.assertIn("no usable CUDA device", why)

    def test_no_step_no_range(self):
        r, rec = ranges()
        r.close()
        self.assertEqual(rec.calls, [])
        self.assertIn("no step was detected", r.missing()[0]["why"])


class FrameworkPhasesTest(unittest.TestCase):
    def test_actions_are_ranges_too(self):
        import _bottleneck_frameworks as F
        r, rec = ranges()
        fw = F.Frameworks(lambda name, fn: None, ranges=r)
        p = fw._recorder("lightning")
        p.start("run_training_batch")  # before the first step: timed, no range
        r.begin_step(1)
        p.start("optimizer_step")
        p.start("training_step")
        p.stop("optimizer_step")  # training_step left open inside it
        p.stop("run_training_batch")
        r.close()
        self.assertEqual(rec.calls, [("push", "step 1"), ("push", "optimizer_step"), ("push", "training_step"),
                                     ("pop",), ("pop",), ("pop",)])
        self.assertEqual(p.evidence()["phases"][0]["calls"], 1)


class FakeEmit(object):
    log = []

    def __enter__(self):
        FakeEmit.log.append("enter")
        return self

    def __exit__(self, *exc):
        FakeEmit.log.append("exit")
        return False


def fake_torch(cuda_used):
    return types.SimpleNamespace(
        __version__="2.x",
        cuda=types.SimpleNamespace(is_initialized=lambda: cuda_used),
        autograd=types.SimpleNamespace(profiler=types.SimpleNamespace(emit_nvtx=FakeEmit)))


class OpsTest(unittest.TestCase):
    def setUp(self):
        FakeEmit.log = []

    def test_ops_enters_emit_nvtx_at_the_first_step(self):
        r, rec = ranges("ops")
        r.torch = fake_torch(True)
        r.begin_step(1)
        r.begin_step(2)
        self.assertEqual(FakeEmit.log, ["enter"])
        self.assertEqual(r.ops, "entered")
        r.close()
        self.assertEqual(FakeEmit.log, ["enter", "exit"])
        self.assertTrue(balanced(rec.calls))
        self.assertEqual(r.missing(), [])

    def test_ops_never_initializes_cuda(self):
        r, _ = ranges("ops")
        r.torch = fake_torch(False)
        r.begin_step(1)
        r.close()
        self.assertEqual(FakeEmit.log, [])
        self.assertEqual(r.missing()[0]["what"], "per-op NVTX ranges (--nvtx=ops)")
        self.assertIn("had not used CUDA", r.missing()[0]["why"])

    def test_steps_mode_never_enters_it(self):
        r, _ = ranges("steps")
        r.torch = fake_torch(True)
        r.begin_step(1)
        r.close()
        self.assertEqual(FakeEmit.log, [])

    def test_the_window_gives_way_to_emit_nvtx(self):
        for ops, state in (("entered", "off"), (None, "failed")):
            w = W.Window()
            w.pcfg, w.program_profiler, w.missing = {"enabled": True}, None, []
            w._init_window()
            w.nvtx = types.SimpleNamespace(ops=ops, trace_missing=N._trace_missing)
            # a torch without Kineto: the window fails past the nvtx check
            w.torch = types.SimpleNamespace(__version__="x", autograd=types.SimpleNamespace(kineto_available=lambda: False))
            w._start_profiler()
            self.assertEqual(w.prof_state, state)
            self.assertEqual(N._trace_missing() in w.missing, ops == "entered")


def _has_torch():
    try:
        import torch  # noqa: F401
        return True
    except Exception:
        return False


# A training loop (DataLoader, forward, backward, optimizer step) whose
# torch.cuda.nvtx is the recording stand-in; the calls are written at exit,
# after the agent's finish.
PROG = r'''
import atexit, json, os, sys
import torch
import torch.cuda.nvtx as nv
import torch.optim.optimizer

calls, depth = [], [0]
fail = os.environ.get("NVTX_FAIL")

def push(msg):
    if fail:
        calls.append(["raise", msg])
        raise RuntimeError(fail)
    calls.append(["push", msg])
    depth[0] += 1
    return depth[0] - 1

def pop():
    calls.append(["pop"])
    depth[0] -= 1
    return depth[0]

nv.range_push, nv.range_pop = push, pop
if os.environ.get("FAKE_CUDA"):  # a program that uses CUDA, for emit_nvtx (it synchronizes)
    torch.cuda.is_initialized = lambda: True
    torch.cuda.synchronize = lambda *a, **k: None
agent = sys._bottleneck_agent.get_agent()
# the optimizer pre hooks of NVTX's ranges (the agent's own step detection has one)
hooks = len(sys.modules["torch.optim.optimizer"]._global_optimizer_pre_hooks) - (agent.optimizer_pre_hook is not None)
wrapped = getattr(torch.autograd.backward, "_bottleneck_nvtx", False)
from torch.nn.modules import module as nn_module
atexit.register(lambda: json.dump({"calls": calls, "nvtx": agent.nvtx is not None, "pre_hooks": hooks,
                                   "backward_wrapped": wrapped, "global_hooks": len(nn_module._global_forward_hooks),
                                   "profiler_on": torch.autograd._profiler_enabled()},
                                  open(os.environ["NVTX_CALLS"], "w")))

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 8), torch.nn.Linear(8, 1)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls == int(os.environ.get("RAISE_AT", "0")):
            raise RuntimeError("planted failure in forward")
        return self.b(torch.relu(self.a(x)))

data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = torch.utils.data.DataLoader(data, batch_size=4)
m = Net()
opt = torch.optim.SGD(m.parameters(), lr=0.01)
for x, y in loader:
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(m(x), y)
    if os.environ.get("INTERRUPT_AT") == str(m.calls):
        raise KeyboardInterrupt
    loss.backward()
    opt.step()
print("done", m.calls)
'''


@unittest.skipUnless(_has_torch(), "needs torch")
class AgentRunTest(unittest.TestCase):
    """The agent's real hooks under a real (CPU) torch program."""

    def run_prog(self, nvtx, **env):
        tmp = tempfile.mkdtemp()
        prog = os.path.join(tmp, "prog.py")
        with open(prog, "w") as f:
            f.write(PROG)
        cfg = {"run_dir": os.path.join(tmp, "run"), "python_profiler": "off",
               "profiler": {"enabled": True, "skip_first": 1, "warmup": 1, "active": 2, "repeat": 1}}
        if nvtx:
            cfg["nvtx"] = nvtx
        with open(os.path.join(tmp, "cfg.json"), "w") as f:
            json.dump(cfg, f)
        e = dict(os.environ)
        e.pop("PYTHONPATH", None)
        e.update(env, NVTX_CALLS=os.path.join(tmp, "calls.json"))
        p = subprocess.run([sys.executable, os.path.join(AGENT_DIR, "_bottleneck_boot.py"), os.path.join(tmp, "cfg.json"),
                            "script", prog], cwd=tmp, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=120)
        with open(os.path.join(tmp, "calls.json")) as f:
            out = json.load(f)
        with open(os.path.join(tmp, "run", "evidence-rank0.json")) as f:
            ev = json.load(f)
        return p, out, ev

    def test_steps_and_phases(self):
        p, out, ev = self.run_prog("steps")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "done 16\n")
        calls = out["calls"]
        self.assertTrue(balanced(calls), calls)
        pushes = [c[1] for c in calls if c[0] == "push"]
        # 16 optimizer steps: the first locks the steps, step 1 begins after it
        self.assertEqual([n for n in pushes if n.startswith("step ")], ["step %d" % i for i in range(1, 17)])
        i = pushes.index("step 3")
        self.assertEqual(pushes[i:i + 6], ["step 3", "DataLoader wait", "forward", "backward", "optimizer step", "step 4"])
        self.assertEqual(ev["nvtx"]["pushed"], ev["nvtx"]["popped"])
        self.assertEqual(ev["nvtx"]["step_ranges"], 16)
        self.assertEqual(ev["steps"], 15)
        self.assertTrue(ev["profiler"]["windows"], "the trace is still recorded")
        # the forward ranges come from hooks on the model once the steps locked, not global ones
        self.assertEqual(out["global_hooks"], 0)

    def test_ops_runs_emit_nvtx_in_place_of_the_trace(self):
        # torch's real emit_nvtx (CPU torch, CUDA stood in for): entered at
        # the first step, left at the finish; the agent's window gives way
        p, out, ev = self.run_prog("ops", FAKE_CUDA="1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "done 16\n")
        self.assertEqual(ev["nvtx"]["ops"], "entered")
        self.assertFalse(out["profiler_on"], "emit_nvtx was left")
        self.assertTrue(balanced(out["calls"]))
        self.assertEqual(ev["profiler"]["state"], "off")
        self.assertEqual(ev["profiler"]["windows"], [])
        self.assertIn(N._trace_missing(), ev["missing"])
        self.assertNotIn("per-op NVTX ranges (--nvtx=ops)", [m["what"] for m in ev["missing"]])

    def test_a_step_that_raises_leaves_nothing_open(self):
        for env in ({"RAISE_AT": "6"}, {"INTERRUPT_AT": "6"}):
            p, out, ev = self.run_prog("steps", **env)
            self.assertNotEqual(p.returncode, 0)
            calls = out["calls"]
            self.assertTrue(balanced(calls), (env, calls[-8:]))
            self.assertGreater(ev["nvtx"]["closed_at_exit"], 0, env)
            self.assertEqual(calls[-1], ["pop"])

    def test_off_makes_no_call(self):
        p, out, ev = self.run_prog(None)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(out, {"calls": [], "nvtx": False, "pre_hooks": 0, "backward_wrapped": False, "global_hooks": 0,
                               "profiler_on": False})
        self.assertIsNone(ev["nvtx"])

    def test_unavailable_is_recorded_and_the_run_goes_on(self):
        msg = "NVTX functions not installed. Are you sure you have a CUDA build?"
        p, out, ev = self.run_prog("steps", NVTX_FAIL=msg)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "done 16\n")
        self.assertEqual(out["calls"], [["raise", "step 1"]])
        self.assertEqual(ev["nvtx"]["state"], "unavailable")
        m = [m for m in ev["missing"] if m["what"] == "NVTX ranges (--nvtx)"]
        self.assertEqual(len(m), 1, ev["missing"])
        self.assertIn("RuntimeError: " + msg, m[0]["why"])


if __name__ == "__main__":
    unittest.main()
