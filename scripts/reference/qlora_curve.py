#!/usr/bin/env python3
"""qlora_curve.py — the QLoRA (NF4 base) reference that `--quantize nf4` training is held to.

bitsandbytes is not installed on the GPU machine (scripts/gpu-check.sh qlora records its
`pip show`), so this is the issue's fallback: a committed NF4 reference made in PyTorch from
QLoRA's published code tables. The NF4 double quantisation is scripts/reference/nf4.py's (the
NF4 table, bitsandbytes' signed dynamic 8-bit map, blocks of 64, absmax offsets in groups of
256), imported from there; everything else is written here in plain torch, without transformers,
so that it runs where only Debian's python3-torch is installed:

- the model: tests/model/data/llama_f32_legacy_rope (a tiny Llama with llama3 RoPE scaling and
  grouped-query attention), read from its safetensors file by the small reader below;
- the frozen base: the seven projections of every layer (q, k, v, o, gate, up, down) quantised
  to NF4 from their stored f32 values and dequantised (f32, as bitsandbytes dequantize_4bit);
  embedding, norms and lm_head as stored — what backend/model/DeviceWeights.cpp places;
- the adapter, data and loop: the same as scripts/reference/lora_training.py's for that fixture
  (tests/train/data/llama_f32_legacy_rope: the seeded initial adapter lora_init.safetensors,
  r 4, alpha 8, dropout 0; the training examples and 20 AdamW steps of its reference.json).

It writes tests/train/data/qlora_llama_f32/reference.json with:
  losses_nf4_float64        the loss of each step, float64 compute on the f32 dequantised base
                            (the CPU trainer's numbers: it dequantises NF4 to f32)
  losses_nf4_bf16_weights   the same with every base weight rounded to bf16 as a GPU holds it
                            (the NF4 dequantised to bf16, the other weights stored f32 → bf16)
  losses_unquantized_float64  the same loop on the stored weights; must equal the transformers
                            run of lora_training.py (its losses_float64) — the check that this
                            hand-written forward is transformers' Llama; the difference to the
                            NF4 curve is what quantisation does to the curve
  dequantized_sum_of_squares  Σ w² of each dequantised projection (float64): both sides
                            quantised the same weights the same way
  generate                  greedy decoding (argmax of a full forward per step) of a fixed
                            prompt on the NF4 base alone and with the initial adapter: the ids,
                            the top-1/top-2 margins and the first step's logits, for
                            `lorascope-train generate --quantize nf4`

Run (CPU, no network; torch ≥ 1.13):
    python3 scripts/reference/qlora_curve.py [OUT]
"""
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import nf4  # noqa: E402  (scripts/reference/nf4.py: the tables and the quantiser)

ROOT = os.path.join(HERE, "..", "..")
FIXTURE = "llama_f32_legacy_rope"
MODEL_DIR = os.path.join(ROOT, "tests", "model", "data", FIXTURE)
TRAIN_DIR = os.path.join(ROOT, "tests", "train", "data", FIXTURE)
DEFAULT_OUT = os.path.join(ROOT, "tests", "train", "data", "qlora_llama_f32", "reference.json")
PROJECTIONS = [("self_attn", "q_proj"), ("self_attn", "k_proj"), ("self_attn", "v_proj"),
               ("self_attn", "o_proj"), ("mlp", "gate_proj"), ("mlp", "up_proj"),
               ("mlp", "down_proj")]
PROMPT = [1, 17, 42, 99, 5, 230, 64, 7]  # scripts/reference/generate.py's prompt
NEW_TOKENS = 12
DTYPES = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16,
          "F16": torch.float16}


def read_safetensors(path):
    """{name: tensor} of a .safetensors file (8-byte header size, JSON header, raw data)."""
    with open(path, "rb") as f:
        blob = f.read()
    size = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + size])
    data = blob[8 + size:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype) if end > begin else \
            torch.zeros(0, dtype=dtype)
        out[name] = t.reshape(entry["shape"]).clone()
    return out


def quantize_projection(w):
    """NF4 with double quantisation (nf4.py), dequantised: f32 values of w's shape."""
    state = nf4.quantize(w.reshape(-1).float(), torch.tensor(nf4.NF4, dtype=torch.float32),
                         nf4.dynamic_map())
    return state["dequant"].reshape(w.shape)


def bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)


def rope_inv_freq(cfg):
    """transformers' default inverse frequencies with llama3 scaling, computed in f32 as there."""
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    base = cfg["rope_theta"]
    inv = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    scaling = cfg.get("rope_scaling") or {}
    if scaling.get("rope_type") == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv = torch.where(medium, smoothed, scaled)
    elif scaling:
        raise SystemExit(f"qlora_curve.py: rope_scaling {scaling} is not written here")
    return inv


