#!/usr/bin/env python3
"""lora_training.py — PyTorch references for the LoRA trainer (backend/train) on tiny fp32 models.

For each fixture in tests/model/data (real transformers folders made by models.py) this writes
tests/train/data/<fixture>/:
  lora_init.safetensors   A and B of every adapted projection (PEFT keys, F32). B is non-zero so
                          that every gradient is informative. The C++ test loads exactly these.
  lora_grads.safetensors  autograd gradients of the mean next-token loss w.r.t. every A and B,
                          for the fixed ids/labels in reference.json ("grad_check").
  lora_final.safetensors  A and B after the 20-step loop below (float64 run).
  reference.json          the LoRA/optimizer/schedule settings, the grad-check batch and loss,
                          the training examples, and the losses of the first 20 AdamW steps
                          (float64 and float32 runs; their difference shows the fp32 noise floor).

The model is y = x·Wᵀ (+ b) + (alpha/r) · (x·Aᵀ)·Bᵀ on q,k,v,o,gate,up,down of every layer,
LoRA dropout 0 (a dropout mask cannot be shared with torch's RNG). The loop is plain PyTorch:
per step the next 4 examples in dataset order (no shuffle), loss = Σ token CE / tokens predicted
in the step, clip_grad_norm_(1.0), AdamW(lr 5e-3, betas (0.9, 0.999), eps 1e-8, wd 0.01),
linear schedule with 2 warm-up steps over 20 steps (transformers' get_linear_schedule_with_warmup).
Gradients are computed in float64 (weights widened exactly), the reference the fp32 C++ is held to.

Run where torch / transformers 5.x / safetensors are installed (no network, no GPU needed):
    python3 scripts/reference/lora_training.py [MODELS_DIR] [OUT_DIR [FIXTURE ...]]
FIXTURE names limit the run to those (the others stay as committed).
"""
import json
import math
import os
import sys

# This folder holds other reference scripts (e.g. tokenizers.py) that would shadow the packages
# of the same name: import from site-packages only.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

FIXTURES = ["llama_f32_legacy_rope", "qwen2_f32_tied", "qwen3_f32", "mistral_f32_sliding",
            "gemma2_f32", "gemma3_f32"]
RANK = 4
ALPHA = 8.0
MODULES = [("self_attn", "q_proj"), ("self_attn", "k_proj"), ("self_attn", "v_proj"),
           ("self_attn", "o_proj"), ("mlp", "gate_proj"), ("mlp", "up_proj"),
           ("mlp", "down_proj")]
LR = 5e-3
WEIGHT_DECAY = 0.01
MAX_GRAD_NORM = 1.0
WARMUP = 2
STEPS = 20
STEP_EXAMPLES = 4  # effective batch (the C++ test runs it as 2 micro-batches of 2)
EXAMPLE_LENGTHS = [7, 12, 5, 9, 11, 6, 10, 8]


def peft_key(layer, block, name, which):
    return f"base_model.model.model.layers.{layer}.{block}.{name}.lora_{which}.weight"


def make_adapter(model, seed):
    """A ~ PEFT's Kaiming-uniform bound, B ~ 0.1·N(0,1); rounded to fp32 (what the file holds)."""
    gen = torch.Generator().manual_seed(seed)
    tensors = {}
    for layer, decoder in enumerate(model.model.layers):
        for block, name in MODULES:
            linear = getattr(getattr(decoder, block), name)
            out_f, in_f = linear.weight.shape
            bound = 1.0 / math.sqrt(in_f)
            a = (torch.rand(RANK, in_f, generator=gen) * 2 - 1) * bound
            b = torch.randn(out_f, RANK, generator=gen) * 0.1
            tensors[peft_key(layer, block, name, "A")] = a.float().contiguous()
            tensors[peft_key(layer, block, name, "B")] = b.float().contiguous()
    return tensors


class LoraModel:
    """The frozen model plus LoRA parameters added through forward hooks on the projections."""

    def __init__(self, folder, init, dtype):
        self.model = AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch.float32, attn_implementation="eager").to(dtype).eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.params = {k: torch.nn.Parameter(v.to(dtype).clone()) for k, v in init.items()}
        scale = ALPHA / RANK
        for layer, decoder in enumerate(self.model.model.layers):
            for block, name in MODULES:
                linear = getattr(getattr(decoder, block), name)
                a = self.params[peft_key(layer, block, name, "A")]
                b = self.params[peft_key(layer, block, name, "B")]

                def hook(module, inputs, output, a=a, b=b):
                    return output + scale * F.linear(F.linear(inputs[0], a), b)

                linear.register_forward_hook(hook)

    def loss_sum(self, ids, labels):
        """Σ of shifted next-token CE over labels != -100, and how many tokens that is."""
        logits = self.model(input_ids=ids).logits
        shift_logits = logits[:, :-1, :].reshape(-1, logits.shape[-1])
        shift_labels = labels[:, 1:].reshape(-1)
        loss = F.cross_entropy(shift_logits, shift_labels, ignore_index=-100, reduction="sum")
        return loss, int((shift_labels != -100).sum())


