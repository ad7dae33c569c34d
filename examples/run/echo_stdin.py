"""Reads stdin and writes it back upper-cased, plus its argv (argparse)."""
import argparse
import sys

ap = argparse.ArgumentParser()
ap.add_argument("--prefix", default=">")
ap.add_argument("words", nargs="*")
a = ap.parse_args()
data = sys.stdin.read()
sys.stdout.write("%s %s|%s\n" % (a.prefix, " ".join(a.words), data.upper()))
sys.stderr.write("stderr line\n")
