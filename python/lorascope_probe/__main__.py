"""python -m lorascope_probe SCRIPT.py ARGS... — runs the script with the probe attached."""
import sys

from . import _main

sys.exit(_main(sys.argv[1:]))
