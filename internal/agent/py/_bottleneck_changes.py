"""bottleneck agent: run-time changes to the program, without editing it
(`bottleneck try --set NAME=VALUE`, `bottleneck run --verify`; embedded in
the bottleneck binary, loaded by _bottleneck_agent).

The agent's config asks for them ("set": {"num_workers": "4", ...}; the
names and kinds are rundir.ChangeKinds); each is made in one place below,
and each records where it took effect, one line per site, for the
evidence's "changes" (rundir.Change). A change that never took effect (no
DataLoader was made) says why. Apart from the change, the program runs as
it would without it: a change the program's own call would undo is held
(the call still runs, with the held value), and a change that makes a
constructor fail is dropped for that object and the error recorded.

Only the profiled process is changed: forked children (DataLoader workers,
pools) get the originals' behaviour (torch sets one thread in each worker).

Documented in docs/run.md ("Run-time changes").
"""
import functools
import gc
import inspect
import os
import sys
import threading
import weakref

# The changes, in rundir.ChangeKinds order, with their kind of value.
KINDS = (
    ("num_workers", "N"), ("pin_memory", "bool"), ("persistent_workers", "bool"), ("prefetch_factor", "N"),
    ("threads", "N"), ("interop_threads", "N"), ("cudnn_benchmark", "bool"), ("tf32", "bool"),
    ("fused_optimizer", "bool"), ("foreach_optimizer", "bool"), ("gc_freeze", "bool"), ("gc_threshold", "N"),
    ("channels_last", "bool|frozen"), ("bf16_autocast", "bool|frozen"), ("thp_alloc", "bool"), ("malloc_reuse", "bool"),
    ("omp_passive", "bool"),
)
# malloc_reuse: glibc's allocator serves allocations of up to 4 GiB from
# its heap and keeps what is freed, instead of mapping large ones afresh
# and handing memory back (the runner sets them: glibc reads them at the
# process's start)
MALLOC_REUSE = (("MALLOC_MMAP_THRESHOLD_", "4294967296"), ("MALLOC_TRIM_THRESHOLD_", "4294967296"))
# omp_passive: OpenMP's threads sleep while they wait for work (the runner
# sets it: the OpenMP runtime reads it when torch loads it)
OMP_PASSIVE = ("OMP_WAIT_POLICY", "PASSIVE")
_MODEL_CHANGES = ("channels_last", "bf16_autocast")
# wrappers that hold views of the parameters as they were when wrapped
_WRAPPERS = ("DistributedDataParallel", "FullyShardedDataParallel", "DataParallel")
_LOADER_ARGS = ("num_workers", "pin_memory", "persistent_workers", "prefetch_factor")
_MAX_SITES = 20  # sites listed per change; the rest are counted


def _parse(kind, text):
    if kind in ("bool", "bool|frozen"):
        t = str(text).strip().lower()
        if t in ("true", "1"):
            return True
        if t in ("false", "0"):
            return False
        if kind == "bool|frozen" and t == "frozen":
            return "frozen"  # the models first called with gradients off
        raise ValueError("want true or false%s, got %r" % (" or frozen" if kind == "bool|frozen" else "", text))
    n = int(str(text).strip())
    if n < 0:
        raise ValueError("want a count, got %r" % (text,))
    return n


def _changes_something(name, module, torch):
    """Whether the model change name would change module: channels_last
    a model with 2-D convolutions, bf16_autocast one with parameters."""
    if name == "channels_last":
        return any(isinstance(m, torch.nn.Conv2d) for m in module.modules())
    return next(iter(module.parameters()), None) is not None


