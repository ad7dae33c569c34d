"""Tests of the environment record (_bottleneck_env)."""
import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import _bottleneck_env as E  # noqa: E402


class CPUFeaturesTest(unittest.TestCase):
    def features(self, cpuinfo):
        with mock.patch("builtins.open", mock.mock_open(read_data=cpuinfo)):
            return E.cpu_features()

    def test_x86_flags(self):
        got = self.features("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 amx_tile amx_bf16 xsave\n"
                            "processor\t: 1\nflags\t\t: fpu\n")
        self.assertEqual(got, ["amx_bf16", "amx_tile", "avx2", "avx512_bf16", "avx512f"])

    def test_arm_features(self):
        self.assertEqual(self.features("processor\t: 0\nFeatures\t: fp asimd fphp asimdhp bf16 sve\n"),
                         ["asimdhp", "bf16", "fphp", "sve"])

    def test_none_of_them(self):
        self.assertEqual(self.features("flags\t\t: fpu sse2\n"), [])

    def test_unknown_without_cpuinfo(self):
        with mock.patch("builtins.open", side_effect=OSError("no such file")):
            self.assertIsNone(E.cpu_features())

    @unittest.skipUnless(os.path.exists("/proc/cpuinfo"), "Linux")
    def test_this_machine(self):
        self.assertIsInstance(E.base_env()["cpu_features"], list)


if __name__ == "__main__":
    unittest.main()
