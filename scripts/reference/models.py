#!/usr/bin/env python3
"""models.py — tiny random model folders (Llama, Qwen2, Qwen3, Mistral, Gemma 2, Gemma 3) with
transformers' own logits and loss.

Writes one folder per case into OUT_DIR (default tests/model/data): the model saved by
save_pretrained (safetensors, single file or sharded), its config.json, and expected.json with
the input ids, the labels (some -100), transformers' loss and the logits at a few positions.
backend/model's CPU forward is compared against these by tests/model/test_reference_models.cpp.

The reference is computed by reloading each saved folder with from_pretrained(dtype=float32) on
the CPU with eager attention: transformers' fp32 forward over exactly the stored weights (for the
bf16 cases the bf16 values, widened), which is what LoRAscope's fp32 CPU forward computes too.

The families beyond Llama/Qwen2 exercise what their graphs add: Qwen3's q/k norms (head_dim
unlike hidden/heads), Mistral's sliding window (window 5 < SEQ), Gemma 2's soft-capped attention
and final logits (caps small enough that tanh bends), query_pre_attn_scalar, GeGLU, the (1 + w)
and sandwich norms, scaled tied embeddings, sliding layers alternating with global ones, and
Gemma 3's q/k norms with local (10000) and global (1e6, linear-scaled) rope bases.

Run where transformers 5.x / torch / safetensors are installed (no network needed):
    python3 scripts/reference/models.py [OUT_DIR [CASE ...]]
CASE names limit the run to those folders (the others stay as committed).
"""
import json
import math
import os
import shutil
import sys

# This folder holds other reference scripts (e.g. tokenizers.py) that would shadow the packages
# of the same name: import from site-packages only.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (AutoModelForCausalLM, Gemma2Config, Gemma3TextConfig,  # noqa: E402
                          LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config)

VOCAB = 300
HIDDEN = 32
INTERMEDIATE = 64
LAYERS = 2
HEADS = 4
BATCH = 2
SEQ = 12
LOGIT_POSITIONS = [0, 5, SEQ - 1]

LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 16}

CASES = [
    # name, family, dtype, shard, extra config
    dict(name="llama_f32_legacy_rope", family="llama", dtype=torch.float32, shard=False,
         legacy_config=True, tie=False, kv_heads=2, head_dim=None, theta=500000.0, scaling=LLAMA3,
         attention_bias=False, mlp_bias=False),
    dict(name="llama_bf16_sharded_tied", family="llama", dtype=torch.bfloat16, shard=True,
         legacy_config=False, tie=True, kv_heads=1, head_dim=16, theta=500000.0, scaling=LLAMA3,
         attention_bias=True, mlp_bias=True),
    dict(name="qwen2_f32_tied", family="qwen2", dtype=torch.float32, shard=False,
         legacy_config=False, tie=True, kv_heads=2, head_dim=None, theta=1000000.0, scaling=None),
    dict(name="qwen2_bf16_sharded_linear_rope", family="qwen2", dtype=torch.bfloat16, shard=True,
         legacy_config=False, tie=False, kv_heads=1, head_dim=None, theta=10000.0,
         scaling={"rope_type": "linear", "factor": 2.0}),
    dict(name="mistral_f32", family="mistral", dtype=torch.float32, shard=False,
         legacy_config=False, tie=False, kv_heads=2, head_dim=12, theta=10000.0, scaling=None),
    dict(name="qwen3_f32", family="qwen3", dtype=torch.float32, shard=False,
         legacy_config=False, tie=False, kv_heads=2, head_dim=16, theta=1000000.0, scaling=None),
    dict(name="mistral_f32_sliding", family="mistral", dtype=torch.float32, shard=False,
         legacy_config=False, tie=False, kv_heads=2, head_dim=None, theta=10000.0, scaling=None,
         sliding_window=5),
    dict(name="gemma2_f32", family="gemma2", dtype=torch.float32, shard=False,
         legacy_config=False, tie=True, kv_heads=2, head_dim=16, theta=10000.0, scaling=None,
         sliding_window=5),
    dict(name="gemma3_f32", family="gemma3_text", dtype=torch.float32, shard=False,
         legacy_config=False, tie=True, kv_heads=1, head_dim=16, theta=1000000.0,
         scaling={"rope_type": "linear", "factor": 2.0}, sliding_window=5),
    dict(name="gemma3_bf16", family="gemma3_text", dtype=torch.bfloat16, shard=False,
         legacy_config=False, tie=True, kv_heads=2, head_dim=8, theta=1000000.0, scaling=None,
         sliding_window=4),
]
GEMMA = ("gemma2", "gemma3_text")
CONFIGS = {"llama": LlamaConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config,
           "mistral": MistralConfig, "gemma2": Gemma2Config, "gemma3_text": Gemma3TextConfig}


