"""bottleneck agent: the program's own command-line options (embedded in
the bottleneck binary, loaded by _bottleneck_agent).

A training script often has an option for the change a finding advises
(timm's train.py: --amp --amp-dtype bfloat16 --channels-last; the Hugging
Face scripts' --bf16, --torch_compile, --dataloader_num_workers; -j and
-b in pytorch/examples): the report names it. argparse's
parse_known_args (which parse_args calls) is wrapped to record, of the
parser with the most options the profiled process parsed, each option's
flags, destination, kind and parsed value; so is jsonargparse's
parse_args, which does not call it (LightningCLI: --trainer.precision,
--data.num_workers, in the subcommand's parser). The program gets what
the parser returns, exactly as without bottleneck.

Documented in docs/run.md ("Evidence format": program_options).
"""
import argparse
import os
import sys

_MAX_OPTIONS = 200
_MAX_CHOICES = 12


def _plain(v):
    """v where JSON carries it as it is (None, bool, number, short text),
    else None."""
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if isinstance(v, str) and len(v) <= 200:
        return v
    return None


def _switch(action):
    """For an option that takes no value, its flags and the value giving
    it sets (store_true: True, store_false: False, store_const: its
    constant; BooleanOptionalAction's --x: True, its --no-x left out);
    None for an option that takes one."""
    if isinstance(action, argparse._StoreConstAction):  # store_true and store_false too
        return list(action.option_strings), _plain(action.const)
    boolean = getattr(argparse, "BooleanOptionalAction", None)
    if boolean is not None and isinstance(action, boolean):
        return [f for f in action.option_strings if not f.startswith("--no-")], True
    return None


def options_of(parser, namespace, value_of=None):
    """The options of parser (not the positionals, not help or version)
    with the values namespace holds (value_of(dest), where given)."""
    if value_of is None:
        value_of = lambda dest: getattr(namespace, dest, None)  # noqa: E731
    out = []
    for a in parser._actions:
        if not a.option_strings or isinstance(a, (argparse._HelpAction, argparse._VersionAction)):
            continue
        rec = {"flags": list(a.option_strings), "dest": a.dest, "kind": "value",
               "value": _plain(value_of(a.dest))}
        sw = _switch(a)
        if sw is not None:
            rec["flags"], rec["sets"] = sw
            rec["kind"] = "switch"
        elif a.nargs == "?" and _plain(a.const) is not None:
            rec["sets"] = _plain(a.const)  # given bare (timm's --torchcompile: "inductor")
        if a.choices is not None:
            try:
                rec["choices"] = [_plain(c) for c in list(a.choices)[:_MAX_CHOICES]]
            except TypeError:
                pass
        out.append(rec)
        if len(out) == _MAX_OPTIONS:
            break
    return out


def _wrap(cls, name, recorder, record):
    """cls.name wrapped once a process: after each call in the profiled
    process, record(the recorder, the parser, its result); a later agent
    (the unit tests start several) takes the recording over. An error in
    record is noted, never the program's."""
    orig = getattr(cls, name)
    if getattr(orig, "_bottleneck_wrapped", False):
        orig.recorder = recorder
        return

    def wrapper(parser, *args, **kwargs):
        result = orig(parser, *args, **kwargs)
        rec = wrapper.recorder
        if os.getpid() == rec.pid:
            try:
                record(rec, parser, result)
            except Exception as e:
                rec.errors.append("program options: %s: %s" % (type(e).__name__, e))
        return result

    wrapper.recorder = recorder
    wrapper._bottleneck_wrapped = True
    wrapper.__wrapped__ = orig
    for attr in ("__name__", "__qualname__", "__doc__"):
        setattr(wrapper, attr, getattr(orig, attr, None))
    setattr(cls, name, wrapper)


class Options(object):
    """Records, in the profiled process (pid), the options of the parsers
    argparse.ArgumentParser.parse_known_args and
    jsonargparse.ArgumentParser.parse_args parse (each wrapped once a
    process, jsonargparse's when it is imported); evidence() is what it
    recorded."""

    def __init__(self, pid, errors, watch=None):
        self.pid, self.errors = pid, errors
        self.watch = watch  # watch(module name, callback): run callback once it is imported
        self.options = None

    def start(self):
        _wrap(argparse.ArgumentParser, "parse_known_args", self, lambda rec, parser, result: rec._record(parser, result[0]))
        jap = sys.modules.get("jsonargparse")
        if jap is not None and hasattr(jap, "ArgumentParser"):
            self._wrap_jsonargparse(jap)
        elif self.watch is not None:
            self.watch("jsonargparse", self._wrap_jsonargparse)

    def _wrap_jsonargparse(self, jap):
        if hasattr(getattr(jap, "ArgumentParser", None), "parse_args"):
            _wrap(jap.ArgumentParser, "parse_args", self, Options._record_jsonargparse)

    def _record_jsonargparse(self, parser, result):
        """The options of the subcommand parsed (LightningCLI's fit), else
        of the parser, with the values jsonargparse's result holds."""
        get = getattr(result, "get", None)
        if get is None:
            return  # parsed as a dict (parser_mode, _parse_as_dict): no values to read
        sub = getattr(parser, "_subcommands_action", None)
        name = get("subcommand") if sub is not None else None
        parsers = getattr(sub, "_name_parser_map", None) or {}
        if isinstance(name, str) and name in parsers:
            self._record(parsers[name], result, lambda dest: get(name + "." + dest))
        else:
            self._record(parser, result, lambda dest: get(dest))

    def _record(self, parser, namespace, value_of=None):
        opts = options_of(parser, namespace, value_of)
        # the parser with the most options is the program's own (timm's
        # train.py parses a one-option config parser first)
        if opts and (self.options is None or len(opts) >= len(self.options)):
            self.options = opts

    def evidence(self):
        return self.options
