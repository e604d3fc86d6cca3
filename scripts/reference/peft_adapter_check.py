#!/usr/bin/env python3
"""peft_adapter_check.py — adapters that lorascope-train wrote load in Hugging Face PEFT.

    python3 scripts/reference/peft_adapter_check.py BASE_DIR OUT_JSON ADAPTER_DIR [ADAPTER_DIR...]

For each ADAPTER_DIR (a run's adapter/ folder: adapter_config.json + adapter_model.safetensors),
on the GPU when there is one:
  1. peft.PeftModel.from_pretrained(BASE_DIR, ADAPTER_DIR) loads it, and every lora_A/lora_B
     tensor of the file is the model's parameter of that name (nothing missing, nothing left at
     its initial value);
  2. the PEFT model's logits on a fixed sample equal those of the base model with W + scale·B·A
     applied by hand, within 1e-4 of the largest logit (both fp32);
  3. the adapter changes the logits (max |peft − base| / max |base| is reported and must be > 0).
With two or more adapters (the demo run of the Windows cross-build under Wine and the Linux
build's; scripts/check-windows-demo.sh), their PEFT logits are compared with each other too: the
runs' losses agree within 1e-5 relative, so the logits must agree within 1e-3. Writes OUT_JSON and
exits 1 on any failure. BASE_DIR is the demo model folder (lorascope-demo-llama-v2).
"""
import json
import os
import sys

# This folder holds tokenizers.py (another reference script), which would shadow the tokenizers
# package that transformers imports: drop the script's own folder from the module path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import peft  # noqa: E402
import torch  # noqa: E402
from peft import PeftModel  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

SAMPLE = "Reverse the order of the words.\n\n### Input:\nred fox\n\n### Response:\nfox red"
PEFT_TOLERANCE = 1e-4  # PEFT's forward against W + scale·B·A by hand, fp32
BETWEEN_RUNS_TOLERANCE = 1e-3  # the Wine run's adapter against the Linux run's


def load(path, device):
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32,
                                                attn_implementation="eager").to(device).eval()


def rel(a, b):
    return float((a - b).abs().max() / b.abs().max())


def by_hand(model, tensors, scale):
    params = dict(model.named_parameters())
    with torch.no_grad():
        for key, a in tensors.items():
            if ".lora_A." not in key:
                continue
            b = tensors[key.replace(".lora_A.", ".lora_B.")]
            name = key.replace("base_model.model.", "", 1).replace(".lora_A.weight", ".weight")
            params[name] += scale * (b.float().to(params[name].device) @
                                     a.float().to(params[name].device))
    return model


def check(base_dir, adapter_dir, ids, base_logits, device):
    config = json.load(open(os.path.join(adapter_dir, "adapter_config.json")))
    r, alpha = config["r"], config["lora_alpha"]
    scale = alpha / r ** 0.5 if config.get("use_rslora") else alpha / r
    tensors = load_file(os.path.join(adapter_dir, "adapter_model.safetensors"))
    failures = []
    model = PeftModel.from_pretrained(load(base_dir, device), adapter_dir).eval()
    params = dict(model.named_parameters())
    loaded = 0
    for key, value in tensors.items():
        # PEFT names a parameter by the adapter: ...lora_A.default.weight for the file's
        # ...lora_A.weight.
        name = key.replace(".lora_A.weight", ".lora_A.default.weight").replace(
            ".lora_B.weight", ".lora_B.default.weight")
        if name not in params:
            failures.append(f"{key}: PEFT has no parameter {name}")
            continue
        if not torch.equal(params[name].detach().cpu(), value.float()):
            failures.append(f"{key}: PEFT's parameter differs from the file's tensor")
        loaded += 1
    with torch.no_grad():
        peft_logits = model(ids).logits
        hand_logits = by_hand(load(base_dir, device), tensors, scale)(ids).logits
    out = {"adapter": adapter_dir, "tensors": len(tensors), "loaded": loaded,
           "target_modules": sorted(config.get("target_modules") or []),
           "r": r, "lora_alpha": alpha,
           "peft_vs_by_hand": rel(peft_logits, hand_logits),
           "peft_vs_base": rel(peft_logits, base_logits)}
    if out["peft_vs_by_hand"] > PEFT_TOLERANCE:
        failures.append(f"PEFT vs by hand {out['peft_vs_by_hand']:.3g} > {PEFT_TOLERANCE}")
    if out["peft_vs_base"] == 0.0:
        failures.append("the adapter does not change the logits")
    out["failures"] = failures
    print(f"{adapter_dir}: {loaded}/{len(tensors)} tensors loaded by PEFT; PEFT vs W+scale·B·A "
          f"{out['peft_vs_by_hand']:.3g} (limit {PEFT_TOLERANCE}); adapter vs base "
          f"{out['peft_vs_base']:.3g}" + "".join(f"\n  FAIL: {f}" for f in failures))
    return out, peft_logits


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    base_dir, out_json, adapters = sys.argv[1], sys.argv[2], sys.argv[3:]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"torch {torch.__version__}, peft {peft.__version__}, device {device}"
          + (f" ({torch.cuda.get_device_name()})" if device == "cuda" else ""))
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    ids = torch.tensor([tokenizer(SAMPLE)["input_ids"]], device=device)
    with torch.no_grad():
        base_logits = load(base_dir, device)(ids).logits
    results, logits = [], []
    for adapter in adapters:
        result, adapter_logits = check(base_dir, adapter, ids, base_logits, device)
        results.append(result)
        logits.append(adapter_logits)
    report = {"device": device, "peft": peft.__version__, "torch": torch.__version__,
              "sample_tokens": ids.shape[1], "adapters": results}
    failed = any(r["failures"] for r in results)
    if len(logits) > 1:
        between = [rel(other, logits[0]) for other in logits[1:]]
        report["between_runs"] = between
        print(f"PEFT logits of {adapters[1:]} against {adapters[0]}: "
              + ", ".join(f"{b:.3g}" for b in between) + f" (limit {BETWEEN_RUNS_TOLERANCE})")
        failed = failed or any(b > BETWEEN_RUNS_TOLERANCE for b in between)
    with open(out_json, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    print("peft_adapter_check: " + ("FAILED" if failed else "passed"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
