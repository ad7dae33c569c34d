"""bottleneck agent bootstrap: `python _bottleneck_boot.py CONFIG script|module TARGET [ARGS...]`.

Runs TARGET as the real __main__ (like `python script.py` / `python -m mod`)
with the agent recording; see _bottleneck_agent.run_main.
"""
import os
import sys

sys.path[0] = os.path.dirname(os.path.abspath(__file__))
import _bottleneck_agent  # noqa: E402

# the program's sys.modules holds no bottleneck module (the agent stays
# alive through the references its hooks hold); bottleneck_profiler's
# profile() inside the run finds the running agent through sys instead
del sys.modules["_bottleneck_agent"]
sys._bottleneck_agent = _bottleneck_agent

if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.stderr.write("usage: _bottleneck_boot.py CONFIG script|module TARGET [ARGS...]\n")
        sys.exit(2)
    _bottleneck_agent.run_main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
