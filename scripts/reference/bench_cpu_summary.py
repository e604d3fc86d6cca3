#!/usr/bin/env python3
"""bench_cpu_summary.py — the medians of scripts/reference/bench_cpu.sh's runs.

    bench_cpu_summary.py BENCH_TXT

BENCH_TXT holds the tables `lorascope-train bench` and bench_lora_torch.py print, several runs of
each: a title line naming the shape ("tiny llama (...)", "qwen2.5-0.5B shape (...)"; PyTorch's
starts "torch VERSION: "), then one row per thread count: threads, tokens/s, s/step, peak RSS MiB
(ours may be followed by its per-op profile, which is skipped). Prints, per shape and thread
count, each program's median tokens/s over the runs with the spread (min-max) and ours over
PyTorch's (the ratio of the medians); where both have the same number of runs (bench_cpu.sh
interleaves them), also the median and spread of each run's own ratio, ours over the PyTorch
run beside it. Exit 1 when the file holds no table or a program's rows
are missing for a thread count the other has.
"""

import re
import statistics
import sys

ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s*$")
SHAPES = (("tiny llama", "tiny llama"), ("qwen2.5-0.5B shape", "qwen2.5-0.5B shape"))


def shape_of(title):
    for prefix, name in SHAPES:
        if title.startswith(prefix):
            return name
    return None


def read(path):
    """{(shape, program, threads): [tokens/s of each run]} from the tables in `path`."""
    results = {}
    current = None  # (shape, program) of the table being read
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            text = line.rstrip("\n")
            torch = re.match(r"^torch \S+: (.*)$", text)
            if torch and shape_of(torch.group(1)):
                current = (shape_of(torch.group(1)), "PyTorch")
                continue
            if shape_of(text):
                current = (shape_of(text), "lorascope-train")
                continue
            row = ROW.match(text)
            if row and current is not None:
                key = (current[0], current[1], int(row.group(1)))
                results.setdefault(key, []).append(float(row.group(2)))
    return results


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    path = sys.argv[1]
    results = read(path)
    if not results:
        print(f"bench_cpu_summary: {path} holds no benchmark table", file=sys.stderr)
        return 1
    status = 0
    for _, shape in SHAPES:
        threads = sorted({t for (s, _, t) in results if s == shape})
        if not threads:
            continue
        print(f"{shape}: median tokens/s of the runs (min-max), ours over PyTorch's")
        for t in threads:
            ours = results.get((shape, "lorascope-train", t))
            theirs = results.get((shape, "PyTorch", t))
            if not ours or not theirs:
                missing = "lorascope-train" if not ours else "PyTorch"
                print(f"bench_cpu_summary: {path}: no {missing} row for {shape} at {t} threads",
                      file=sys.stderr)
                status = 1
                continue
            mo, mt = statistics.median(ours), statistics.median(theirs)
            print(f"  {t:3d} threads: ours {mo:9.0f} ({min(ours):.0f}-{max(ours):.0f}, "
                  f"{len(ours)} runs), PyTorch {mt:9.0f} ({min(theirs):.0f}-{max(theirs):.0f}, "
                  f"{len(theirs)} runs): {mo / mt:.2f}x")
            if len(ours) == len(theirs) and len(ours) > 1:
                # The i-th run of each, side by side in time: a machine whose speed drifts
                # between runs moves both, and each pair's ratio cancels it.
                paired = [o / p for o, p in zip(ours, theirs)]
                print(f"               run by run: median {statistics.median(paired):.2f}x "
                      f"({min(paired):.2f}-{max(paired):.2f})")
    return status


if __name__ == "__main__":
    sys.exit(main())
