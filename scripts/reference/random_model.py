#!/usr/bin/env python3
"""random_model.py — a random Hugging Face model folder of a real model's shape, for the memory and
speed checks of scripts/gpu-check.sh qlora (not a reference of values: the weights are noise).

    python3 scripts/reference/random_model.py OUT_DIR [--shape llama-3.1-8b] [--dtype bf16]

transformers builds the model on the meta device from the shape's config (so the tensor names and
shapes are transformers' own and no memory is spent), then every tensor is drawn on the GPU when
there is one (normal, std 0.02; norms 1) and written with safetensors in shards of at most 5 GB
beside model.safetensors.index.json and config.json, as save_pretrained lays a folder out. No
tokenizer is written: the benchmark feeds random token ids.
"""
import argparse
import json
import os
import sys
import time

# This folder holds a tokenizers.py of its own, which would shadow the tokenizers package that
# transformers imports: leave it off the module path.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import AutoModelForCausalLM, LlamaConfig  # noqa: E402

SHAPES = {
    # meta-llama/Llama-3.1-8B's config.json values.
    "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                         num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                         max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                         rope_scaling={"rope_type": "llama3", "factor": 8.0,
                                       "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                       "original_max_position_embeddings": 8192},
                         tie_word_embeddings=False, bos_token_id=128000, eos_token_id=128001),
}
SHARD_BYTES = 5 * 1000 ** 3
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--shape", default="llama-3.1-8b", choices=sorted(SHAPES))
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    started = time.time()
    config = LlamaConfig(**SHAPES[args.shape])
    config.torch_dtype = dtype
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    os.makedirs(args.out, exist_ok=True)
    config.save_pretrained(args.out)
    generator = torch.Generator(device=device).manual_seed(0)
    shards, current, current_bytes, weight_map = [], {}, 0, {}

    def flush():
        nonlocal current, current_bytes
        if current:
            shards.append(current)
            current, current_bytes = {}, 0

    for name, meta in model.state_dict().items():
        if "norm" in name:
            tensor = torch.ones(meta.shape, dtype=dtype, device=device)
        else:
            tensor = torch.empty(meta.shape, dtype=dtype, device=device)
            tensor.normal_(0.0, 0.02, generator=generator)
        size = tensor.numel() * tensor.element_size()
        if current and current_bytes + size > SHARD_BYTES:
            flush()
        current[name] = tensor.cpu()
        current_bytes += size
    flush()
    total = 0
    for i, shard in enumerate(shards):
        file = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, os.path.join(args.out, file), metadata={"format": "pt"})
        for name, tensor in shard.items():
            weight_map[name] = file
            total += tensor.numel() * tensor.element_size()
    with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    print(f"random_model.py: {args.shape} ({args.dtype}) in {args.out}: {len(weight_map)} tensors, "
          f"{total / 2 ** 30:.2f} GiB in {len(shards)} shards, {time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
