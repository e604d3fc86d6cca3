#!/usr/bin/env python3
"""ncu_summary.py — one line per kernel launch from Nsight Compute's CSV details page.

Usage: ncu_summary.py NCU_CSV

NCU_CSV is what `ncu --csv --page details` wrote (scripts/gpu-check.sh ncu): the program's own
output first, then one row per (launch, metric). Each launch's line gives its grid and block, the
duration, the share of peak the SM and DRAM reached, achieved against theoretical occupancy,
registers per thread, the share of issue slots used, the warps eligible per scheduler per cycle,
and the most used pipeline where ncu names one. The durations are at the clocks ncu locks the
GPU to (its base clock unless told otherwise), so compare launches within one file, not against
timings taken without ncu."""
import csv
import re
import signal
import sys

COLUMNS = [
    ("Duration", "time"),
    ("Compute (SM) Throughput", "SM%"),
    ("DRAM Throughput", "DRAM%"),
    ("Achieved Occupancy", "occ%"),
    ("Theoretical Occupancy", "of"),
    ("Registers Per Thread", "regs"),
    ("Issue Slots Busy", "issue%"),
    ("Eligible Warps Per Scheduler", "eligible"),
]


def short_name(name):
    """The kernel's name without its return type, namespaces and parameter list."""
    name = name.replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    name = re.sub(r"^void ", "", name).split("(", 1)[0]
    head = name.split("<", 1)[0]
    cut = head.rfind("::")
    return name[cut + 2:] if cut >= 0 else name


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    if len(sys.argv) != 2:
        sys.exit("usage: ncu_summary.py NCU_CSV")
    path = sys.argv[1]
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as e:
        sys.exit(f"ncu_summary: {path}: {e.strerror}")
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        sys.exit(f"ncu_summary: {path}: no ncu CSV header (\"ID\",...): did ncu profile a kernel?")
    rows = list(csv.reader(lines[start:]))
    header = {name: i for i, name in enumerate(rows[0])}
    needed = ["ID", "Kernel Name", "Grid Size", "Block Size", "Metric Name", "Metric Value"]
    missing = [n for n in needed if n not in header]
    if missing:
        sys.exit(f"ncu_summary: {path}: the CSV lacks the columns {', '.join(missing)}")
    launches = {}
    pipes = {}
    for row in rows[1:]:
        if len(row) <= header["Metric Value"]:
            continue
        key = row[header["ID"]]
        entry = launches.setdefault(key, {"name": row[header["Kernel Name"]],
                                          "grid": row[header["Grid Size"]],
                                          "block": row[header["Block Size"]], "metrics": {}})
        metric = row[header["Metric Name"]]
        value = row[header["Metric Value"]]
        unit = row[header["Metric Unit"]] if "Metric Unit" in header else ""
        if metric:
            entry["metrics"][metric] = (value, unit)
        rule = row[header["Rule Name"]] if "Rule Name" in header and len(row) > header["Rule Name"] else ""
        if rule == "HighPipeUtilization" and key not in pipes:
            text = row[header["Rule Description"]]
            found = re.match(r"\s*(\S+(?: \S+)?) is the highest-utilized pipeline \(([\d.]+)%\)", text)
            if found:
                pipes[key] = f"{found.group(1)} {found.group(2)}%"
    if not launches:
        sys.exit(f"ncu_summary: {path}: no kernel launch in the CSV")
    print("launch kernel grid block " + " ".join(label for _, label in COLUMNS) + " top-pipe")
    for key in sorted(launches, key=int):
        entry = launches[key]
        cells = []
        for metric, _ in COLUMNS:
            value, unit = entry["metrics"].get(metric, ("?", ""))
            value = value.replace(",", "")
            if unit in ("ns", "usecond", "us"):
                value = f"{float(value) / (1000.0 if unit == 'ns' else 1.0):.1f}us"
            elif unit == "msecond":
                value = f"{float(value) * 1000.0:.1f}us"
            cells.append(value)
        grid = entry["grid"].replace(" ", "")
        block = entry["block"].replace(" ", "")
        print(f"{key} {short_name(entry['name'])} {grid} {block} " + " ".join(cells) + " " +
              pipes.get(key, "-").replace(" ", "_"))


if __name__ == "__main__":
    main()
