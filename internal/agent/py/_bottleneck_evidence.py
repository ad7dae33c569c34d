"""bottleneck agent: the evidence and the Python profile files (embedded in
the bottleneck binary, loaded by _bottleneck_agent): evidence-<tag>.json
(steps, DataLoader, optimizers, syncs, what could not be recorded and why)
and pyprofile-<tag>.json (plus .pstats with cProfile), written at every
checkpoint, window and at the end.

Documented in docs/run.md ("Evidence", "Python profile format").
"""
import os
import sys
import time

from _bottleneck_env import safe
import _bottleneck_files as files
from _bottleneck_files import FORMAT_VERSION, atomic_write_json
from _bottleneck_sampler import pstats_to_json


class Evidence(object):
    """Writes the Agent's evidence and Python profile (a mixin of Agent).

    It keeps no state of its own: it reads the Agent's and its Window's
    attributes (see Agent.__init__ and Window._init_window) and appends to
    errors when a final write fails."""

    def write_pyprofile(self):
        if os.getpid() != self.pid:
            return
        try:
            if self.sampler is not None:
                atomic_write_json(self.path(files.pyprofile_name(self.tag)), self.sampler.to_json())
            elif self.cprof is not None and self.finished:
                import pstats
                self.cprof.disable()
                ps = self.path(files.pstats_name(self.tag))
                tmp = ps + ".tmp-%d" % os.getpid()
                self.cprof.dump_stats(tmp)
                os.replace(tmp, ps)
                st = pstats.Stats(self.cprof)
                windows = [[w[0], w[1] if w[1] is not None else w[0]] for w in self.window_spans]
                atomic_write_json(self.path(files.pyprofile_name(self.tag)),
                                  pstats_to_json(st.stats, self.t_start, time.time() - self.t_start, windows))
        except Exception as e:
            self.errors.append("writing python profile: %s: %s" % (type(e).__name__, e))

    def evidence(self, final):
        torch_missing = []
        failed = self._ended_early() if final else ""
        if self.torch is None:
            torch_missing.append({"what": "torch.profiler trace",
                                  "why": "the program did not import torch" if "torch" not in sys.modules
                                  else "torch import did not complete"})
        elif self.step_source is None and self.pcfg.get("enabled", True) and failed \
                and not any(self.step_counts.values()):
            torch_missing.append({"what": "torch.profiler trace",
                                  "why": "the program %s before its first step: no optimizer.step(), DataLoader "
                                         "batch or nn.Module forward ran" % failed})
        elif self.step_source is None and self.pcfg.get("enabled", True):
            torch_missing.append({
                "what": "torch.profiler trace",
                "why": "no step was detected (%s): no optimizer.step(), DataLoader batch or nn.Module forward "
                       "was seen often enough; see --step-source%s" % (
                           self._counts_text(),
                           " (module forwards are not counted once the program uses torch.compile: "
                           "a global module hook would make it recompile)" if self.compile_used else "")})
        elif final and self.step_source is not None and not self.windows and self.prof_state not in ("failed", "off", "yielded"):
            torch_missing.append({
                "what": "torch.profiler trace",
                "why": "the program ended after %d %s steps, before the window (skip-first %d + wait %d + warmup %d) "
                       "reached its first active step%s" % (
                           self.steps, self.step_source, int(self.pcfg.get("skip_first", 5)),
                           int(self.pcfg.get("wait", 0)), int(self.pcfg.get("warmup", 2)),
                           # the first step holds start-up: skip it, warm up on the next
                           ": bottleneck run --skip-first 1 --warmup 1 --active %d ... records steps 3-%d"
                           % (self.steps - 2, self.steps) if self.steps >= 3 else "")})
        sync_missing = []
        if self.sync_state == "no-cuda" and self.torch is not None and self.cfg.get("sync_debug", True) \
                and safe(lambda: self.torch.cuda.is_initialized(), False):
            sync_missing.append({"what": "CUDA sync call sites",
                                 "why": "CUDA was first used after the window started"})
        elif self.sync_state == "user-set":
            sync_missing.append({"what": "CUDA sync call sites", "why": "the program set its own sync debug mode"})
        elif self.sync_state.startswith("failed") or self.sync_state == "unsupported":
            sync_missing.append({"what": "CUDA sync call sites", "why": self.sync_state})
        seen = set()
        missing = []
        wm = getattr(self, "workers_mod", None)
        if final and wm is not None:
            m = safe(lambda: wm.missing(self.run_dir, self.tag, list(self.loaders.values())))
            if m:
                sync_missing.append(m)
        fw = self.frameworks
        nv = getattr(self, "nvtx", None)
        nvtx_missing = []
        if nv is not None and final:
            cuda = getattr(self.torch, "cuda", None)
            nvtx_missing = nv.missing(safe(lambda: bool(cuda.is_available()), None) if cuda is not None else None)
        for m in self.missing + torch_missing + sync_missing + (fw.missing if fw is not None else []) + nvtx_missing:
            k = (m["what"], m["why"])
            if k not in seen:
                seen.add(k)
                missing.append(m)
        loaders = []
        for v in self.loaders.values():
            d = dict(v)
            d.pop("_sig", None)
            loaders.append(d)
        s = _step_stats(self.step_times, self.step_stats)
        return {
            "format": "bottleneck.evidence",
            "version": FORMAT_VERSION,
            "tag": self.tag,
            "pid": self.pid,
            "mode": self.mode,
            "final": final,
            "argv": list(sys.argv),
            "start_unix": self.t_start,
            "end_unix": time.time(),
            "exit": self.exit,
            "step_source": self.step_source,
            "step_source_switch": self.step_source_switch,
            "step_stages": self.step_stages,
            "step_source_requested": self.step_source_req,
            "step_counts": dict(self.step_counts),
            "steps": self.steps,
            "step_stats": s,
            "step_times": self.step_times,
            "device_behind_s": sum(d["s"] for d in self.device_behind) if self.device_behind else None,
            "device_behind": self.device_behind,
            "step_inputs": getattr(self, "step_inputs", None),
            "step_calls": self.calls.evidence() if getattr(self, "calls", None) is not None else None,
            "per_step": self.stepstats.evidence() if self.stepstats is not None else None,
            "cpu_wait": self.stepstats.sched.evidence() if self.stepstats is not None else None,
            "children": self.children.evidence() if self.children is not None else None,
            "framework_phases": fw.evidence() if fw is not None else None,
            "profiler": {
                "state": self.prof_state,
                "schedule": {k: self.pcfg.get(k) for k in ("skip_first", "wait", "warmup", "active", "repeat")},
                "active_steps": self.active,
                "early_start": self.early_start,
                "options": {k: bool(self.pcfg.get(k)) for k in
                            ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules")},
                "activities": getattr(self, "activities", []),
                "windows": self.windows,
            },
            "window_steps": self.window_steps,
            "dataloader": {
                "batches": self.dl_total_batches,
                "wait_s": self.dl_total_wait,
                "window_batches": self.dl_window_batches,
                "window_wait_s": self.dl_window_wait,
                "loaders": loaders,
            },
            "optimizers": list(self.optimizers.values()),
            "models": sorted(self.models.values(), key=lambda r: -r["calls"]),
            "syncs": {
                "state": self.sync_state,
                "total": self.sync_total,
                "sites": sorted(self.sync_sites.values(), key=lambda r: -r["count"]),
            },
            "python_profiler": self.cfg.get("python_profiler", "sample"),
            "missing": missing,
            "errors": self.errors + (fw.errors if fw is not None else []) + (nv.errors if nv is not None else []),
            "nvtx": nv.evidence() if nv is not None else None,
            "notes": self.notes,
            "changes": self.changes.evidence() if getattr(self, "changes", None) is not None else [],
            "program_options": self.program_options.evidence() if getattr(self, "program_options", None) is not None else None,
        }

    def _ended_early(self):
        """How the program ended when it failed ("raised ValueError",
        "exited with status 2", ...); "" when it ended as usual."""
        e = self.exit or {}
        reason = e.get("reason")
        if reason == "exception":
            return "raised %s" % str(e.get("exception") or "an exception").split(":", 1)[0]
        if reason == "exit" and e.get("code") not in (0, None):
            return "exited with status %s" % e.get("code")
        if reason in ("interrupted", "terminated"):
            return "was %s (%s)" % (reason, e.get("signal"))
        return ""

    def _counts_text(self):
        c = self.step_counts
        return "optimizer steps %d, DataLoader batches %d, module forwards %d" % (
            c["optimizer"], c["dataloader"], c["forward"])

    def write_evidence(self, final):
        if os.getpid() != self.pid:
            return
        # Checkpoints run in the sampler thread while the program mutates
        # the agent's dicts: a "changed size during iteration" is retried,
        # and a failed checkpoint is not an error (the next write replaces it).
        for attempt in range(3):
            try:
                atomic_write_json(self.path(files.evidence_name(self.tag)), self.evidence(final))
                return
            except Exception as e:
                if attempt == 2 and final:
                    self.errors.append("writing evidence: %s" % e)


def _step_stats(times, past):
    """The timed steps' count, sum, extremes and mean: those in times (their
    rounded durations) and past, the steps after times was full."""
    durs = [t[2] for t in times]
    count, total = len(durs) + past["count"], sum(durs) + past["sum_s"]
    lo = [d for d in (min(durs) if durs else None, past["min_s"]) if d is not None]
    hi = [d for d in (max(durs) if durs else None, past["max_s"]) if d is not None]
    return {"count": count, "sum_s": total, "min_s": min(lo) if lo else None, "max_s": max(hi) if hi else None,
            "mean_s": total / count if count else None}
