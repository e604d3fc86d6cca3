#!/usr/bin/env python3
"""bench_gpu_summary.py — the comparison table of a `scripts/gpu-check.sh bench` run: reads the
JSON lines that tests/bench/bench_gpu_train and bench_lora_gpu_torch.py append, and prints per
shape every configuration's tokens/s and peak memory, LoRAscope's ratios to torch.compile and to
eager (the issue's target: tokens/s >= 1.2x torch.compile, peak reserved <= 0.9x its peak), the
built-in GEMM's speed relative to the vendor BLAS, and LoRAscope's time per op class.

    python3 scripts/reference/bench_gpu_summary.py RESULTS.jsonl
"""
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "n/a"


def gib(value):
    return f"{value:.2f}" if value is not None else "n/a"


def summarize(rows):
    gpus = sorted({r["gpu"] for r in rows})
    print(f"GPU: {'; '.join(gpus)}")
    for shape in sorted({r["shape"] for r in rows}):
        by_impl = {r["impl"]: r for r in rows if r["shape"] == shape}
        print(f"\n{shape} (B{next(iter(by_impl.values()))['batch']} x "
              f"S{next(iter(by_impl.values()))['seq']})")
        print(f"  {'configuration':22} {'tokens/s':>10} {'ms/step':>8} {'reserved':>9} "
              f"{'allocated':>9} {'driver':>8}  GiB peaks")
        for impl, r in sorted(by_impl.items()):
            print(f"  {impl:22} {r['tokens_per_s']:10.0f} {1000 * r['s_per_step']:8.1f} "
                  f"{gib(r.get('peak_reserved_gib')):>9} {gib(r.get('peak_allocated_gib')):>9} "
                  f"{gib(r.get('driver_used_gib')):>8}")
        compiled, eager = by_impl.get("torch-compile"), by_impl.get("torch-eager")
        vendor = by_impl.get("lorascope-vendor")
        for impl in ("lorascope-vendor", "lorascope-built-in"):
            ours = by_impl.get(impl)
            if ours is None:
                continue
            for name, ref in (("torch.compile", compiled), ("eager", eager)):
                if ref is None:
                    continue
                print(f"  {impl} vs {name}: tokens/s {ratio(ours['tokens_per_s'], ref['tokens_per_s'])}"
                      f", peak reserved "
                      f"{ratio(ours.get('peak_reserved_gib'), ref.get('peak_reserved_gib'))}")
            if impl == "lorascope-built-in" and vendor is not None:
                print(f"  built-in GEMM vs vendor: tokens/s "
                      f"{ratio(ours['tokens_per_s'], vendor['tokens_per_s'])}")
            breakdown = ours.get("breakdown_ms_per_step") or {}
            if breakdown:
                parts = ", ".join(f"{k} {v:.1f}" for k, v in sorted(breakdown.items()))
                print(f"  {impl} ms/step by class ({ours['profiled_ms_per_step']:.1f} ms/step "
                      f"profiled): {parts}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench_gpu_summary.py RESULTS.jsonl")
    try:
        rows = load(sys.argv[1])
    except (OSError, json.JSONDecodeError) as error:
        sys.exit(f"bench_gpu_summary.py: {sys.argv[1]}: {error}")
    if not rows:
        sys.exit(f"bench_gpu_summary.py: {sys.argv[1]}: no results (every configuration failed?)")
    summarize(rows)


if __name__ == "__main__":
    main()
