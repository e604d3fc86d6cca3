#!/usr/bin/env python3
"""compare_curves.py — two runs' loss curves from their metrics.jsonl (runs/StepRecord's lines),
step by step: the same steps, each loss within a relative tolerance of the other's.

    compare_curves.py REFERENCE/metrics.jsonl OTHER/metrics.jsonl [TOLERANCE]   (default 1e-3)

scripts/gpu-check.sh group runs it on `lorascope-train train --gpus 0` against `--gpus 0,1`.
Exit status 0 when the curves agree, 1 when they do not (the worst step is named), 2 for a file
that cannot be read."""
import json
import sys


def losses(path):
    out = {}
    try:
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                record = json.loads(line)
                if "step" in record and "loss" in record:
                    out[record["step"]] = record["loss"]
    except (OSError, ValueError) as e:
        print(f"{path}: cannot read the metrics ({e})")
        sys.exit(2)
    if not out:
        print(f"{path}: no step with a loss")
        sys.exit(2)
    return out


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__)
        return 2
    reference, other = losses(sys.argv[1]), losses(sys.argv[2])
    tolerance = float(sys.argv[3]) if len(sys.argv) == 4 else 1e-3
    if sorted(reference) != sorted(other):
        print(f"FAIL: the steps differ: {len(reference)} in {sys.argv[1]}, "
              f"{len(other)} in {sys.argv[2]}")
        return 1
    worst_step, worst = None, 0.0
    for step in sorted(reference):
        a, b = reference[step], other[step]
        if a is None or b is None:  # a NaN loss is written as null
            difference = 0.0 if a is None and b is None else float("inf")
        else:
            difference = abs(a - b) / max(abs(a), 1e-12)
        if worst_step is None or difference > worst:
            worst_step, worst = step, difference
    first, last = min(reference), max(reference)
    print(f"{len(reference)} steps: largest relative loss difference {worst:.3g} at step "
          f"{worst_step} (tolerance {tolerance:g}); loss {reference[first]} -> "
          f"{reference[last]} (reference), {other[first]} -> {other[last]}")
    if worst > tolerance:
        print("FAIL: the curves differ")
        return 1
    print("PASS: the curves agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
