#!/usr/bin/env python3
"""bench_lora_torch.py — the PyTorch side of `lorascope-train bench`: tokens/s and peak RSS of one
LoRA optimizer step (forward + backward + clip + AdamW), fp32 on the CPU, frozen base weights,
LoRA r8 (alpha 16) on q,k,v,o,gate,up,down, transformers' default (sdpa) attention, for
  tiny  Llama, hidden 256, 4 layers, 4 heads, 2 KV heads, intermediate 688, vocab 2000, tied,
        batch 4 x seq 256
  qwen  Qwen2.5-0.5B-shaped, hidden 896, 24 layers, 14 heads, 2 KV heads, intermediate 4864,
        vocab 151936, tied, batch 1 x seq 256

    python3 scripts/reference/bench_lora_torch.py [--model tiny|qwen|all] [--threads 1,2,16]
                                                  [--steps N]

Peak RSS is the process's, so it covers every model run so far: run one model per process for
each model's own figure (as the C++ bench).
"""
import argparse
import os
import resource
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM  # noqa: E402

RANK, ALPHA = 8, 16.0
MODULES = [("self_attn", "q_proj"), ("self_attn", "k_proj"), ("self_attn", "v_proj"),
           ("self_attn", "o_proj"), ("mlp", "gate_proj"), ("mlp", "up_proj"), ("mlp", "down_proj")]


def shapes():
    tiny = LlamaConfig(vocab_size=2000, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                       max_position_embeddings=512)
    qwen = Qwen2Config(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                       num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                       tie_word_embeddings=True, max_position_embeddings=32768,
                       rope_theta=1000000.0, rms_norm_eps=1e-6)
    return {"tiny": ("tiny llama (H256 L4 heads4 kv2 I688 V2000 tied)", LlamaForCausalLM, tiny, 4),
            "qwen": ("qwen2.5-0.5B shape (H896 L24 heads14 kv2 I4864 V151936 tied)",
                     Qwen2ForCausalLM, qwen, 1)}


def build(model_class, cfg):
    torch.manual_seed(0)
    model = model_class(cfg).float()  # transformers' default attention (sdpa)
    for p in model.parameters():
        p.requires_grad_(False)
    params = []
    for decoder in model.model.layers:
        for block, name in MODULES:
            lin = getattr(getattr(decoder, block), name)
            a = torch.nn.Parameter(torch.empty(RANK, lin.in_features).uniform_(-0.05, 0.05))
            b = torch.nn.Parameter(torch.zeros(lin.out_features, RANK))
            params += [a, b]

            def hook(module, inputs, output, a=a, b=b):
                return output + (ALPHA / RANK) * F.linear(F.linear(inputs[0], a), b)

            lin.register_forward_hook(hook)
    return model, params


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def bench(name, model_class, cfg, batch, threads, steps, seq=256):
    model, params = build(model_class, cfg)
    opt = torch.optim.AdamW(params, lr=2e-4)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq))
    print(f"torch {torch.__version__}: {name}, B{batch} x S{seq}, LoRA r{RANK} x 7, fp32 cpu")
    print(f"{'threads':>8} {'tokens/s':>12} {'s/step':>12} {'peak RSS MiB':>14}")
    for n in threads:
        torch.set_num_threads(n)
        times = []
        for step in range(steps + 1):
            start = time.perf_counter()
            opt.zero_grad()
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            if step > 0:  # the first step warms up
                times.append(time.perf_counter() - start)
        seconds = sum(times) / len(times)
        print(f"{n:8d} {batch * seq / seconds:12.0f} {seconds:12.3f} {peak_rss_mib():14.0f}",
              flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["tiny", "qwen", "all"], default="all")
    parser.add_argument("--threads", default=f"1,{os.cpu_count()}")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    for key, (name, model_class, cfg, batch) in shapes().items():
        if args.model in (key, "all"):
            bench(name, model_class, cfg, batch, threads, args.steps)


if __name__ == "__main__":
    main()
