#!/usr/bin/env python3
"""TensorBoard, transformers and huggingface_hub read a LoRAscope run folder as their own.

Checks, for RUN_DIR (made by `lorascope-train train ... --out RUN_DIR`):
  1. TensorBoard's EventAccumulator loads RUN_DIR's events.out.tfevents.* (its reader checks the
     TFRecord framing and masked CRC-32C) and finds the scalars train/loss,
     train/learning_rate, train/grad_norm, train/epoch for every step of metrics.jsonl, equal to
     the metrics as float32;
  2. transformers' TrainerState.load_from_json reads RUN_DIR/trainer_state.json, whose
     log_history holds loss, learning_rate, grad_norm, epoch and step for each step up to
     global_step, equal to metrics.jsonl;
  3. huggingface_hub's ModelCard.load parses RUN_DIR/adapter/README.md (the model card's YAML
     front matter: base_model, library_name peft) when the run has a final adapter.
Prints what it read and exits 1 on any difference. Run on the GPU machine (tensorboard and
transformers are installed there), e.g. through the device tool:
  pip show tensorboard && python3 scripts/reference/hf_run_check.py RUN_DIR
"""
import json
import os
import struct
import sys

# scripts/reference/tokenizers.py would shadow Hugging Face's `tokenizers` package (which
# transformers imports): keep this folder off the import path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

TAGS = {"train/loss": "loss", "train/learning_rate": "lr", "train/grad_norm": "grad_norm",
        "train/epoch": "epoch"}


def as_float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    run = sys.argv[1]
    with open(os.path.join(run, "metrics.jsonl"), encoding="utf-8") as f:
        metrics = [json.loads(line) for line in f if line.strip()]
    failures = []

    import tensorboard
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = [n for n in os.listdir(run) if "tfevents" in n]
    print(f"tensorboard {tensorboard.__version__}; event files: {events}")
    accumulator = EventAccumulator(run, size_guidance={"scalars": 0})
    accumulator.Reload()
    tags = accumulator.Tags()["scalars"]
    print(f"scalar tags: {sorted(tags)}")
    for tag, key in TAGS.items():
        if tag not in tags:
            failures.append(f"TensorBoard found no {tag}")
            continue
        scalars = accumulator.Scalars(tag)
        read = {s.step: s.value for s in scalars}
        print(f"{tag}: {len(scalars)} points, " +
              ", ".join(f"step {s.step}={s.value:.6g}" for s in scalars[:3]) +
              (" ..." if len(scalars) > 3 else ""))
        for m in metrics:
            want = as_float32(float(m[key]))
            if m["step"] not in read:
                failures.append(f"{tag}: step {m['step']} missing")
            elif read[m["step"]] != want:
                failures.append(f"{tag}: step {m['step']} is {read[m['step']]}, metrics.jsonl {want}")

    import transformers
    from transformers import TrainerState

    state = TrainerState.load_from_json(os.path.join(run, "trainer_state.json"))
    print(f"transformers {transformers.__version__}: TrainerState global_step={state.global_step} "
          f"max_steps={state.max_steps} log_history={len(state.log_history)} entries, last "
          f"{state.log_history[-1] if state.log_history else None}")
    by_step = {m["step"]: m for m in metrics}
    expected = [s for s in sorted(by_step) if s <= state.global_step]
    if [e["step"] for e in state.log_history] != expected:
        failures.append(f"log_history steps {[e['step'] for e in state.log_history]} != {expected}")
    for entry in state.log_history:
        m = by_step.get(entry["step"])
        for key, ours in (("loss", "loss"), ("learning_rate", "lr"), ("grad_norm", "grad_norm")):
            if m is not None and entry[key] != m[ours]:
                failures.append(f"log_history step {entry['step']} {key} {entry[key]} != {m[ours]}")

    card_path = os.path.join(run, "adapter", "README.md")
    if os.path.exists(card_path):
        import huggingface_hub
        from huggingface_hub import ModelCard

        card = ModelCard.load(card_path)
        print(f"huggingface_hub {huggingface_hub.__version__}: model card base_model="
              f"{card.data.base_model!r} library_name={card.data.library_name!r} "
              f"tags={card.data.tags}")
        if card.data.library_name != "peft" or not card.data.base_model:
            failures.append("model card front matter lacks library_name peft or base_model")

    for failure in failures:
        print("FAIL", failure)
    print("hf_run_check: " + ("OK" if not failures else f"{len(failures)} failures"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
