"""Unit tests of _bottleneck_options (standard library only)."""
import argparse
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import _bottleneck_options as O  # noqa: E402


def _timm_like():
    """Two parsers as timm's train.py has them: a one-option config
    parser, then the program's own."""
    config = argparse.ArgumentParser(add_help=False)
    config.add_argument("-c", "--config", default="")
    main = argparse.ArgumentParser(description="train")
    main.add_argument("data", nargs="?")
    main.add_argument("--amp", action="store_true")
    main.add_argument("--amp-dtype", default="float16", choices=["float16", "bfloat16"])
    main.add_argument("--channels-last", action="store_true", default=False)
    main.add_argument("-j", "--workers", type=int, default=4)
    main.add_argument("--no-prefetcher", action="store_false", dest="prefetcher")
    main.add_argument("--lr-noise", type=float, nargs="+", default=None)
    main.add_argument("--torchcompile", nargs="?", type=str, default=None, const="inductor")
    if hasattr(argparse, "BooleanOptionalAction"):
        main.add_argument("--compile", action=argparse.BooleanOptionalAction, default=False)
    return config, main


class OptionsTest(unittest.TestCase):
    def setUp(self):
        self.orig = argparse.ArgumentParser.parse_known_args
        self.errors = []
        self.rec = O.Options(os.getpid(), self.errors)
        self.rec.start()

    def tearDown(self):
        argparse.ArgumentParser.parse_known_args = self.orig

    def test_program_parser(self):
        config, main = _timm_like()
        argv = ["data", "-j", "2", "--amp", "--lr-noise", "0.4", "0.9"]
        known, rest = config.parse_known_args(argv)
        args = main.parse_args(rest)
        # the program gets what argparse gives it
        self.assertEqual((args.workers, args.amp, args.amp_dtype, args.prefetcher), (2, True, "float16", True))
        self.assertEqual(known.config, "")
        opts = {o["dest"]: o for o in self.rec.evidence()}
        self.assertEqual(sorted(opts), ["amp", "amp_dtype", "channels_last", "compile", "lr_noise", "prefetcher", "torchcompile", "workers"])
        self.assertEqual((opts["torchcompile"]["kind"], opts["torchcompile"]["sets"]), ("value", "inductor"))
        self.assertNotIn("sets", opts["workers"])
        self.assertEqual((opts["compile"]["flags"], opts["compile"]["sets"]), (["--compile"], True))
        self.assertEqual(opts["workers"], {"flags": ["-j", "--workers"], "dest": "workers", "kind": "value", "value": 2})
        self.assertEqual(opts["amp"]["kind"], "switch")
        self.assertTrue(opts["amp"]["value"])
        self.assertEqual(opts["amp"]["sets"], True)
        self.assertEqual((opts["prefetcher"]["kind"], opts["prefetcher"]["sets"]), ("switch", False))
        self.assertEqual(opts["amp_dtype"]["choices"], ["float16", "bfloat16"])
        self.assertIsNone(opts["lr_noise"]["value"])  # a list: left out
        self.assertEqual(self.errors, [])

    def test_another_process(self):
        self.rec.pid = -1  # a DataLoader worker, a forked child
        _timm_like()[1].parse_args([])
        self.assertIsNone(self.rec.evidence())

    def test_errors_stay_argparse_s(self):
        with self.assertRaises(SystemExit):
            with open(os.devnull, "w") as devnull:
                err, sys.stderr = sys.stderr, devnull
                try:
                    _timm_like()[1].parse_args(["--workers", "x"])
                finally:
                    sys.stderr = err
        self.assertIsNone(self.rec.evidence())

    def test_start_twice(self):
        wrapped = argparse.ArgumentParser.parse_known_args
        again = O.Options(os.getpid(), [])
        again.start()  # a second agent in the process: no second wrapper; it records
        self.assertIs(argparse.ArgumentParser.parse_known_args, wrapped)
        _timm_like()[1].parse_args([])
        self.assertIsNone(self.rec.evidence())
        self.assertEqual(len(again.evidence()), 8)


if __name__ == "__main__":
    unittest.main()


try:
    import jsonargparse
except ImportError:  # scripts/setup --test installs it
    jsonargparse = None


@unittest.skipIf(jsonargparse is None, "jsonargparse is not installed")
class JsonargparseTest(unittest.TestCase):
    """LightningCLI's parser: jsonargparse, its options in the subcommand's
    parser (fit), dotted (--trainer.precision, --data.num_workers)."""

    def setUp(self):
        self.orig = (argparse.ArgumentParser.parse_known_args, jsonargparse.ArgumentParser.parse_args)
        self.errors = []
        self.rec = O.Options(os.getpid(), self.errors)
        self.rec.start()

    def tearDown(self):
        argparse.ArgumentParser.parse_known_args, jsonargparse.ArgumentParser.parse_args = self.orig

    def parser(self):
        fit = jsonargparse.ArgumentParser()
        fit.add_argument("--trainer.precision", type=str, default=None)
        fit.add_argument("--data.num_workers", type=int, default=0)
        fit.add_argument("--model.width", type=int, default=8)
        root = jsonargparse.ArgumentParser()
        sub = root.add_subcommands()
        sub.add_subcommand("fit", fit)
        return root

    def test_the_subcommands_options(self):
        cfg = self.parser().parse_args(["fit", "--data.num_workers", "2"])
        self.assertEqual(cfg.fit.data.num_workers, 2)  # the program's result, as parsed
        by = {o["dest"]: o for o in self.rec.evidence()}
        self.assertEqual(by["data.num_workers"]["flags"], ["--data.num_workers"])
        self.assertEqual(by["data.num_workers"]["value"], 2)
        self.assertIn("trainer.precision", by)
        self.assertEqual(self.errors, [])

    def test_wrapped_once(self):
        again = O.Options(os.getpid(), [])
        again.start()
        # (another test's agent may have wrapped it before this one)
        self.assertFalse(getattr(jsonargparse.ArgumentParser.parse_args.__wrapped__, "_bottleneck_wrapped", False))
        self.parser().parse_args(["fit"])
        self.assertIsNotNone(again.evidence())
        self.assertIsNone(self.rec.evidence())
