#!/usr/bin/env python3
"""bench_lora_torch.py — the PyTorch side of tests/train/bench_train_step.cpp: tokens/s of one LoRA
optimizer step (forward + backward + clip + AdamW), fp32 on the CPU, for the same tiny Llama
(hidden 256, 4 layers, 4 heads, 2 KV heads, intermediate 688, vocab 2000, tied) at batch 4 x seq
256, LoRA r8 (alpha 16) on q,k,v,o,gate,up,down, frozen base weights, default (sdpa) attention.

    python3 scripts/reference/bench_lora_torch.py [THREADS ...]   (default: 1 and all cores)
"""
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

RANK, ALPHA, BATCH, SEQ, STEPS = 8, 16.0, 4, 256, 3
MODULES = [("self_attn", "q_proj"), ("self_attn", "k_proj"), ("self_attn", "v_proj"),
           ("self_attn", "o_proj"), ("mlp", "gate_proj"), ("mlp", "up_proj"), ("mlp", "down_proj")]


def build():
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=2000, hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                      max_position_embeddings=512)
    model = LlamaForCausalLM(cfg).float()  # transformers' default attention (sdpa)
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


def main():
    threads = [int(t) for t in sys.argv[1:]] or [1, os.cpu_count()]
    model, params = build()
    opt = torch.optim.AdamW(params, lr=2e-4)
    ids = torch.randint(0, 2000, (BATCH, SEQ))
    print(f"torch {torch.__version__}: tiny llama B{BATCH} x S{SEQ}, LoRA r{RANK} x 7, fp32 cpu")
    for n in threads:
        torch.set_num_threads(n)
        times = []
        for step in range(STEPS + 1):
            start = time.perf_counter()
            opt.zero_grad()
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            if step > 0:  # the first step warms up
                times.append(time.perf_counter() - start)
        seconds = sum(times) / len(times)
        print(f"threads {n:3d}: {BATCH * SEQ / seconds:10.0f} tokens/s  {seconds:.3f} s/step")


if __name__ == "__main__":
    main()
