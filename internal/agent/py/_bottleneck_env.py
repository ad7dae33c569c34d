"""bottleneck agent: the environment summary (embedded in the bottleneck
binary, loaded by _bottleneck_agent): Python, platform, CPUs, the
environment variables and package versions worth reporting, and torch's
versions, flags and devices (env-<tag>.json). Reads only: it never
initialises CUDA on the program's behalf.

Documented in docs/run.md ("env.json and env-<tag>.json").
"""
import os
import platform
import re
import sys

from _bottleneck_files import FORMAT_VERSION

# Environment variables worth reporting (exact names and prefixes).
_ENV_NAMES = (
    "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_MAX_CONNECTIONS",
    "CUBLAS_WORKSPACE_CONFIG", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF",
    "PYTORCH_NO_CUDA_MEMORY_CACHING", "RANK", "LOCAL_RANK", "WORLD_SIZE",
    "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES", "TOKENIZERS_PARALLELISM", "THP_MEM_ALLOC_ENABLE",
    # how OpenMP's threads wait for work: spinning, or asleep
    "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME",
    # the C library's allocator: its settings, or another one preloaded
    "GLIBC_TUNABLES", "LD_PRELOAD",
    # torchrun's node and job: `run --job-dir` reads them (docs/distributed.md)
    "GROUP_RANK", "GROUP_WORLD_SIZE", "TORCHELASTIC_RUN_ID",
)
_ENV_PREFIXES = ("MALLOC_", "NCCL_", "TORCH_", "TORCHINDUCTOR_", "TORCHDYNAMO_", "CUDNN_", "KINETO_")
_PACKAGES = (
    "numpy", "torchvision", "torchaudio", "lightning", "pytorch-lightning",
    "transformers", "accelerate", "deepspeed", "triton", "apex", "timm",
    "datasets", "nvidia-cudnn-cu12", "nvidia-nccl-cu12",
)


def safe(fn, default=None):
    try:
        return fn()
    except Exception:
        return default


def package_versions():
    out = {}
    try:
        from importlib import metadata
    except ImportError:  # pragma: no cover
        return out
    for name in _PACKAGES:
        v = safe(lambda: metadata.version(name))
        if v:
            out[name] = v
    return out


def env_vars():
    out = {}
    for k, v in os.environ.items():
        if k in _ENV_NAMES or any(k.startswith(p) for p in _ENV_PREFIXES):
            out[k] = v
    return out


# CPU features that decide how fast reduced precision runs on a CPU
# (/proc/cpuinfo: x86 "flags", Arm "Features").
_CPU_FEATURES = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_fp16",
                 "bf16", "fphp", "asimdhp", "sve")