class Llama:
    """A Llama forward in plain torch: RMSNorm, RoPE, grouped-query causal attention, SwiGLU,
    with y = x·Wᵀ + scale·(x·Aᵀ)·Bᵀ on every projection that has an adapter."""

    def __init__(self, cfg, weights, dtype):
        self.cfg = cfg
        self.dtype = dtype
        self.w = {k: v.to(dtype) for k, v in weights.items()}
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg["num_key_value_heads"]
        self.head_dim = cfg.get("head_dim") or cfg["hidden_size"] // self.heads
        self.eps = cfg["rms_norm_eps"]
        self.inv_freq = rope_inv_freq(cfg)

    def norm(self, x, weight):
        variance = x.pow(2).mean(-1, keepdim=True)
        return weight * (x * torch.rsqrt(variance + self.eps))

    def rope(self, x, positions):
        freqs = positions.float()[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(self.dtype), emb.sin().to(self.dtype)
        half = x.shape[-1] // 2
        rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rotated * sin

    def linear(self, x, layer, block, name, adapter, scale):
        y = x @ self.w[f"model.layers.{layer}.{block}.{name}.weight"].T
        if adapter is not None:
            a = adapter[peft_key(layer, block, name, "A")]
            b = adapter[peft_key(layer, block, name, "B")]
            y = y + scale * ((x @ a.T) @ b.T)
        return y

    def logits(self, ids, adapter=None, scale=0.0):
        """ids: (T,) → (T, vocab)."""
        w = self.w
        t = ids.shape[0]
        x = w["model.embed_tokens.weight"][ids]
        positions = torch.arange(t)
        mask = torch.full((t, t), float("-inf"), dtype=self.dtype).triu(1)
        group = self.heads // self.kv_heads
        for layer in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{layer}."
            h = self.norm(x, w[p + "input_layernorm.weight"])
            q = self.linear(h, layer, "self_attn", "q_proj", adapter, scale)
            k = self.linear(h, layer, "self_attn", "k_proj", adapter, scale)
            v = self.linear(h, layer, "self_attn", "v_proj", adapter, scale)
            q = self.rope(q.view(t, self.heads, self.head_dim).transpose(0, 1), positions)
            k = self.rope(k.view(t, self.kv_heads, self.head_dim).transpose(0, 1), positions)
            v = v.view(t, self.kv_heads, self.head_dim).transpose(0, 1)
            k = k.repeat_interleave(group, dim=0)
            v = v.repeat_interleave(group, dim=0)
            scores = (q @ k.transpose(1, 2)) / math.sqrt(self.head_dim) + mask
            attn = torch.softmax(scores, dim=-1) @ v
            attn = attn.transpose(0, 1).reshape(t, self.heads * self.head_dim)
            x = x + self.linear(attn, layer, "self_attn", "o_proj", adapter, scale)
            h = self.norm(x, w[p + "post_attention_layernorm.weight"])
            gate = self.linear(h, layer, "mlp", "gate_proj", adapter, scale)
            up = self.linear(h, layer, "mlp", "up_proj", adapter, scale)
            x = x + self.linear(F.silu(gate) * up, layer, "mlp", "down_proj", adapter, scale)
        x = self.norm(x, w["model.norm.weight"])
        return x @ w["lm_head.weight"].T


def peft_key(layer, block, name, which):
    return f"base_model.model.model.layers.{layer}.{block}.{name}.lora_{which}.weight"


def lr_factor(step, warmup, steps):
    """transformers' get_linear_schedule_with_warmup."""
    if step < warmup:
        return step / max(1, warmup)
    return max(0.0, (steps - step) / max(1, steps - warmup))


def train(model, init, settings, scale):
    """lora_training.py's loop: per step the next examples in order, loss = Σ CE / tokens,
    clip_grad_norm_, AdamW, linear schedule with warm-up."""
    params = {k: torch.nn.Parameter(v.to(model.dtype).clone()) for k, v in init.items()}
    opt = torch.optim.AdamW(list(params.values()), lr=settings["lr"],
                            betas=tuple(settings["betas"]), eps=settings["eps"],
                            weight_decay=settings["weight_decay"])
    steps, warmup = settings["steps"], settings["warmup_steps"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, warmup, steps))
    examples, per_step = settings["examples"], settings["examples_per_step"]
    losses, grad_norms = [], []
    for step in range(steps):
        first = (step * per_step) % len(examples)
        batch = [examples[(first + i) % len(examples)] for i in range(per_step)]
        opt.zero_grad()
        total, count = [], 0
        for e in batch:
            logits = model.logits(torch.tensor(e["ids"]), params, scale)
            labels = torch.tensor(e["labels"])[1:]
            total.append(F.cross_entropy(logits[:-1], labels, ignore_index=-100, reduction="sum"))
            count += int((labels != -100).sum())
        loss = torch.stack(total).sum() / count
        loss.backward()
        grad_norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()),
                                                               settings["max_grad_norm"])))
        opt.step()
        sched.step()
        losses.append(float(loss))
    return losses, grad_norms