def expected_inv_freq(head_dim, theta, scaling):
    """The rotary frequencies the case asks for, computed independently of transformers."""
    inv = [1.0 / theta ** (2 * i / head_dim) for i in range(head_dim // 2)]
    if scaling is None:
        return inv
    if scaling["rope_type"] == "linear":
        return [f / scaling["factor"] for f in inv]
    old = scaling["original_max_position_embeddings"]
    low_wavelen = old / scaling["low_freq_factor"]
    high_wavelen = old / scaling["high_freq_factor"]
    out = []
    for f in inv:
        wavelen = 2 * math.pi / f
        if wavelen < high_wavelen:
            out.append(f)
        elif wavelen > low_wavelen:
            out.append(f / scaling["factor"])
        else:
            smooth = (old / wavelen - scaling["low_freq_factor"]) / (
                scaling["high_freq_factor"] - scaling["low_freq_factor"])
            out.append((1 - smooth) * f / scaling["factor"] + smooth * f)
    return out


def rope_matches(model, case):
    if case["family"] in GEMMA:
        return True  # per-layer-type rotary tables; the config.json written is what the C++ reads
    head_dim = case["head_dim"] or HIDDEN // HEADS
    want = torch.tensor(expected_inv_freq(head_dim, case["theta"], case["scaling"]))
    rotary = getattr(model.model, "rotary_emb", None)
    if rotary is None or not hasattr(rotary, "inv_freq"):
        raise SystemExit("this transformers has no model.rotary_emb.inv_freq to check the rope with")
    got = rotary.inv_freq.float().cpu()
    return got.shape == want.shape and torch.allclose(got, want, rtol=1e-5, atol=0)


def make_config(case, rope_form):
    family = CONFIGS[case["family"]]
    kwargs = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
                  num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                  num_key_value_heads=case["kv_heads"], rms_norm_eps=1e-5,
                  max_position_embeddings=128, tie_word_embeddings=case["tie"],
                  bos_token_id=1, eos_token_id=2)
    if case["head_dim"] is not None:
        kwargs["head_dim"] = case["head_dim"]
    if case["family"] == "llama":
        kwargs["attention_bias"] = case["attention_bias"]
        kwargs["mlp_bias"] = case["mlp_bias"]
    if case["family"] == "mistral":
        kwargs["sliding_window"] = case.get("sliding_window")
    if case["family"] in ("qwen2", "qwen3"):
        kwargs["use_sliding_window"] = False
    if case["family"] in GEMMA:
        return gemma_config(case, rope_form, family, kwargs)
    if rope_form == "rope_parameters":
        params = {"rope_type": "default", "rope_theta": case["theta"]}
        if case["scaling"] is not None:
            params.update(case["scaling"])
        kwargs["rope_parameters"] = params
    else:
        kwargs["rope_theta"] = case["theta"]
        if case["scaling"] is not None:
            kwargs["rope_scaling"] = dict(case["scaling"])
    return family(**kwargs)


def gemma_config(case, rope_form, family, kwargs):
    """Gemma 2/3: soft-caps that bend (Gemma 2), query_pre_attn_scalar unlike head_dim, layer 0
    sliding and layer 1 global, and Gemma 3's two rope bases."""
    kwargs.update(sliding_window=case["sliding_window"], query_pre_attn_scalar=24,
                  layer_types=["sliding_attention", "full_attention"],
                  hidden_activation="gelu_pytorch_tanh", pad_token_id=0)
    if case["family"] == "gemma2":
        kwargs.update(attn_logit_softcapping=5.0, final_logit_softcapping=8.0)
        kwargs["rope_theta" if rope_form == "legacy" else "rope_parameters"] = (
            case["theta"] if rope_form == "legacy"
            else {"rope_type": "default", "rope_theta": case["theta"]})
        return family(**kwargs)
    full = {"rope_type": "default", "rope_theta": case["theta"]}
    if case["scaling"] is not None:
        full.update(case["scaling"])
    if rope_form == "rope_parameters":
        kwargs["rope_parameters"] = {"full_attention": full, "sliding_attention":
                                     {"rope_type": "default", "rope_theta": 10000.0}}
    else:
        kwargs.update(rope_theta=case["theta"], rope_local_base_freq=10000.0,
                      rope_scaling=dict(case["scaling"]) if case["scaling"] else None)
    return family(**kwargs)


def build_model(case):
    """A model whose rotary frequencies are the ones asked for (either config form accepted)."""
    for rope_form in ("rope_parameters", "legacy"):
        torch.manual_seed(0)
        try:
            model = AutoModelForCausalLM.from_config(make_config(case, rope_form),
                                                     attn_implementation="eager")
        except (TypeError, ValueError, KeyError) as e:
            print(f"  {case['name']}: rope form {rope_form} refused ({e}), trying next")
            continue
        if rope_matches(model, case):
            return model
        print(f"  {case['name']}: rope form {rope_form} not taken by transformers, trying next")
    raise SystemExit(f"{case['name']}: transformers did not take the rope configuration")


def randomize(model, seed):
    """Weights large enough that logits are far from uniform (the default init is too small)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if name.endswith("norm.weight") or "layernorm" in name:
                p.copy_(1.0 + 0.2 * noise)
            elif name.endswith(".bias"):
                p.copy_(0.3 * noise)
            elif "embed_tokens" in name:
                p.copy_(noise)
            else:
                p.copy_(noise / math.sqrt(p.shape[-1]) * 1.5)


def rewrite_config_legacy(folder, case):
    """transformers <= 4.x form: top-level rope_theta and rope_scaling instead of rope_parameters."""
    path = os.path.join(folder, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg.pop("rope_parameters", None)
    cfg["rope_theta"] = case["theta"]
    cfg["rope_scaling"] = dict(case["scaling"]) if case["scaling"] else None
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def fixed_inputs(seed):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ), generator=gen)
    labels = ids.clone()
    labels[0, :4] = -100  # a masked prompt
    labels[1, 7] = -100   # a masked token in the middle
    return ids, labels


def load_float32(folder):
    try:
        return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                                    attn_implementation="eager")
    except TypeError:
        return AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32,
                                                    attn_implementation="eager")


def make_case(case, out_dir, seed):
    folder = os.path.join(out_dir, case["name"])
    shutil.rmtree(folder, ignore_errors=True)
    model = build_model(case)
    randomize(model, seed)
    if case["tie"]:
        model.tie_weights()
    model = model.to(case["dtype"])
    save_kwargs = {"safe_serialization": True}
    if case["shard"]:
        save_kwargs["max_shard_size"] = "20KB"
    try:
        model.save_pretrained(folder, **save_kwargs)
    except TypeError:  # transformers 5 always writes safetensors and dropped the flag
        save_kwargs.pop("safe_serialization")
        model.save_pretrained(folder, **save_kwargs)
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(folder, extra)):
            os.remove(os.path.join(folder, extra))
    if case["legacy_config"]:
        rewrite_config_legacy(folder, case)

    ref = load_float32(folder).eval()
    if not rope_matches(ref, case):
        raise SystemExit(f"{case['name']}: reloaded model lost the rope configuration")
    ids, labels = fixed_inputs(seed)
    with torch.no_grad():
        out = ref(input_ids=ids, labels=labels)
    logits = out.logits.float()
    expected = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "stored_dtype": str(case["dtype"]).replace("torch.", ""),
        "input_ids": ids.tolist(),
        "labels": labels.tolist(),
        "loss": float(out.loss),
        "logits_positions": LOGIT_POSITIONS,
        # logits[b][i] is the (vocab) row at batch b, position LOGIT_POSITIONS[i]
        "logits": [[[float(f"{v:.8g}") for v in logits[b, p].tolist()] for p in LOGIT_POSITIONS]
                   for b in range(BATCH)],
    }
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump(expected, f)
        f.write("\n")
    files = sorted(os.listdir(folder))
    size = sum(os.path.getsize(os.path.join(folder, n)) for n in files)
    print(f"{case['name']}: loss {expected['loss']:.6f}, {size} bytes, files {files}")
    with open(os.path.join(folder, "config.json")) as f:
        print(f.read())


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "..", "tests", "model", "data")
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)  # deterministic CPU reductions
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    only = set(sys.argv[2:])
    for seed, case in enumerate(CASES, start=11):
        if not only or case["name"] in only:
            make_case(case, out_dir, seed)


if __name__ == "__main__":
    main()