def cpu_features():
    """The CPU features in _CPU_FEATURES that the first CPU has, sorted;
    None where /proc/cpuinfo cannot tell (not Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    have = set(value.split())
                    return sorted(x for x in _CPU_FEATURES if x in have)
    except (OSError, UnicodeDecodeError):
        pass
    return None


def transparent_hugepages(path="/sys/kernel/mm/transparent_hugepage/enabled"):
    """The kernel's transparent huge page mode (always, madvise or never:
    the bracketed word of the file), or None where there is none."""
    try:
        with open(path) as f:
            m = re.search(r"\[(\w+)\]", f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def memory_bytes(cgroup="/sys/fs/cgroup/memory.max"):
    """The memory the process may use: the machine's, or its cgroup's
    limit where lower (a container's); None where unknown."""
    total = safe(lambda: os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    try:
        with open(cgroup) as f:
            limit = int(f.read().strip())  # "max": no limit
        total = limit if total is None else min(total, limit)
    except (OSError, ValueError):
        pass
    return total


def cpu_quota(proc_cgroup="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """The CPUs the process's cgroup lets it use a period (its CFS quota
    over the period: a container's --cpus, a Kubernetes CPU limit), the
    least along its cgroup's path to the root; None where unlimited or
    unknown. torch sizes its intra-op threads by the CPUs it may run on,
    which a quota does not change."""
    try:
        with open(proc_cgroup) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    dirs = []
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        ctrls, path = parts[1], parts[2].strip("/")
        if ctrls == "":  # cgroup v2: cpu.max (a hybrid host mounts it at unified/)
            dirs += [(root, path, None), (os.path.join(root, "unified"), path, None)]
        elif "cpu" in ctrls.split(","):  # v1: cpu.cfs_quota_us, cpu.cfs_period_us
            for mount in dict.fromkeys((ctrls, "cpu", "cpu,cpuacct")):  # where distributions mount it
                dirs.append((os.path.join(root, mount), path, ctrls))
    best = None
    for base, path, v1 in dirs:
        parts = path.split("/") if path else []
        for i in range(len(parts), -1, -1):
            d = os.path.join(base, *parts[:i])
            try:
                if v1 is None:
                    with open(os.path.join(d, "cpu.max")) as f:
                        quota, period = f.read().split()[:2]
                    if quota == "max":
                        continue
                    quota, period = int(quota), int(period)
                else:
                    with open(os.path.join(d, "cpu.cfs_quota_us")) as f:
                        quota = int(f.read())
                    with open(os.path.join(d, "cpu.cfs_period_us")) as f:
                        period = int(f.read())
            except (OSError, ValueError):
                continue
            if quota > 0 and period > 0:
                best = min(best, quota / period) if best is not None else quota / period
    return round(best, 3) if best is not None else None


def base_env():
    return {
        "format": "bottleneck.env",
        "version": FORMAT_VERSION,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            "gil_enabled": safe(lambda: sys._is_gil_enabled(), True),
        },
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": safe(lambda: len(os.sched_getaffinity(0))),
        "cpu_quota": safe(cpu_quota),
        "cpu_features": cpu_features(),
        "transparent_hugepages": transparent_hugepages(),
        "memory_bytes": memory_bytes(),
        # other work on the machine when the program started (1-minute load)
        "load_average": safe(lambda: os.getloadavg()[0]),
        "pid": os.getpid(),
        "hostname": platform.node(),
        "env": env_vars(),
        "packages": {},
        "torch": None,
    }


def torch_env(torch, with_devices):
    """Versions and flags from torch itself. Device queries only when CUDA
    is already initialised (with_devices), so the agent never initialises it."""
    t = {"version": getattr(torch, "__version__", "?")}
    ver = getattr(torch, "version", None)
    t["cuda"] = getattr(ver, "cuda", None)
    t["hip"] = getattr(ver, "hip", None)
    t["debug"] = getattr(ver, "debug", None)
    t["git"] = getattr(ver, "git_version", None)
    t["build"] = "rocm" if t["hip"] else ("cuda" if t["cuda"] else "cpu")
    t["num_threads"] = safe(lambda: torch.get_num_threads())
    t["num_interop_threads"] = safe(lambda: torch.get_num_interop_threads())
    t["kineto_available"] = safe(lambda: bool(torch.autograd.kineto_available()), False)
    t["profiler_activities"] = safe(
        lambda: sorted(str(a).split(".")[-1] for a in torch.profiler.supported_activities()), [])
    t["flags"] = {
        "matmul_allow_tf32": safe(lambda: bool(torch.backends.cuda.matmul.allow_tf32)),
        "cudnn_allow_tf32": safe(lambda: bool(torch.backends.cudnn.allow_tf32)),
        "cudnn_benchmark": safe(lambda: bool(torch.backends.cudnn.benchmark)),
        "cudnn_deterministic": safe(lambda: bool(torch.backends.cudnn.deterministic)),
        "cudnn_enabled": safe(lambda: bool(torch.backends.cudnn.enabled)),
        "deterministic_algorithms": safe(lambda: bool(torch.are_deterministic_algorithms_enabled())),
        "float32_matmul_precision": safe(lambda: torch.get_float32_matmul_precision()),
        "grad_enabled": safe(lambda: bool(torch.is_grad_enabled())),
        "default_dtype": safe(lambda: str(torch.get_default_dtype())),
        # anomaly detection: stack capture in every forward op, a NaN check
        # (with a device sync) after every backward node
        "anomaly_enabled": safe(lambda: bool(torch.is_anomaly_enabled())),
        "anomaly_check_nan": safe(lambda: bool(torch.is_anomaly_check_nan_enabled())),
    }
    cuda = getattr(torch, "cuda", None)
    t["cuda_initialized"] = bool(safe(lambda: cuda.is_initialized(), False))
    if with_devices and t["cuda_initialized"]:
        # cudnn.version() initialises CUDA when it is not yet (it reads the
        # devices' capabilities): a CPU program would get a CUDA context
        t["cudnn"] = safe(lambda: torch.backends.cudnn.version())
        t["nccl"] = safe(lambda: ".".join(str(x) for x in cuda.nccl.version())
                          if isinstance(cuda.nccl.version(), tuple) else str(cuda.nccl.version()))
        devs = []
        for i in range(safe(lambda: cuda.device_count(), 0) or 0):
            p = safe(lambda: cuda.get_device_properties(i))
            if p is None:
                continue
            devs.append({
                "index": i, "name": p.name, "total_memory": p.total_memory,
                "capability": "%d.%d" % (p.major, p.minor),
                "multi_processor_count": getattr(p, "multi_processor_count", None),
            })
        t["devices"] = devs
        t["device_count"] = len(devs)
    dist = safe(lambda: torch.distributed)
    if dist is not None and safe(lambda: dist.is_available() and dist.is_initialized(), False):
        t["distributed"] = {
            "backend": safe(lambda: str(dist.get_backend())),
            "rank": safe(lambda: dist.get_rank()),
            "world_size": safe(lambda: dist.get_world_size()),
        }
    return t