def training_examples(seed, vocab):
    gen = torch.Generator().manual_seed(seed)
    examples = []
    for i, length in enumerate(EXAMPLE_LENGTHS):
        ids = torch.randint(0, vocab, (length,), generator=gen)
        labels = ids.clone()
        labels[: 2 + i % 3] = -100  # a masked prompt of 2..4 tokens
        examples.append({"ids": ids.tolist(), "labels": labels.tolist()})
    return examples


def lr_factor(step):
    if step < WARMUP:
        return step / max(1, WARMUP)
    return max(0.0, (STEPS - step) / max(1, STEPS - WARMUP))


def train(folder, init, examples, dtype):
    lm = LoraModel(folder, init, dtype)
    params = list(lm.params.values())
    opt = torch.optim.AdamW(params, lr=LR, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=WEIGHT_DECAY)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    losses, grad_norms = [], []
    for step in range(STEPS):
        first = (step * STEP_EXAMPLES) % len(examples)
        batch = [examples[(first + i) % len(examples)] for i in range(STEP_EXAMPLES)]
        opt.zero_grad()
        total, count = 0.0, 0
        parts = []
        for e in batch:
            ids = torch.tensor([e["ids"]])
            labels = torch.tensor([e["labels"]])
            s, n = lm.loss_sum(ids, labels)
            parts.append(s)
            count += n
        loss = torch.stack(parts).sum() / count
        loss.backward()
        grad_norms.append(float(torch.nn.utils.clip_grad_norm_(params, MAX_GRAD_NORM)))
        opt.step()
        sched.step()
        losses.append(float(loss))
    final = {k: v.detach().float().contiguous() for k, v in lm.params.items()}
    return losses, grad_norms, final


def make_case(name, models_dir, out_dir, seed):
    folder = os.path.join(models_dir, name)
    with open(os.path.join(folder, "expected.json")) as f:
        expected = json.load(f)
    with open(os.path.join(folder, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    out = os.path.join(out_dir, name)
    os.makedirs(out, exist_ok=True)

    base = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    init = make_adapter(base, seed)
    save_file(init, os.path.join(out, "lora_init.safetensors"), metadata={"format": "pt"})

    lm = LoraModel(folder, init, torch.float64)
    ids = torch.tensor(expected["input_ids"])
    labels = torch.tensor(expected["labels"])
    s, n = lm.loss_sum(ids, labels)
    loss = s / n
    loss.backward()
    grads = {k: p.grad.float().contiguous() for k, p in lm.params.items()}
    save_file(grads, os.path.join(out, "lora_grads.safetensors"), metadata={"format": "pt"})

    examples = training_examples(seed + 1, vocab)
    losses64, norms64, final64 = train(folder, init, examples, torch.float64)
    losses32, norms32, _ = train(folder, init, examples, torch.float32)
    save_file(final64, os.path.join(out, "lora_final.safetensors"), metadata={"format": "pt"})

    reference = {
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "lora": {"r": RANK, "lora_alpha": ALPHA, "lora_dropout": 0.0,
                 "target_modules": [m for _, m in MODULES]},
        "grad_check": {"input_ids": expected["input_ids"], "labels": expected["labels"],
                       "loss": float(loss), "predicted_tokens": n},
        "training": {"lr": LR, "weight_decay": WEIGHT_DECAY, "betas": [0.9, 0.999], "eps": 1e-8,
                     "max_grad_norm": MAX_GRAD_NORM, "schedule": "linear", "warmup_steps": WARMUP,
                     "steps": STEPS, "examples_per_step": STEP_EXAMPLES, "shuffle": False,
                     "examples": examples},
        "losses_float64": losses64,
        "grad_norms_float64": norms64,
        "losses_float32": losses32,
        "grad_norms_float32": norms32,
    }
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    worst = max(abs(a - b) / abs(a) for a, b in zip(losses64, losses32))
    print(f"{name}: grad-check loss {float(loss):.6f} over {n} tokens; losses {losses64[0]:.5f} -> "
          f"{losses64[-1]:.5f}; fp32 vs fp64 worst relative loss difference {worst:.2e}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    models_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "..", "tests", "model", "data")
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        here, "..", "..", "tests", "train", "data")
    torch.set_num_threads(1)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    only = set(sys.argv[3:])
    for seed, name in enumerate(FIXTURES, start=101):
        if not only or name in only:
            make_case(name, models_dir, out_dir, seed)


if __name__ == "__main__":
    main()
