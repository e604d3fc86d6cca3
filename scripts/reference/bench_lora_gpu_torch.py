#!/usr/bin/env python3
"""bench_lora_gpu_torch.py — the PyTorch side of LoRAscope's GPU training benchmark
(tests/bench/bench_gpu_train.cpp): tokens/s and peak device memory of LoRA optimizer steps on a
random model of a real model's shape, built from a config (nothing is downloaded).

    python3 scripts/reference/bench_lora_gpu_torch.py --shape qwen2.5-0.5b --mode eager \
        [--lora peft|plain] [--warmup 3] [--steps 20] [--batch 8] [--seq 512] \
        [--json results.jsonl]
    python3 -m torch.distributed.run --standalone --nproc-per-node 2 \
        scripts/reference/bench_lora_gpu_torch.py --shape ... (the same options)

Same work per step as LoRAscope's TrainLoop: bf16 frozen weights, PEFT LoRA r8 alpha 16 (no
dropout, fp32 adapter weights) on q,k,v,o,gate,up,down of every layer, bf16 autocast, SDPA
attention, the next-token loss over every position of B x S random tokens, global-norm clipping
at 1.0, fused AdamW (lr 2e-4). No activation checkpointing. --mode compile wraps the model in
torch.compile; its compilation happens in the warm-up steps, which are timed apart.

--lora peft (impl torch-MODE) is PEFT as it comes: every LoRA layer first casts its input to the
adapter's fp32 (an fp32 copy of each adapted projection's input, forward and backward).
--lora plain (impl torch-MODE-plain) turns those casts off (cast_input_dtype_enabled = False on
every PEFT tuner layer, what peft.helpers.disable_input_dtype_casting does), so the LoRA products
run in bf16 under autocast like the frozen ones: the plain-LoRA twin of LoRAscope's step.

Timing: the device is synchronised after every step and each step timed alone; tokens/s is
B x S over the median step (s_per_step), with the mean and the slowest step beside it, so one
stall (a recompilation, an allocator flush) does not decide the number.

Data parallel: started by torchrun (WORLD_SIZE > 1 in the environment), every process is a rank
on cuda:LOCAL_RANK (NCCL), the model wrapped in PyTorch's DistributedDataParallel (its default
buckets, the gradients all-reduced during the backward; with --mode compile the DDP model is
compiled, as PyTorch advises), each rank its own B x S batches, B per GPU. tokens/s is the
group's: WORLD_SIZE x B x S over rank 0's median step; rank 0 alone prints and writes --json
("gpus": WORLD_SIZE).

Memory: torch.cuda.max_memory_allocated / max_memory_reserved from the end of model building
on (the bf16 weights included), and the driver's reading (total − free from
cudaMemGetInfo, so the CUDA context and library workspaces too) after the last step. One
configuration per process, so every peak belongs to one configuration alone. --json appends one
JSON line per run.
"""
import argparse
import json
import os
import statistics
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import peft  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM  # noqa: E402

RANK, ALPHA, LR, MAX_GRAD_NORM = 8, 16, 2e-4, 1.0
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
GIB = 1024 ** 3

