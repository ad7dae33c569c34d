"""bottleneck for Python code and notebooks: why is my PyTorch program slow?

    import bottleneck_profiler
    with bottleneck_profiler.profile() as p:   # around a training loop
        train()
    p.report()                                  # text in a terminal, HTML in Jupyter

    bottleneck_profiler.analyze("trace.json")   # the JSON report of a trace
    print(bottleneck_profiler.try_change("train.py", num_workers=4))  # measured, not predicted

The command line is `bottleneck` (installed with this package). The import
name is bottleneck_profiler, never bottleneck: that name belongs to the
NumPy accelerator that pandas imports.
"""
from ._api import BottleneckError, Report, Tried, analyze, profile, try_change
from ._binary import binary_path

try:
    from ._version import version as __version__
except ImportError:  # a source checkout: the wheel build writes _version.py
    __version__ = "0+source"

__all__ = ["profile", "analyze", "try_change", "Report", "Tried", "BottleneckError", "binary_path", "__version__"]
