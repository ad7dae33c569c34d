"""Tests of the environment record (_bottleneck_env)."""
import os
import sys
import unittest
import types
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


class MemoryTest(unittest.TestCase):
    def test_a_cgroup_limit_under_the_machine(self):
        with mock.patch("builtins.open", mock.mock_open(read_data="1073741824\n")):
            self.assertEqual(E.memory_bytes(), min(1 << 30, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")))

    def test_no_limit(self):
        machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        with mock.patch("builtins.open", mock.mock_open(read_data="max\n")):
            self.assertEqual(E.memory_bytes(), machine)
        with mock.patch("builtins.open", side_effect=OSError("no cgroup v2")):
            self.assertEqual(E.memory_bytes(), machine)


class CPUQuotaTest(unittest.TestCase):
    """cpu_quota: the cgroup's CFS quota, v1 and v2, the least on the path."""

    def tree(self, cgroup, files):
        import tempfile
        d = tempfile.mkdtemp()
        self.addCleanup(__import__("shutil").rmtree, d)
        with open(os.path.join(d, "cgroup"), "w") as f:
            f.write(cgroup)
        for path, text in files.items():
            os.makedirs(os.path.join(d, "fs", os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, "fs", path), "w") as f:
                f.write(text)
        return E.cpu_quota(os.path.join(d, "cgroup"), os.path.join(d, "fs"))

    def test_v2(self):
        self.assertEqual(self.tree("0::/pod/app\n", {"pod/app/cpu.max": "150000 100000\n", "cpu.max": "max 100000\n"}), 1.5)

    def test_v2_on_a_hybrid_host(self):
        self.assertEqual(self.tree("1:cpu:/\n0::/job\n", {"unified/job/cpu.max": "200000 100000\n"}), 2.0)

    def test_v2_a_parent_lower(self):
        self.assertEqual(self.tree("0::/pod/app\n", {"pod/app/cpu.max": "max 100000\n", "pod/cpu.max": "50000 100000\n"}), 0.5)

    def test_v1(self):
        files = {"cpu,cpuacct/job/cpu.cfs_quota_us": "200000\n", "cpu,cpuacct/job/cpu.cfs_period_us": "100000\n",
                 "cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"}
        self.assertEqual(self.tree("4:memory:/job\n3:cpu,cpuacct:/job\n0::/\n", files), 2.0)

    def test_unlimited_or_unknown(self):
        self.assertIsNone(self.tree("0::/\n", {"cpu.max": "max 100000\n"}))
        self.assertIsNone(self.tree("1:cpu:/\n", {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}))
        self.assertIsNone(self.tree("0::/\n", {}))
        self.assertIsNone(E.cpu_quota("/nonexistent/cgroup"))


class FakeTorch(object):
    """A CUDA build whose cuDNN query initialises CUDA, as torch's does
    (cudnn.version() reads every device's capability)."""

    def __init__(self):
        self.__version__ = "2.11.0"
        self.version = types.SimpleNamespace(cuda="13.0", hip=None, debug=False, git_version="x")
        self.initialized = False
        fake = self

        def version():
            fake.initialized = True
            return 91900
        self.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(version=version))
        self.cuda = types.SimpleNamespace(is_initialized=lambda: fake.initialized, device_count=lambda: 0)


class TorchEnvTest(unittest.TestCase):
    def test_never_initialises_cuda(self):
        torch = FakeTorch()
        t = E.torch_env(torch, with_devices=False)
        self.assertFalse(torch.initialized)
        self.assertNotIn("cudnn", t)
        t = E.torch_env(torch, with_devices=True)
        self.assertFalse(torch.initialized)

    def test_cudnn_once_the_program_uses_cuda(self):
        torch = FakeTorch()
        torch.initialized = True
        self.assertEqual(E.torch_env(torch, with_devices=True)["cudnn"], 91900)