def greedy(model, adapter, scale):
    ids = list(PROMPT)
    new, margins, first = [], [], None
    with torch.no_grad():
        for _ in range(NEW_TOKENS):
            logits = model.logits(torch.tensor(ids), adapter, scale)[-1]
            if first is None:
                first = logits.tolist()
            top = torch.topk(logits, 2).values
            margins.append(float(top[0] - top[1]))
            token = int(torch.argmax(logits))
            new.append(token)
            ids.append(token)
    return {"ids": new, "top2_margins": margins, "first_logits": first}


def relative_gap(a, b):
    return max(abs(x - y) / abs(y) for x, y in zip(a, b))


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_OUT
    torch.set_num_threads(1)
    with open(os.path.join(MODEL_DIR, "config.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(TRAIN_DIR, "reference.json")) as f:
        lora_ref = json.load(f)
    settings = lora_ref["training"]
    lora = lora_ref["lora"]
    scale = lora["lora_alpha"] / lora["r"]
    stored = {k: v.float() for k, v in read_safetensors(
        os.path.join(MODEL_DIR, "model.safetensors")).items()}
    init = read_safetensors(os.path.join(TRAIN_DIR, "lora_init.safetensors"))

    quantized = dict(stored)
    sums = {}
    for layer in range(cfg["num_hidden_layers"]):
        for block, name in PROJECTIONS:
            key = f"model.layers.{layer}.{block}.{name}.weight"
            quantized[key] = quantize_projection(stored[key])
            sums[key] = float(quantized[key].double().pow(2).sum())
    on_gpu = {k: bf16(v) for k, v in quantized.items()}

    plain, _ = train(Llama(cfg, stored, torch.float64), init, settings, scale)
    self_check = relative_gap(plain, lora_ref["losses_float64"])
    print(f"qlora_curve.py: unquantised curve vs transformers' (lora_training.py): worst "
          f"relative difference {self_check:.2e}")
    if self_check > 1e-6:
        raise SystemExit("qlora_curve.py: the hand-written Llama does not reproduce transformers'"
                         " losses; the NF4 curve would not be a reference")
    nf4_losses, nf4_norms = train(Llama(cfg, quantized, torch.float64), init, settings, scale)
    bf16_losses, _ = train(Llama(cfg, on_gpu, torch.float64), init, settings, scale)
    effect = relative_gap(nf4_losses, plain)
    weights_bf16 = relative_gap(bf16_losses, nf4_losses)
    print(f"qlora_curve.py: NF4 curve {nf4_losses[0]:.5f} -> {nf4_losses[-1]:.5f}; worst relative "
          f"difference to the unquantised curve {effect:.2e}; bf16 weights move it {weights_bf16:.2e}")

    model = Llama(cfg, quantized, torch.float64)
    adapter = {k: v.double() for k, v in init.items()}
    result = {
        "generator": "scripts/reference/qlora_curve.py",
        "torch": torch.__version__,
        "fixture": FIXTURE,
        "adapter": f"tests/train/data/{FIXTURE}/lora_init.safetensors",
        "quantization": {"quant_type": "nf4", "blocksize": nf4.BLOCK, "double_quant": True,
                         "double_quant_group": nf4.GROUP,
                         "quantized": [name for _, name in PROJECTIONS]},
        "lora": lora,
        "training": settings,
        "losses_nf4_float64": nf4_losses,
        "grad_norms_nf4_float64": nf4_norms,
        "losses_nf4_bf16_weights": bf16_losses,
        "losses_unquantized_float64": plain,
        "unquantized_vs_transformers_max_relative": self_check,
        "nf4_vs_unquantized_max_relative": effect,
        "bf16_weights_vs_nf4_max_relative": weights_bf16,
        "dequantized_sum_of_squares": sums,
        "generate": {
            "prompt_ids": PROMPT,
            "base": greedy(model, None, scale),
            "adapter": greedy(model, adapter, scale),
            "unquantized_base": greedy(Llama(cfg, stored, torch.float64), None, scale),
        },
    }
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    print(f"qlora_curve.py: wrote {out_path} (torch {torch.__version__})")


if __name__ == "__main__":
    main()
