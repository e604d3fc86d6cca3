#!/usr/bin/env python3
"""bench_gpu_summary.py — the comparison table of a `scripts/gpu-check.sh bench` run: reads the
JSON lines that tests/bench/bench_gpu_train and bench_lora_gpu_torch.py append (each
configuration run several times, one process each) and prints per shape, for every
configuration: the median tokens/s over its runs and their spread (min-max, and max/min - 1),
the peak allocated and reserved device memory (the largest over its runs), its share of the
physical limit, and LoRAscope's ratios to torch.compile and to plain-LoRA eager (the issue's
targets: >= 1.2x torch.compile and >= 2.5x plain eager tokens/s, peak reserved <= 0.6x
torch.compile's), the built-in GEMM against the vendor BLAS, the time per op class and the
launches per step.

The physical limit is the vendor GEMM's ceiling measured on the card by bench_gpu_train (its
header has the formula) over the shape's FLOPs per token. Rows that do not belong together are
refused, not averaged: every row must come from the same GPU, and within a shape the same batch,
sequence length, LoRA rank, alpha, adapted modules and activation checkpointing.

    python3 scripts/reference/bench_gpu_summary.py RESULTS.jsonl
"""
import json
import re
import statistics
import sys

# The settings every row of a shape must share (a row lacking one is refused too).
SETTINGS = ("batch", "seq", "rank", "alpha", "targets", "checkpointing")


class Refused(Exception):
    pass


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def card(row):
    """The GPU's name without bench_gpu_train's architecture suffix (" (sm_90)", " (gfx1100)"),
    which PyTorch's device name lacks."""
    return re.sub(r" \((sm_|gfx)[0-9a-z]+\)$", "", str(row.get("gpu")))


def check_comparable(rows):
    gpus = sorted({card(r) for r in rows})
    if len(gpus) != 1:
        raise Refused(f"rows from {len(gpus)} GPUs ({'; '.join(gpus)}): run every configuration "
                      "in one call on one card")
    for shape in sorted({r["shape"] for r in rows}):
        of_shape = [r for r in rows if r["shape"] == shape]
        for key in SETTINGS:
            values = {json.dumps(r.get(key)) for r in of_shape}
            if len(values) != 1:
                detail = ", ".join(f"{r['impl']}={json.dumps(r.get(key))}" for r in of_shape)
                raise Refused(f"{shape}: the rows differ in {key} ({detail})")
    return gpus[0]


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "n/a"


def gib(value):
    return f"{value:.2f}" if value is not None else "n/a"


def largest(runs, key):
    values = [r.get(key) for r in runs if r.get(key) is not None]
    return max(values) if values else None


def configuration(runs):
    speeds = sorted(r["tokens_per_s"] for r in runs)
    return {
        "runs": len(runs),
        "tokens_per_s": statistics.median(speeds),
        "min": speeds[0],
        "max": speeds[-1],
        "ms_per_step": statistics.median(1000 * r["s_per_step"] for r in runs),
        "reserved": largest(runs, "peak_reserved_gib"),
        "allocated": largest(runs, "peak_allocated_gib"),
        "driver": largest(runs, "driver_used_gib"),
        "last": runs[-1],
    }


def summarize(rows):
    gpu = check_comparable(rows)
    print(f"GPU: {gpu}")
    for shape in sorted({r["shape"] for r in rows}):
        of_shape = [r for r in rows if r["shape"] == shape]
        impls = sorted({r["impl"] for r in of_shape})
        configs = {impl: configuration([r for r in of_shape if r["impl"] == impl])
                   for impl in impls}
        flops = next((r["flops_per_token"] for r in of_shape if r.get("flops_per_token")), None)
        ceilings = [r["gemm_ceiling_tflops"] for r in of_shape if r.get("gemm_ceiling_tflops")]
        ceiling = statistics.median(ceilings) if ceilings else None
        limit = ceiling * 1e12 / flops if ceiling and flops else None
        print(f"\n{shape} (B{of_shape[0]['batch']} x S{of_shape[0]['seq']}, LoRA r"
              f"{of_shape[0].get('rank')} alpha {of_shape[0].get('alpha')}, checkpointing "
              f"{'on' if of_shape[0].get('checkpointing') else 'off'})")
        if limit:
            print(f"  physical limit: {flops / 1e9:.2f} GFLOP/token at the vendor GEMM's "
                  f"{ceiling:.0f} TFLOP/s (median of {len(ceilings)} measurements) = "
                  f"{limit:.0f} tokens/s")
        print(f"  {'configuration':26} {'runs':>4} {'tokens/s':>9} {'spread (min-max)':>20} "
              f"{'ms/step':>8} {'share':>6} {'reserved':>9} {'allocated':>9} {'driver':>7}"
              "  GiB peaks")
        for impl, c in configs.items():
            spread = f"{c['min']:.0f}-{c['max']:.0f} {100 * (c['max'] / c['min'] - 1):.1f}%"
            share = f"{100 * c['tokens_per_s'] / limit:.1f}%" if limit else "n/a"
            print(f"  {impl:26} {c['runs']:4d} {c['tokens_per_s']:9.0f} {spread:>20} "
                  f"{c['ms_per_step']:8.1f} {share:>6} {gib(c['reserved']):>9} "
                  f"{gib(c['allocated']):>9} {gib(c['driver']):>7}")
        references = [("torch.compile", configs.get("torch-compile-plain") or
                       configs.get("torch-compile")),
                      ("plain eager", configs.get("torch-eager-plain")),
                      ("PEFT eager", configs.get("torch-eager"))]
        vendor = configs.get("lorascope-vendor")
        for impl, ours in configs.items():
            if not impl.startswith("lorascope"):
                continue
            for name, ref in references:
                if ref is None:
                    continue
                print(f"  {impl} vs {name}: tokens/s "
                      f"{ratio(ours['tokens_per_s'], ref['tokens_per_s'])}, peak reserved "
                      f"{ratio(ours['reserved'], ref['reserved'])}")
            if impl == "lorascope-baseline" and vendor is not None:  # before → after
                print(f"  lorascope-vendor vs lorascope-baseline: tokens/s "
                      f"{ratio(vendor['tokens_per_s'], ours['tokens_per_s'])}")
            elif impl != "lorascope-vendor" and vendor is not None:
                print(f"  {impl} vs lorascope-vendor: tokens/s "
                      f"{ratio(ours['tokens_per_s'], vendor['tokens_per_s'])}")
            last = ours["last"]
            breakdown = last.get("breakdown_ms_per_step") or {}
            if breakdown:
                parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(breakdown.items()))
                print(f"  {impl} ms/step by class ({last['profiled_ms_per_step']:.1f} ms/step "
                      f"profiled, {last.get('launches_per_step', 0):.0f} launches/step): {parts}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench_gpu_summary.py RESULTS.jsonl")
    try:
        rows = load(sys.argv[1])
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"bench_gpu_summary.py: {sys.argv[1]}: {error}")
    if not rows:
        sys.exit(f"bench_gpu_summary.py: {sys.argv[1]}: no results (every configuration failed?)")
    try:
        summarize(rows)
    except (Refused, KeyError) as error:
        sys.exit(f"bench_gpu_summary.py: {sys.argv[1]}: refused: {error}")


if __name__ == "__main__":
    main()