# The shapes of Qwen2.5-0.5B and Llama-3.2-1B (their config.json values that matter for speed;
# the rope values only for fidelity).
SHAPES = {
    "qwen2.5-0.5b": (Qwen2Config, Qwen2ForCausalLM, dict(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, head_dim=64, rms_norm_eps=1e-6,
        max_position_embeddings=32768, tie_word_embeddings=True, use_sliding_window=False),
        {"rope_type": "default", "rope_theta": 1000000.0}),
    "llama-3.2-1b": (LlamaConfig, LlamaForCausalLM, dict(
        vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, rms_norm_eps=1e-5,
        max_position_embeddings=131072, tie_word_embeddings=True, attention_bias=False,
        mlp_bias=False),
        {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
}


def make_config(shape):
    config_class, _, kwargs, rope = SHAPES[shape]
    # transformers 5 reads rope_parameters; 4.x reads rope_theta / rope_scaling.
    if int(transformers.__version__.split(".")[0]) >= 5:
        return config_class(**kwargs, rope_parameters=dict(rope))
    legacy = {k: v for k, v in rope.items() if k != "rope_theta"}
    scaling = legacy if legacy["rope_type"] != "default" else None
    return config_class(**kwargs, rope_theta=rope["rope_theta"], rope_scaling=scaling)


def build(shape, plain):
    torch.manual_seed(0)
    model_class = SHAPES[shape][1]
    with torch.device("cuda"):
        model = model_class(make_config(shape)).to(torch.bfloat16)  # initialised in fp32
    model.config._attn_implementation = "sdpa"
    lora = peft.LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0, target_modules=TARGETS,
                           bias="none", task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, lora)  # adapter weights fp32 (autocast_adapter_dtype)
    if plain:
        from peft.tuners.tuners_utils import BaseTunerLayer
        layers = [m for m in model.modules() if isinstance(m, BaseTunerLayer)]
        if not layers or not all(hasattr(m, "cast_input_dtype_enabled") for m in layers):
            sys.exit(f"bench_lora_gpu_torch: peft {peft.__version__} has no per-layer "
                     "cast_input_dtype_enabled switch; --lora plain needs peft >= 0.15")
        for m in layers:
            m.cast_input_dtype_enabled = False
    model.train()
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), required=True)
    parser.add_argument("--mode", choices=["eager", "compile"], default="eager")
    parser.add_argument("--lora", choices=["peft", "plain"], default="peft",
                        help="plain: PEFT's per-layer input casts to fp32 turned off")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--json", help="append one JSON line with the results to this file")
    args = parser.parse_args()
    if args.steps < 1 or args.warmup < 1:
        parser.error("--steps and --warmup must be at least 1")
    if not torch.cuda.is_available():
        sys.exit("bench_lora_gpu_torch: no CUDA device visible to PyTorch")
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        torch.distributed.init_process_group("nccl")

    model = build(args.shape, args.lora == "plain")
    # The fp32 initialisation is not part of training: drop its cache, then count from here on
    # (the live bf16 weights stay in the peaks).
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    params = [p for p in model.parameters() if p.requires_grad]
    lora_params = sum(p.numel() for p in params)
    optimizer = torch.optim.AdamW(params, lr=LR, fused=True)
    vocab, attention = model.config.vocab_size, model.config._attn_implementation
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[torch.cuda.current_device()])
    forward = torch.compile(model) if args.mode == "compile" else model
    gen = torch.Generator(device="cuda").manual_seed(1 + rank)
    # A few distinct batches, made before timing; every step has the same shape.
    batches = [torch.randint(0, vocab, (args.batch, args.seq), device="cuda", generator=gen)
               for _ in range(4)]

    def step(i):
        ids = batches[i % len(batches)]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = forward(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, MAX_GRAD_NORM)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(args.warmup):
        step(i)
    torch.cuda.synchronize()
    warmup_s = time.perf_counter() - start

    step_s = []
    for i in range(args.steps):
        start = time.perf_counter()
        loss = step(args.warmup + i)
        torch.cuda.synchronize()
        step_s.append(time.perf_counter() - start)
    median_s = statistics.median(step_s)

    free_bytes, total_bytes = torch.cuda.mem_get_info()
    tokens_per_step = world * args.batch * args.seq
    if world > 1:
        torch.distributed.destroy_process_group()
        if rank != 0:
            return
    result = {
        "program": "bench_lora_gpu_torch.py",
        "impl": f"torch-{args.mode}" + ("-plain" if args.lora == "plain" else ""),
        "shape": args.shape,
        "gpu": torch.cuda.get_device_name(),
        "gpus": world,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "attention": attention,
        "batch": args.batch,
        "seq": args.seq,
        "warmup_steps": args.warmup,
        "timed_steps": args.steps,
        "warmup_s": round(warmup_s, 3),
        "rank": RANK,
        "alpha": ALPHA,
        "targets": TARGETS,
        "checkpointing": False,
        "s_per_step": median_s,
        "mean_s_per_step": statistics.fmean(step_s),
        "max_s_per_step": max(step_s),
        "tokens_per_s": tokens_per_step / median_s,
        "last_loss": float(loss.detach()),
        "lora_params": lora_params,
        "peak_allocated_gib": torch.cuda.max_memory_allocated() / GIB,
        "peak_reserved_gib": torch.cuda.max_memory_reserved() / GIB,
        "driver_used_gib": (total_bytes - free_bytes) / GIB,
    }
    print(f"{args.shape} {result['impl']}: {result['tokens_per_s']:.0f} tokens/s, "
          f"{result['s_per_step'] * 1000:.1f} ms/step median (mean "
          f"{result['mean_s_per_step'] * 1000:.1f}, max {result['max_s_per_step'] * 1000:.1f}), loss {result['last_loss']:.3f}, "
          f"peak allocated {result['peak_allocated_gib']:.2f} GiB, reserved "
          f"{result['peak_reserved_gib']:.2f} GiB, driver {result['driver_used_gib']:.2f} GiB "
          f"(warm-up {warmup_s:.1f} s, {world} x {result['gpu']})", flush=True)
    if args.json:
        with open(args.json, "a", encoding="utf-8") as f:
            f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
