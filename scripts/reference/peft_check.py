#!/usr/bin/env python3
"""peft_check.py — checks LoRAscope's PEFT export and merge against Hugging Face PEFT/transformers.

Reads the fixtures tests/train/test_peft_export writes into the build tree
(build/<preset>/tests/train/peft_fixture): per case the base model folder, the adapter our code
exported (adapter_model.safetensors + adapter_config.json), the model folder our code merged,
and the input ids; plus the built-in demo model folder (demo/). Writes OUT_DIR/peft_check.json:

  fixtures.<case>.peft_logits     logits of base + our adapter, computed by peft.PeftModel (or, if
                                  peft is not installed, by applying W + scale·B·A with torch)
  fixtures.<case>.merged_vs_peft  max |transformers(our merged folder) − peft_logits| / max |peft|
  fixtures.<case>.base_vs_peft    the same for the base model alone (shows the adapter matters)
  fixtures.<case>.tolerance       the bound the C++ test applies (stated here, before running)
  fixtures.<case>.peft_saved      what PEFT's save_pretrained writes for the adapter it loaded:
                                  safetensors keys and shapes, adapter_config.json
  demo                            the demo folder through transformers: tokenizer ids and chat
                                  rendering of a sample, logits at a few positions

tests/train/test_peft_export.cpp and test_demo.cpp compare LoRAscope's own results with it.
All computation is fp32 on the CPU with eager attention (bf16 bases are widened on load).

    python3 scripts/reference/peft_check.py FIXTURE_DIR OUT_DIR
"""
import json
import os
import sys
import tempfile
import traceback

# This folder holds tokenizers.py (another reference script), which would shadow the tokenizers
# package that transformers imports: drop the script's own folder from the module path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

try:
    import peft
    from peft import PeftModel
except ImportError:  # the check falls back to applying the adapter by hand
    peft = None

# max |ours − reference| / max |reference| the C++ test accepts: fp32 bases differ only by
# summation order; bf16 bases hold the merged weights rounded to bf16 (relative 2^-9 each).
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}
DEMO_SAMPLE = "Add the two numbers.\n17 + 25 = 42 {ok}"
DEMO_MESSAGES = [{"role": "user", "content": "Reverse the order of the words.\n\n### Input:\nred fox"},
                 {"role": "assistant", "content": "fox red"}]
DEMO_POSITIONS = [0, 5, 17]


def load(path):
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32,
                                                attn_implementation="eager").eval()


def rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


def apply_by_hand(model, adapter_dir):
    """W += scale · B·A for every adapted projection (what PEFT's merge computes)."""
    config = json.load(open(os.path.join(adapter_dir, "adapter_config.json")))
    r, alpha = config["r"], config["lora_alpha"]
    scale = alpha / r ** 0.5 if config.get("use_rslora") else alpha / r
    tensors = load_file(os.path.join(adapter_dir, "adapter_model.safetensors"))
    params = dict(model.named_parameters())
    for key, a in tensors.items():
        if ".lora_A." not in key:
            continue
        b = tensors[key.replace(".lora_A.", ".lora_B.")]
        name = key.replace("base_model.model.", "", 1).replace(".lora_A.weight", ".weight")
        with torch.no_grad():
            params[name] += scale * (b.float() @ a.float())
    return model


def saved_by_peft(model):
    """What PEFT itself writes for the adapter it loaded."""
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        with safe_open(os.path.join(tmp, "adapter_model.safetensors"), "pt") as f:
            shapes = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
            metadata = f.metadata()
        config = json.load(open(os.path.join(tmp, "adapter_config.json")))
    return {"tensors": shapes, "metadata": metadata, "adapter_config": config}


def check_fixture(root, case):
    name = case["name"]
    base_dir = os.path.join(root, name, "base")
    adapter_dir = os.path.join(root, name, "adapter")
    ids = torch.tensor(case["ids"]).reshape(2, -1)
    config = json.load(open(os.path.join(base_dir, "config.json")))
    stored = config.get("dtype") or config.get("torch_dtype") or "float32"
    with torch.no_grad():
        base_logits = load(base_dir)(ids).logits
        if peft is not None:
            model = PeftModel.from_pretrained(load(base_dir), adapter_dir).eval()
            method = "peft " + peft.__version__
        else:
            model = apply_by_hand(load(base_dir), adapter_dir)
            method = "by hand (peft not installed): W + scale * B @ A"
        peft_logits = model(ids).logits
        merged_logits = load(os.path.join(root, name, "merged"))(ids).logits
    out = {"ids": case["ids"], "lora": case["lora"], "stored_dtype": stored, "method": method,
           "tolerance": TOLERANCE[stored],
           "peft_logits": [round(float(x), 7) for x in peft_logits.flatten()],
           "merged_vs_peft": rel(merged_logits, peft_logits),
           "base_vs_peft": rel(base_logits, peft_logits)}
    if peft is not None:
        try:
            out["peft_saved"] = saved_by_peft(model)
        except Exception as e:  # recorded, not fatal: the logits are the check
            out["peft_saved"] = {"error": repr(e)}
    print(f"{name}: {method}; merged vs peft {out['merged_vs_peft']:.3g} "
          f"(tolerance {out['tolerance']}), base vs peft {out['base_vs_peft']:.3g}")
    return out


def check_demo(demo_dir):
    tokenizer = AutoTokenizer.from_pretrained(demo_dir)
    ids = tokenizer(DEMO_SAMPLE, add_special_tokens=False)["input_ids"]
    rendered = tokenizer.apply_chat_template(DEMO_MESSAGES, tokenize=False)
    model = load(demo_dir)
    with torch.no_grad():
        out = model(torch.tensor([ids]), labels=torch.tensor([ids]))
    logits = out.logits[0]
    print(f"demo: {len(ids)} ids, loss {float(out.loss):.4f}")
    return {"sample": DEMO_SAMPLE, "ids": ids, "chat_rendered": rendered,
            "eos_token_id": tokenizer.eos_token_id, "loss": float(out.loss),
            "positions": DEMO_POSITIONS,
            "logits": [[round(float(x), 7) for x in logits[p]] for p in DEMO_POSITIONS]}


def guarded(check, *args):
    try:
        return check(*args)
    except Exception as e:
        traceback.print_exc()
        return {"error": repr(e)}


def main():
    root, out_dir = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    cases = json.load(open(os.path.join(root, "fixtures.json")))
    result = {"transformers": transformers.__version__, "torch": torch.__version__,
              "peft": peft.__version__ if peft is not None else None,
              "fixtures": {c["name"]: check_fixture(root, c) for c in cases},
              "demo": guarded(check_demo, os.path.join(root, "demo"))}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "peft_check.json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    worst = {n: r["merged_vs_peft"] / r["tolerance"] for n, r in result["fixtures"].items()}
    print("within tolerance" if max(worst.values()) <= 1 else f"OUT OF TOLERANCE: {worst}")


if __name__ == "__main__":
    main()
