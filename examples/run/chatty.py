"""Writes lines in two pieces with a pause in between, as progress bars
and loggers do: on a terminal, bottleneck's progress must never land
inside them. No torch needed.

    python chatty.py --lines 20 --pause 0.15
"""
import argparse
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=20)
    ap.add_argument("--pause", type=float, default=0.15)
    a = ap.parse_args()
    for k in range(a.lines):
        sys.stdout.write("line %d begins" % k)
        sys.stdout.flush()
        time.sleep(a.pause)
        sys.stdout.write(" and ends\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
