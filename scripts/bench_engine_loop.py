#!/usr/bin/env python3
"""bench_engine_loop.py — the speed of the product's own loop: `lorascope-train engine` driven
over its stdio protocol as the window drives it, on a real Hugging Face-shaped model folder and an
alpaca-style dataset, timed from outside (scripts/gpu-check.sh loop runs it on the GPU machine).

    bench_engine_loop.py OUT_DIR --data FILE --program NAME=LORASCOPE_TRAIN [--program ...]
                         [--kernel-bench BENCH_GPU_TRAIN] [--shape qwen2.5-0.5b|llama-3.2-1b]
                         [--runs 3] [--steps 40] [--warmup 5] [--batch 8] [--seq 512]
                         [--packing [causal|documents]] [--compare OPTION ...]
                         [--torch compile|compile-plain|eager|eager-plain ...] [--device gpu|cpu]
                         [--gpus LIST ...]

1. The model: a random folder of the shape (the config of Qwen/Qwen2.5-0.5B or
   meta-llama/Llama-3.2-1B as scripts/reference/bench_lora_gpu_torch.py builds it, so both sides
   train the same model), built by
   transformers and written with save_pretrained (bf16 safetensors), with the built-in demo
   model's byte-level tokenizer (a one-step CPU demo run writes it into the cache). Speed does not
   depend on the weights' values.
   With --gpus LIST (repeatable, e.g. --gpus 0 --gpus 0,1): each program runs as a user starts a
   run on those GPUs, `lorascope-train train --gpus LIST --json` (the supervisor, one engine per
   GPU, each rank one micro-batch of B x S per step, its events on stdout), and each --torch
   configuration on the same GPUs (torchrun + DistributedDataParallel for several); the summary
   ends with each one's scaling over the first list.
2. Each program (e.g. main's build as "before", this branch's as "after") trains RUNS times, the
   runs interleaved, each in a fresh engine; with --compare OPTION (a boolean run option, e.g.
   group-by-length; repeatable) each program also runs with that option on, as "NAME+OPTION",
   interleaved with the rest: the dataset, B x S, LoRA at the run defaults (r8,
   alpha 16, no dropout: bench_gpu_train's), no checkpoints, no toggles, no snapshots, with
   LORASCOPE_STEP_TIMING=1 (the engine's own breakdown of every step cycle, when it has one).
3. Per run, over the steps after the warm-up:
   - delivered: real tokens (metrics.jsonl `tokens`, padding excluded) over the wall-clock time
     between step completions: the sum of the counted steps' metrics.jsonl `cycle_seconds` (the
     engine's clock from the previous step's completion to this one's, everything between steps
     included); beside it, as a check from outside, the same tokens over the time between the
     step events' arrivals (the first counted step's and the last one's). The engine announces
     a step once the state mirror holds it, so steps arrive in pairs at times (one mirror write
     covers both) and the last ones together at the end: over a few dozen steps the arrival
     window is a step or two off at its ends, a few percent either way. A build whose
     metrics.jsonl has no `cycle_seconds` is timed by the arrivals alone;
   - step cycle: the median `cycle_seconds` (or arrival gap), against the step's own time
     (metrics.jsonl `seconds`, median): their ratio is the overhead of everything between steps;
   - shown: the events' median tokens_per_s (the run's speed since the step cycle is measured;
     a build before that showed the compute's), and the compute's own figure (real tokens over
     `seconds`);
   - real tokens per step and the share of the B x S positions they fill; and the share of the
     positions the steps computed (metrics.jsonl `positions`: each micro-batch padded to its
     longest row) that are real tokens, when the program writes it;
   - the engine's breakdown ("step timing" log lines): the median of each stage in ms;
   - with LORASCOPE_OP_TIMING=1 in the environment, the device time of each op a step ("op
     timing" log lines: every launch bracketed by two events, which slows the host; measure
     throughput without it).
4. With --kernel-bench: bench_gpu_train on the same folder, B x S, every position a real token
   (fully packed random ids), once per run: the kernel-only figure, named as such, and the
   physical limit (the model's FLOPs per token at the vendor GEMM's rate it measures).
5. With --torch IMPL: the PyTorch reference (scripts/reference/bench_lora_gpu_torch.py, every
   position a real token, one process per run) once per run, interleaved; the summary gives
   each program's delivered real tokens/s and peak reserved memory (the highest reserved_bytes
   of its memory events) over PyTorch's.
OUT_DIR gets runs.jsonl (one line per run, with its counted steps' cycles, own times and real
tokens under "steps", the spread behind the medians) and summary.txt: per program the median of
the runs and their spread (min-max); with --keep-events also each run's event log.
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference")
os.environ.setdefault("RECORD_SHAPE", "tiny")  # record_gpu_run's Engine only; no torch import
from record_gpu_run import Engine, demo_model_folder  # noqa: E402

# The shapes are the reference benchmark's (scripts/reference/bench_lora_gpu_torch.py), so the
# loop and PyTorch train the same model.
SHAPES = ("qwen2.5-0.5b", "llama-3.2-1b")
# --torch NAME: the reference's impl names (bench_gpu_train's BENCH_IMPLS) → its --mode, --lora.
TORCH = {"compile": ("compile", "peft"), "compile-plain": ("compile", "plain"),
         "eager": ("eager", "peft"), "eager-plain": ("eager", "plain")}
TIMING = re.compile(r"step timing (\d+): cycle ([\d.]+) ms = step ([\d.]+) ms \(batches ([\d.]+), "
                    r"passes ([\d.]+), clip ([\d.]+), update ([\d.]+)\) \+ between steps "
                    r"(-?[\d.]+) ms \(mirror wait ([\d.]+), evaluation ([\d.]+), metrics "
                    r"([\d.]+), snapshot ([\d.]+), checkpoint ([\d.]+), step begin ([\d.]+), "
                    r"engine ([\d.]+)\)")
# LORASCOPE_OP_TIMING=1 in the environment: the engine's device time per op of each step cycle.
OPS = re.compile(r"op timing (\d+): ([\d.]+) ms in ops, the step ([\d.]+) ms \((.*)\)$")
OP = re.compile(r"(\S+) ([\d.]+)/(\d+)")
STAGES = ["cycle", "step", "batches", "passes", "clip", "update", "between", "mirror wait",
          "evaluation", "metrics", "snapshot", "checkpoint", "step begin", "engine"]


def write_model(folder, shape, demo_model):
    sys.path.insert(0, REFERENCE)
    import bench_lora_gpu_torch as reference  # imports torch: only where a model is made
    import torch
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    with torch.device(device):
        model = reference.SHAPES[shape][1](reference.make_config(shape)).to(torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)
    del model
    for name in os.listdir(demo_model):
        if name.startswith("tokenizer") or name == "special_tokens_map.json":
            shutil.copy(os.path.join(demo_model, name), os.path.join(folder, name))


def median(values):
    return statistics.median(values) if values else float("nan")


def one_run(program, args, model, out_dir, log_path, env, extra_options, gpus=None):
    options = {"steps": args.steps, "batch-size": args.batch, "grad-accum": 1,
               "max-seq-len": args.seq, "checkpoint-every": 0, "device": args.device}
    if args.packing != "off":
        options["packing"] = args.packing
    options.update(extra_options)
    env = dict(env, LORASCOPE_STEP_TIMING="1")
    started = time.monotonic()
    if gpus is None:
        engine = Engine(program, log_path, env)
        engine.send({"type": "start", "config": {"model": model, "data": args.data,
                                                 "out": out_dir, "options": options}})
    else:
        # A group as a user starts one: `train --gpus` under the supervisor, one engine per GPU,
        # each rank one micro-batch of B x S per step.
        del options["device"]
        options.update({"gpus": gpus, "grad-accum": len(gpus.split(","))})
        command = ["train", "--model", model, "--data", args.data, "--out", out_dir, "--json"]
        for name, value in options.items():
            command += [f"--{name}"] if value is True else [f"--{name}", str(value)]
        engine = Engine(program, log_path, env, command)
    end = engine.wait_for(lambda e: e.get("type") == "state" and e["state"] in ("finished",
                                                                                   "failed"),
                          args.timeout)
    engine.proc.stdin.close()
    engine.proc.wait(120)
    wall = time.monotonic() - started
    if not end or end["state"] != "finished":
        errors = [e.get("message") for e in engine.events if e.get("type") == "error"]
        raise SystemExit(f"{program}: the run did not finish ({errors[-3:]})")
    arrived = {e["step"]: e["_wall"] for e in engine.events if e.get("type") == "step"}
    shown = {e["step"]: e["tokens_per_s"] for e in engine.events if e.get("type") == "step"}
    with open(os.path.join(out_dir, "metrics.jsonl")) as f:
        metrics = {m["step"]: m for m in map(json.loads, filter(str.strip, f))}
    first, last = args.warmup, args.steps
    counted = range(first + 1, last + 1)
    gaps = [1000 * (arrived[k] - arrived[k - 1]) for k in counted]
    own = [1000 * metrics[k]["seconds"] for k in counted]
    reserved = [e["reserved_bytes"] for e in engine.events
                if e.get("type") == "memory" and e.get("reserved_bytes") is not None]
    tokens = [metrics[k]["tokens"] for k in counted]
    cycles = [metrics[k].get("cycle_seconds") for k in counted]
    completions = None not in cycles
    arrivals = sum(tokens) / (arrived[last] - arrived[first])
    cycle_ms = [1000 * c for c in cycles] if completions else gaps
    positions = [metrics[k].get("positions", 0) for k in counted]
    stages = {name: [] for name in STAGES}
    for e in engine.events:
        match = e.get("type") == "log" and TIMING.search(e.get("text", ""))
        if match and int(match.group(1)) in counted:
            for name, value in zip(STAGES, match.groups()[1:]):
                stages[name].append(float(value))
    ops = {}
    for e in engine.events:
        match = e.get("type") == "log" and OPS.search(e.get("text", ""))
        if match and int(match.group(1)) in counted:
            ops.setdefault("(all ops)", []).append(float(match.group(2)))
            for name, ms, _ in OP.findall(match.group(4)):
                ops.setdefault(name, []).append(float(ms))
    return {
        "ops_ms": {name: median(v) for name, v in ops.items()},
        "delivered_tokens_per_s": sum(tokens) / sum(cycles) if completions else arrivals,
        "arrivals_tokens_per_s": arrivals,
        "step_cycle_ms": median(cycle_ms),
        "step_own_ms": median(own),
        "cycle_over_own": median(cycle_ms) / median(own),
        "shown_tokens_per_s": median([shown[k] for k in counted]),
        "compute_tokens_per_s": median([t / (s / 1000) for t, s in zip(tokens, own)]),
        "real_tokens_per_step": median(tokens),
        "fill": median(tokens) / (args.batch * args.seq * (len(gpus.split(",")) if gpus else 1)),
        "computed_fill": sum(tokens) / sum(positions) if all(positions) else None,
        "stages_ms": {name: median(v) for name, v in stages.items() if v},
        "peak_reserved_gib": max(reserved) / 1024 ** 3 if reserved else None,
        "run_wall_s": wall,
        "steps": {"cycle_ms": cycle_ms, "arrival_gaps_ms": gaps, "own_ms": own,
                  "tokens": tokens},
    }


def kernel_only(bench, args, model, json_path):
    subprocess.run([bench, "--model", model, "--batch", str(args.batch), "--seq", str(args.seq),
                    "--warmup", "3", "--steps", "20", "--profile-steps", "0", "--json", json_path,
                    "--label", "kernel-only"], check=True, stdout=subprocess.DEVNULL)
    with open(json_path) as f:
        result = json.loads(f.read().strip().splitlines()[-1])
    ceiling, flops = result.get("gemm_ceiling_tflops"), result.get("flops_per_token")
    # The physical limit as bench_gpu_summary.py computes it: FLOPs per token at the vendor
    # GEMM's rate measured on this card.
    return {"tokens_per_s": result["tokens_per_s"],
            "limit_tokens_per_s": ceiling * 1e12 / flops if ceiling and flops else None}


def torch_reference(name, args, json_path, gpus=None):
    mode, lora = TORCH[name]
    command = [sys.executable, os.path.join(REFERENCE, "bench_lora_gpu_torch.py"), "--shape",
               args.shape, "--mode", mode, "--lora", lora, "--batch", str(args.batch), "--seq",
               str(args.seq), "--json", json_path]
    env = None
    if gpus is not None:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=gpus)
        if "," in gpus:  # torchrun + DistributedDataParallel, one process per GPU, B x S each
            command[1:1] = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
                            str(len(gpus.split(",")))]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    with open(json_path) as f:
        result = json.loads(f.read().strip().splitlines()[-1])
    return {"tokens_per_s": result["tokens_per_s"],
            "peak_reserved_gib": result["peak_reserved_gib"]}


def spread(values):
    return f"{min(values):.0f}-{max(values):.0f}" if values else "n/a"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("--data", required=True)
    parser.add_argument("--program", action="append", required=True, help="NAME=LORASCOPE_TRAIN")
    parser.add_argument("--kernel-bench")
    parser.add_argument("--shape", default="qwen2.5-0.5b", choices=SHAPES)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    # --packing alone is causal packing, as lorascope-train's own flag
    parser.add_argument("--packing", nargs="?", const="causal", default="off",
                        choices=("off", "causal", "documents"))
    parser.add_argument("--compare", action="append", default=[], metavar="OPTION",
                        help="also run each program with this boolean run option on")
    parser.add_argument("--torch", action="append", default=[], choices=sorted(TORCH),
                        help="also run scripts/reference/bench_lora_gpu_torch.py on the shape "
                             "(every position a real token), interleaved")
    parser.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    parser.add_argument("--gpus", action="append", default=[], metavar="LIST",
                        help="run each program as `train --gpus LIST --json` (one engine per "
                             "GPU, B x S per GPU) and each --torch on the same GPUs (torchrun + "
                             "DDP for several); repeatable, e.g. --gpus 0 --gpus 0,1")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--model", help="an existing model folder instead of a random one")
    parser.add_argument("--keep-events", action="store_true", help="each run's events to OUT_DIR")
    args = parser.parse_args()
    programs = [p.split("=", 1) for p in args.program]
    # (label, program, extra options, GPUs): each program plain, then with each compared option
    # on; with --gpus, each of those on each GPU list, through `train --gpus`.
    configurations = [(name, program, {}) for name, program in programs] + [
        (f"{name}+{option}", program, {option: True})
        for name, program in programs for option in args.compare]
    configurations = ([(label, program, extra, None) for label, program, extra in configurations]
                      if not args.gpus else
                      [(f"{label}@{gpus}", program, extra, gpus)
                       for label, program, extra in configurations for gpus in args.gpus])
    torch_runs = ([(f"torch-{name}", name, None) for name in args.torch] if not args.gpus else
                  [(f"torch-{name}@{gpus}", name, gpus) for name in args.torch
                   for gpus in args.gpus])
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="lorascope-loop-")
    env = dict(os.environ, LORASCOPE_CACHE_DIR=os.path.join(work, "cache"))
    model = args.model
    if not model:
        model = os.path.join(work, f"{args.shape}-random")
        write_model(model, args.shape, demo_model_folder(programs[0][1], work, env))
    device = args.device
    if shutil.which("nvidia-smi"):
        device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.split("\n")[0].strip() or device
        gpu_count = len(subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                       text=True).stdout.strip().splitlines())
        device = f"{gpu_count} x {device}" if gpu_count > 1 else device
    results = []
    with open(os.path.join(args.out, "runs.jsonl"), "w") as lines:
        for run in range(args.runs):
            for name, program, extra, gpus in configurations:
                label = f"{name.replace('@', '-gpus-').replace(',', '-')}-{run + 1}"
                result = one_run(program, args, model, os.path.join(work, f"run-{label}"),
                                 os.path.join(args.out if args.keep_events else work,
                                              f"events-{label}.jsonl"), env, extra, gpus)
                result.update(program=name, run=run + 1)
                results.append(result)
                lines.write(json.dumps(result) + "\n")
                lines.flush()
            if args.kernel_bench:
                result = dict(kernel_only(args.kernel_bench, args, model,
                                          os.path.join(args.out, "kernel.jsonl")),
                              program="kernel-only", run=run + 1)
                results.append(result)
                lines.write(json.dumps(result) + "\n")
            for label, name, gpus in torch_runs:
                result = dict(torch_reference(name, args, os.path.join(args.out, "torch.jsonl"),
                                              gpus),
                              program=label, run=run + 1)
                results.append(result)
                lines.write(json.dumps(result) + "\n")
                lines.flush()
    model_text = (f"{args.shape} (random, saved by transformers)" if not args.model else
                  os.path.basename(os.path.normpath(args.model)))
    packed = "" if args.packing == "off" else f" packed ({args.packing})"
    loop = ("`lorascope-train engine` over stdio" if not args.gpus else
            "`lorascope-train train --json --gpus LIST` (one engine per GPU under the supervisor, "
            "B x S per GPU)")
    summary = [f"The product's loop: {loop}, {model_text}, "
               f"{os.path.basename(args.data)}, B{args.batch} x "
               f"S{args.seq}{packed}, steps {args.warmup + 1}-"
               f"{args.steps} of {args.steps}, {args.runs} runs each, interleaved, on {device}.",
               "Medians of the runs (spread min-max):"]
    for name, _, _, _ in configurations:
        runs = [r for r in results if r["program"] == name]
        field = lambda key: [r[key] for r in runs]  # noqa: E731
        summary.append(
            f"  {name}: delivered {median(field('delivered_tokens_per_s')):.0f} real tokens/s "
            f"({spread(field('delivered_tokens_per_s'))}; by the events' arrivals "
            f"{median(field('arrivals_tokens_per_s')):.0f}); step cycle "
            f"{median(field('step_cycle_ms')):.1f} ms vs the step's own time "
            f"{median(field('step_own_ms')):.1f} ms = {median(field('cycle_over_own')):.3f}x "
            f"({min(field('cycle_over_own')):.3f}-{max(field('cycle_over_own')):.3f}); shown "
            f"{median(field('shown_tokens_per_s')):.0f} tokens/s; compute only "
            f"{median(field('compute_tokens_per_s')):.0f} tokens/s; "
            f"{median(field('real_tokens_per_step')):.0f} real tokens per step "
            f"({100 * median(field('fill')):.0f}% of the positions)"
            + ("" if None in field("computed_fill") else
               f"; {100 * median(field('computed_fill')):.1f}% of the positions computed are real "
               f"tokens")
            + ("" if None in field("peak_reserved_gib") else
               f"; peak reserved {max(field('peak_reserved_gib')):.2f} GiB (memory events)"))
        stages = {}
        for r in runs:
            for stage, value in r["stages_ms"].items():
                stages.setdefault(stage, []).append(value)
        if stages:
            summary.append("    engine breakdown, ms (median of the runs' medians): " + ", ".join(
                f"{stage} {median(v):.2f}" for stage, v in stages.items()))
        ops = {}
        for r in runs:
            for op, value in r.get("ops_ms", {}).items():
                ops.setdefault(op, []).append(value)
        if ops:
            summary.append("    device time per op (LORASCOPE_OP_TIMING), ms a step (median of the "
                           "runs' medians): " + ", ".join(
                               f"{op} {median(v):.2f}" for op, v in
                               sorted(ops.items(), key=lambda item: -median(item[1]))))
    kernel = [r for r in results if r["program"] == "kernel-only"]
    if kernel:
        tokens = [r["tokens_per_s"] for r in kernel]
        summary.append(f"  kernel-only (bench_gpu_train --model, every position a real token, "
                       f"each step between two device syncs): {median(tokens):.0f} tokens/s "
                       f"({spread(tokens)})")
    limits = [r["limit_tokens_per_s"] for r in kernel if r.get("limit_tokens_per_s")]
    for torch_label, name, gpus in torch_runs:
        runs = [r for r in results if r["program"] == torch_label]
        tokens = median([r["tokens_per_s"] for r in runs])
        reserved = max(r["peak_reserved_gib"] for r in runs)
        summary.append(f"  PyTorch {torch_label[6:]} (scripts/reference/bench_lora_gpu_torch.py"
                       + (", torchrun + DDP" if gpus and "," in gpus else "") +
                       f", every position a real token): {tokens:.0f} tokens/s "
                       f"({spread([r['tokens_per_s'] for r in runs])}); peak reserved "
                       f"{reserved:.2f} GiB")
        for label, _, _, our_gpus in configurations:
            if our_gpus != gpus:
                continue
            ours = [r for r in results if r["program"] == label]
            delivered = median([r["delivered_tokens_per_s"] for r in ours])
            peaks = [r["peak_reserved_gib"] for r in ours if r["peak_reserved_gib"] is not None]
            summary.append(f"    {label} delivered / PyTorch {torch_label[6:]}: "
                           f"{delivered / tokens:.2f}x"
                           + (f"; reserved {max(peaks) / reserved:.2f}x" if peaks else ""))
    if limits:
        summary.append(f"  physical limit (FLOPs per token at the vendor GEMM's measured rate): "
                       f"{median(limits):.0f} tokens/s; " + "; ".join(
                           f"{label} delivers "
                           f"{100 * median([r['delivered_tokens_per_s'] for r in results if r['program'] == label]) / median(limits):.1f}%"
                           for label, _, _, _ in configurations))
    if len(args.gpus) > 1:
        # The scaling: each configuration's figure on each GPU list over its figure on the first.
        summary.append(f"  scaling over GPUs {args.gpus[0]} (medians):")
        groups = {}
        for label, _, _, gpus in configurations:
            groups.setdefault(label.rsplit("@", 1)[0], {})[gpus] = median(
                [r["delivered_tokens_per_s"] for r in results if r["program"] == label])
        for torch_label, _, gpus in torch_runs:
            groups.setdefault(torch_label.rsplit("@", 1)[0], {})[gpus] = median(
                [r["tokens_per_s"] for r in results if r["program"] == torch_label])
        for name, by_gpus in groups.items():
            base = by_gpus[args.gpus[0]]
            summary.append(f"    {name}: " + "; ".join(
                f"GPUs {gpus} {tokens:.0f} tokens/s = {tokens / base:.2f}x"
                for gpus, tokens in by_gpus.items()))
    text = "\n".join(summary)
    print(text)
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(text + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