class Changes(object):
    """The changes asked for (wanted: name -> text, as in the config) and
    what became of them. is_internal(filename) is true for the agent's,
    torch's and the standard library's files: a site is the innermost
    other frame, the program's line."""

    def __init__(self, wanted, is_internal):
        self.pid = os.getpid()
        self._internal = is_internal
        self.value = {}  # name -> parsed value
        self.records = {}  # name -> {"name", "value", "applied", "sites", "error", "more"}
        self._why_not = {}  # name -> why it has taken effect nowhere, when no site says
        self._frozen = False
        self._depth = threading.local()  # optimizer constructors calling one another
        kinds = dict(KINDS)
        for name, text in sorted((wanted or {}).items()):
            # sites: where it took effect; not_changed: where it could not (a site each)
            rec = {"name": name, "value": str(text), "applied": False, "sites": [], "not_changed": [], "error": "",
                   "more": 0}
            self.records[name] = rec
            if name not in kinds:
                rec["error"] = "no such change"
                continue
            try:
                self.value[name] = _parse(kinds[name], text)
            except ValueError as e:
                rec["error"] = str(e)
        for name in _LOADER_ARGS:
            self._why_not[name] = "the program made no DataLoader"
        self._why_not["threads"] = self._why_not["interop_threads"] = "the program did not import torch"
        self._why_not["cudnn_benchmark"] = self._why_not["tf32"] = "the program did not import torch"
        self._why_not["fused_optimizer"] = self._why_not["foreach_optimizer"] = \
            "the program made no torch.optim optimizer that takes it"
        self._why_not["gc_freeze"] = "no step ended: the set-up never finished (see --step-source)"
        self._why_not["channels_last"] = "no model with 2-D convolutions was called outermost while the agent " \
                                         "watched module calls (not under torch.compile)"
        self._why_not["bf16_autocast"] = "no model with parameters was called outermost while the agent watched " \
                                         "module calls (not under torch.compile)"
        self._models = set()  # id() of the models changed, or looked at and left

    def wants(self, name):
        return name in self.value

    def wants_model(self):
        """Whether a change is made to the models (on_model)."""
        return any(self.value.get(n) for n in _MODEL_CHANGES)

    # -- recording ------------------------------------------------------------
    def _site(self, name, text):
        rec = self.records[name]
        rec["applied"] = True
        if len(rec["sites"]) < _MAX_SITES:
            rec["sites"].append(text)
        else:
            rec["more"] += 1

    def _not_changed(self, name, text):
        """A site where the change could not be made (the constructor
        refused it, the program passed its own value), and why."""
        rec = self.records[name]
        if len(rec["not_changed"]) < _MAX_SITES:
            rec["not_changed"].append(text)
        else:
            rec["more"] += 1

    def _where(self, depth=2):
        """file:line of the program's line that called the wrapper
        depth frames up (relative to the working directory when inside it)."""
        try:
            f = sys._getframe(depth)
        except ValueError:
            return "?"
        while f is not None and self._internal(f.f_code.co_filename):
            f = f.f_back
        if f is None:
            return "?"
        fn = f.f_code.co_filename
        try:
            rel = os.path.relpath(fn)
            if not rel.startswith(".."):
                fn = rel
        except ValueError:
            pass
        return "%s:%d" % (fn, f.f_lineno or 0)

    def evidence(self):
        """The evidence's "changes": one rundir.Change per change asked for."""
        order = [n for n, _ in KINDS] + sorted(n for n in self.records if n not in dict(KINDS))
        out = []
        for name in order:
            rec = self.records.get(name)
            if rec is None:
                continue
            sites = rec["sites"] + rec["not_changed"]
            if rec["more"]:
                sites = sites + ["... and %d more" % rec["more"]]
            err = rec["error"]
            if not rec["applied"] and not err:
                err = rec["not_changed"][0] if rec["not_changed"] else self._why_not.get(name, "not applied")
            d = {"name": name, "value": rec["value"], "applied": rec["applied"], "sites": sites}
            if err:
                d["error"] = err
            out.append(d)
        return out

    # -- when: the agent's start, torch's import, a step's end ---------------
    def start(self):
        """At the agent's start, before the program runs."""
        self._guard("gc_threshold", self._gc_threshold)
        self._guard("thp_alloc", self._thp_alloc)
        self._guard("malloc_reuse", self._malloc_reuse)
        self._guard("omp_passive", self._omp_passive)

    # -- glibc's allocator ----------------------------------------------------
    def _malloc_reuse(self, v):
        """glibc reads its allocator's variables once, at the process's
        start: the runner puts them in the program's environment (or takes
        them out), and the agent can only check them."""
        got = [(k, os.environ[k]) for k, _ in MALLOC_REUSE if k in os.environ]
        if got == (list(MALLOC_REUSE) if v else []):
            self._site("malloc_reuse", " ".join("%s=%s" % kv for kv in MALLOC_REUSE) + " in the program's environment"
                       if v else "no MALLOC_MMAP_THRESHOLD_ or MALLOC_TRIM_THRESHOLD_ in the program's environment")
            return
        have = ", ".join("%s=%s" % kv for kv in got) or "neither"
        self.records["malloc_reuse"]["error"] = "glibc reads MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ at the " \
                                                "process's start, which had %s" % have

    # -- OpenMP's wait policy -------------------------------------------------
    def _omp_passive(self, v):
        """The OpenMP runtime reads OMP_WAIT_POLICY once, when torch loads
        it: the runner puts it in the program's environment (or takes it
        out), and the agent can only check it."""
        name, want = OMP_PASSIVE
        got = os.environ.get(name)
        if (got or "").upper() == want if v else got is None:
            self._site("omp_passive", "%s=%s in the program's environment" % OMP_PASSIVE
                       if v else "no %s in the program's environment" % name)
            return
        self.records["omp_passive"]["error"] = "the OpenMP runtime reads %s when torch loads it, and the process " \
                                               "started with %s" % (name, "%s=%s" % (name, got) if got is not None else "none")

    # -- THP_MEM_ALLOC_ENABLE -------------------------------------------------
    def _thp_alloc(self, v):
        """torch's CPU allocator reads THP_MEM_ALLOC_ENABLE once, at its
        first allocation (torch's import): the runner puts it in the
        program's environment, and the agent, at its start, sets it where
        it is missing (a launcher's ranks start the agent before the
        program imports torch too)."""
        want = "1" if v else "0"
        if os.environ.get("THP_MEM_ALLOC_ENABLE", "0") == want:
            self._site("thp_alloc", "THP_MEM_ALLOC_ENABLE=%s in the program's environment" % want)
            return
        if "torch" in sys.modules:
            self.records["thp_alloc"]["error"] = "torch was imported before the agent started, and reads " \
                                                 "THP_MEM_ALLOC_ENABLE once, at its import"
            return
        os.environ["THP_MEM_ALLOC_ENABLE"] = want
        self._site("thp_alloc", "THP_MEM_ALLOC_ENABLE=%s set at the agent's start, before torch's import" % want)

    def on_torch(self, torch):
        """Once torch is imported, before the program's next line."""
        self._guard("threads", lambda n: self._threads(torch, n))
        self._guard("interop_threads", lambda n: self._interop_threads(torch, n))
        self._guard("cudnn_benchmark", lambda v: self._cudnn_benchmark(torch, v))
        self._guard("tf32", lambda v: self._tf32(torch, v))
        if any(self.wants(n) for n in _LOADER_ARGS):
            self._guard(None, lambda _: self._dataloader(torch))
        for name, arg in (("fused_optimizer", "fused"), ("foreach_optimizer", "foreach")):
            self._guard(name, lambda v, arg=arg, name=name: self._optimizers(torch, name, arg, v))

    def on_step(self, steps):
        """After each step of the program (Agent._step)."""
        if not self._frozen and steps >= 1 and self.wants("gc_freeze"):
            self._frozen = True
            self._guard("gc_freeze", lambda v: self._gc_freeze(v, steps))

    def on_model(self, module, torch):
        """At an outermost module call of the profiled process, before its
        forward (the agent's global forward pre-hook, until the steps
        lock): change the model, once. Nothing is stored on the model
        itself: a program that pickles it whole (torch.save(model)) would
        fail on a hook or a function of ours."""
        if not self.wants_model() or not self._watch_model(module):
            return
        frozen = not torch.is_grad_enabled()
        for name, change in (("channels_last", self._channels_last), ("bf16_autocast", self._bf16_autocast)):
            want = self.value.get(name)
            if want == "frozen" and not frozen:
                if _changes_something(name, module, torch):  # a loss has nothing to change either way
                    self._not_changed(name, "%s called at %s: not changed: it runs with gradients (frozen: the "
                                            "models first called with them off only)" % (type(module).__name__, self._where()))
                continue
            if want:
                try:
                    change(module, torch)
                except Exception as e:
                    self._not_changed(name, "%s: not changed: %s: %s" % (type(module).__name__, type(e).__name__, e))

    def _watch_model(self, module):
        """True the first time module is called outermost (a model called
        from three lines is changed once); ids of freed models may be
        reused, which at worst leaves a new model unchanged."""
        if id(module) in self._models or len(self._models) >= 64:
            return False
        self._models.add(id(module))
        return True

    def _guard(self, name, apply):
        """Apply one change; the agent's own failure is the change's error,
        never the program's."""
        if name is not None and not self.wants(name):
            return
        try:
            apply(self.value.get(name))
        except Exception as e:
            for n in ([name] if name is not None else [n for n in _LOADER_ARGS if self.wants(n)]):
                if not self.records[n]["error"]:
                    self.records[n]["error"] = "%s: %s" % (type(e).__name__, e)

    # -- threads ----------------------------------------------------------------
    def _threads(self, torch, n):
        """torch.set_num_threads(n) now; the program's own calls run with n."""
        orig = torch.set_num_threads
        was = torch.get_num_threads()
        orig(n)
        self._site("threads", "torch.set_num_threads(%d) at torch's import (was %d)" % (n, was))
        changes = self

        @functools.wraps(orig)
        def set_num_threads(*args, **kwargs):
            if os.getpid() != changes.pid:  # a DataLoader worker sets 1 for itself
                return orig(*args, **kwargs)
            asked = args[0] if args else kwargs.get("int", kwargs.get("num", "?"))
            changes._site("threads", "torch.set_num_threads(%s) at %s kept at %d" % (asked, changes._where(), n))
            return orig(n)
        torch.set_num_threads = set_num_threads

    def _interop_threads(self, torch, n):
        """torch.set_num_interop_threads(n) now. Torch takes it once, before
        any inter-op work: the program's own call is skipped (it would raise)."""
        orig = torch.set_num_interop_threads
        was = torch.get_num_interop_threads()
        orig(n)
        self._site("interop_threads", "torch.set_num_interop_threads(%d) at torch's import (was %d)" % (n, was))
        changes = self

        @functools.wraps(orig)
        def set_num_interop_threads(*args, **kwargs):
            if os.getpid() != changes.pid:
                return orig(*args, **kwargs)
            asked = args[0] if args else "?"
            changes._site("interop_threads", "torch.set_num_interop_threads(%s) at %s skipped: kept at %d"
                          % (asked, changes._where(), n))
        torch.set_num_interop_threads = set_num_interop_threads

    # -- backend flags --------------------------------------------------------
    def _hold_flag(self, name, module, attr, value, label):
        """Set module.attr (a property of the module's class, as torch's
        backend flags are) to value, and hold it: the program's assignment
        is recorded and value stays."""
        cls = type(module)
        prop = cls.__dict__[attr]
        prop.__set__(module, value)
        cls_attr = _HeldFlag(prop, value, self, name, label)
        setattr(cls, attr, cls_attr)

    def _cudnn_benchmark(self, torch, v):
        cudnn = torch.backends.cudnn
        was = cudnn.benchmark
        self._hold_flag("cudnn_benchmark", cudnn, "benchmark", v, "torch.backends.cudnn.benchmark")
        self._site("cudnn_benchmark", "torch.backends.cudnn.benchmark = %s at torch's import (was %s)" % (v, was))

    def _tf32(self, torch, v):
        """TF32 for matmuls (cuBLAS) and convolutions (cuDNN), held against
        the program's allow_tf32 assignments and set_float32_matmul_precision."""
        cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
        was = (matmul.allow_tf32, cudnn.allow_tf32)
        matmul.allow_tf32 = v
        self._hold_flag("tf32", cudnn, "allow_tf32", v, "torch.backends.cudnn.allow_tf32")
        changes = self
        mcls = type(matmul)
        orig_setattr = mcls.__setattr__

        def __setattr__(obj, name, value):
            if name == "allow_tf32" and os.getpid() == changes.pid:
                changes._site("tf32", "torch.backends.cuda.matmul.allow_tf32 = %r at %s kept at %s"
                              % (value, changes._where(), v))
                value = v
            return orig_setattr(obj, name, value)
        mcls.__setattr__ = __setattr__

        orig_prec = getattr(torch, "set_float32_matmul_precision", None)
        if orig_prec is not None:
            held = "high" if v else "highest"

            @functools.wraps(orig_prec)
            def set_float32_matmul_precision(*args, **kwargs):
                if os.getpid() != changes.pid:
                    return orig_prec(*args, **kwargs)
                asked = args[0] if args else kwargs.get("precision", "?")
                changes._site("tf32", "torch.set_float32_matmul_precision(%r) at %s kept at %r"
                              % (asked, changes._where(), held))
                return orig_prec(held)
            torch.set_float32_matmul_precision = set_float32_matmul_precision
        self._site("tf32", "allow_tf32 = %s for matmuls and cuDNN at torch's import (was %s, %s)"
                   % (v, was[0], was[1]))

    # -- DataLoader -------------------------------------------------------------
    def _dataloader(self, torch):
        """Every DataLoader the program makes gets the asked num_workers,
        pin_memory, persistent_workers and prefetch_factor (the last two
        only with workers: torch refuses them without)."""
        cls = torch.utils.data.DataLoader
        orig = cls.__dict__["__init__"]
        sig = inspect.signature(orig)
        iterable = torch.utils.data.IterableDataset
        changes = self

        @functools.wraps(orig)
        def __init__(loader, *args, **kwargs):
            if os.getpid() != changes.pid:
                return orig(loader, *args, **kwargs)
            try:
                bound = sig.bind(loader, *args, **kwargs)
            except TypeError:
                return orig(loader, *args, **kwargs)  # the program's own error, as without the change
            where = changes._where()
            made = changes._loader_args(bound, sig, where, iterable)
            if not made:
                return orig(loader, *args, **kwargs)
            try:
                r = orig(*bound.args, **bound.kwargs)
            except Exception as e:
                failed = "%s: %s" % (type(e).__name__, e)
            else:
                for name, site in made:
                    changes._site(name, site)
                return r
            # outside the except block: the program's own error, if any, comes without ours chained
            for name, _ in made:
                changes._not_changed(name, "DataLoader at %s: not changed: %s" % (where, failed))
            return orig(loader, *args, **kwargs)
        cls.__init__ = __init__

    def _loader_args(self, bound, sig, where, iterable):
        """Change one DataLoader's arguments in bound; return the (name,
        site) of each change made."""
        a = bound.arguments
        old = {n: a.get(n, sig.parameters[n].default) for n in _LOADER_ARGS if n in sig.parameters}
        made = []
        workers = old.get("num_workers") or 0
        if self.wants("num_workers"):
            n = self.value["num_workers"]
            if n > 0 and isinstance(a.get("dataset"), iterable):
                # each worker would yield the whole dataset: more batches
                self._not_changed("num_workers", "DataLoader at %s: not changed: its dataset is an IterableDataset, "
                                                 "which each worker would yield whole" % where)
            else:
                a["num_workers"] = workers = n
                made.append(("num_workers", "DataLoader at %s: num_workers %s -> %d" % (where, old["num_workers"], n)))
        if self.wants("pin_memory"):
            a["pin_memory"] = self.value["pin_memory"]
            made.append(("pin_memory", "DataLoader at %s: pin_memory %s -> %s" % (
                where, old["pin_memory"], self.value["pin_memory"])))
        for name in ("persistent_workers", "prefetch_factor"):
            if not self.wants(name) or name not in old:
                continue
            if workers <= 0:
                self._not_changed(name, "DataLoader at %s: not changed: it has no workers (num_workers 0)" % where)
                continue
            a[name] = self.value[name]
            made.append((name, "DataLoader at %s: %s %s -> %s" % (where, name, old[name], self.value[name])))
        return made

    # -- optimizers ---------------------------------------------------------------
    def _optimizers(self, torch, name, arg, v):
        """arg=v (fused= or foreach=) for every torch.optim optimizer whose
        constructor takes it, unless the program passed its own."""
        wrapped = 0
        for cname, cls in sorted(vars(torch.optim).items()):
            init = getattr(cls, "__dict__", {}).get("__init__")
            if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer) and init is not None):
                continue
            try:
                sig = inspect.signature(init)
            except (TypeError, ValueError):
                continue
            if arg not in sig.parameters:
                continue
            cls.__init__ = self._optimizer_init(cls.__name__, init, sig, name, arg, v)
            wrapped += 1
        if not wrapped:
            self._why_not[name] = "no torch.optim optimizer of torch %s takes %s=" % (torch.__version__, arg)

    def _optimizer_init(self, cname, orig, sig, name, arg, v):
        changes = self

        @functools.wraps(orig)
        def __init__(opt, *args, **kwargs):
            depth = getattr(changes._depth, name, 0)
            if os.getpid() != changes.pid or depth:  # AdamW's __init__ calling Adam's
                return orig(opt, *args, **kwargs)
            setattr(changes._depth, name, depth + 1)
            try:
                where = changes._where()
                try:
                    bound = sig.bind_partial(opt, *args, **kwargs)
                except TypeError:
                    return orig(opt, *args, **kwargs)  # the program's own error
                if arg in bound.arguments:
                    changes._not_changed(name, "%s at %s: not changed: the program's own %s=%r kept" % (
                        cname, where, arg, bound.arguments[arg]))
                    return orig(opt, *args, **kwargs)
                params = bound.arguments.get("params")
                if params is not None and hasattr(params, "__next__"):
                    # a generator (model.parameters()) would be spent by a
                    # failed try; Optimizer makes a list of it anyway
                    bound.arguments["params"] = params = list(params)
                bound.arguments[arg] = v
                try:
                    r = orig(*bound.args, **bound.kwargs)
                except Exception as e:
                    failed = "%s: %s" % (type(e).__name__, e)
                else:
                    changes._site(name, "%s at %s: %s=%s" % (cname, where, arg, v))
                    return r
                del bound.arguments[arg]
                changes._not_changed(name, "%s at %s: not changed: %s=%s: %s" % (cname, where, arg, v, failed))
                return orig(*bound.args, **bound.kwargs)
            finally:
                setattr(changes._depth, name, depth)
        return __init__

    # -- the model ----------------------------------------------------------------
    def _channels_last(self, module, torch):
        """A model with 2-D convolutions goes to channels_last: its 4-D
        parameters, in place (the optimizer keeps them). Its inputs need
        no change: a convolution whose weight is in channels_last runs in
        it and hands it on."""
        conv = torch.nn.Conv2d
        convs = sum(1 for m in module.modules() if isinstance(m, conv))
        if not convs:
            return
        if type(module).__name__ in _WRAPPERS:
            # their gradient buckets were laid out for the parameters as
            # they were when wrapped
            self._not_changed("channels_last", "%s called at %s: not changed: a model is put in channels_last before "
                                               "%s wraps it" % (type(module).__name__, self._where(), type(module).__name__))
            return
        module.to(memory_format=torch.channels_last)
        self._site("channels_last", "%s called at %s: channels_last, its %d convolutions' weights (their outputs follow)"
                   % (type(module).__name__, self._where(), convs))

    def _bf16_autocast(self, module, torch):
        """A model with parameters runs its forward under bf16 autocast on
        its parameters' device, and hands back float32 where it made
        bfloat16 (the loss outside it then runs as autocast would run it,
        in float32), from its next call on (this one's forward is already
        chosen). Its class's forward is wrapped, for the models changed
        only: other instances of the class (an nn.Sequential inside
        another model) run as they were."""
        param = next(iter(module.parameters()), None)
        if param is None:
            return
        cls = type(module)
        targets = cls.__dict__.get("_bottleneck_autocast")
        if targets is None:
            targets = weakref.WeakKeyDictionary()  # model -> its device type
            orig = cls.forward
            bf16 = torch.bfloat16

            def to_f32(out):
                if isinstance(out, torch.Tensor):
                    return out.float() if out.dtype == bf16 else out
                if isinstance(out, tuple):
                    items = [to_f32(o) for o in out]
                    return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
                if isinstance(out, list):
                    return [to_f32(o) for o in out]
                if isinstance(out, dict):
                    try:
                        for k in list(out.keys()):
                            out[k] = to_f32(out[k])
                    except Exception:
                        pass
                return out

            @functools.wraps(orig)
            def forward(obj, *args, **kwargs):
                device = targets.get(obj)
                if device is None:
                    return orig(obj, *args, **kwargs)
                with torch.autocast(device_type=device, dtype=bf16):
                    out = orig(obj, *args, **kwargs)
                return to_f32(out)
            cls.forward = forward
            cls._bottleneck_autocast = targets
        targets[module] = param.device.type
        self._site("bf16_autocast", "%s called at %s: its forward under torch.autocast(%r, dtype=torch.bfloat16), "
                                    "its bfloat16 outputs handed back as float32, from its second call"
                   % (cls.__name__, self._where(), param.device.type))

    # -- garbage collector ------------------------------------------------------
    def _gc_freeze(self, v, steps):
        if not v:
            self._site("gc_freeze", "gc.freeze() not called (gc_freeze=false)")
            return
        if not hasattr(gc, "freeze"):
            self.records["gc_freeze"]["error"] = "gc.freeze needs Python 3.7 or later"
            return
        gc.freeze()
        count = gc.get_freeze_count() if hasattr(gc, "get_freeze_count") else None
        self._site("gc_freeze", "gc.freeze() after step %d: %s objects left out of collections" % (steps, count))

    def _gc_threshold(self, n):
        """gc.set_threshold(n, ...) now (the older generations' thresholds
        as they were); the program's own calls run with n for generation 0."""
        orig = gc.set_threshold
        was = gc.get_threshold()
        orig(n, *was[1:])
        self._site("gc_threshold", "gc.set_threshold(%d) at start (was %d)" % (n, was[0]))
        changes = self

        @functools.wraps(orig)
        def set_threshold(*args):
            if os.getpid() != changes.pid or not args:
                return orig(*args)
            changes._site("gc_threshold", "gc.set_threshold(%s) at %s: generation 0 kept at %d"
                          % (", ".join(map(repr, args)), changes._where(), n))
            return orig(n, *args[1:])
        gc.set_threshold = set_threshold


class _HeldFlag(object):
    """A module-class property (torch's backend flags) that keeps value: a
    read reads the real flag; an assignment by the profiled process is
    recorded and sets value instead."""

    def __init__(self, prop, value, changes, name, label):
        self.prop, self.value, self.changes, self.name, self.label = prop, value, changes, name, label

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        return self.prop.__get__(obj, cls)

    def __set__(self, obj, value):
        c = self.changes
        if os.getpid() == c.pid:
            c._site(self.name, "%s = %r at %s kept at %s" % (self.label, value, c._where(), self.value))
            value = self.value
        self.prop.__set__(obj, value)
