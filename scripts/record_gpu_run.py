#!/usr/bin/env python3
"""record_gpu_run.py — records what the window shows of a real GPU run, on the GPU machine (no Qt
there): it drives `lorascope-train engine` over its stdio protocol and keeps every event line.

    record_gpu_run.py LORASCOPE_TRAIN OUT_DIR

1. A random Qwen2.5-0.5B-shaped model folder (bf16 weights, the built-in demo's byte-level
   tokenizer: speed and memory do not depend on the weights' values) and a dataset of 256
   instruction records of over 512 tokens each, written into a scratch folder (RECORD_WORK).
2. Run A, B8 x S512, 30 steps (120 for a group, each step below times 4): an allocator snapshot after step 6 (the memory map and its
   allocation timeline), blocking launches from step 10 to 15 (queue depth should drop to <= 1),
   serialize from 15 to 20, the planned arena from step 23 (reserved before and after). Events go to OUT_DIR/gpu_run.jsonl, the snapshot alone to
   OUT_DIR/gpu_snapshot.json.
3. Run B, the same run with LORASCOPE_FAULTS=hang@adamw#5: the optimizer launch of step 5 blocks
   forever; the engine's watchdog must name it within its budget (10 s after the op's longest
   time) and the engine exit with code 3. Events go to OUT_DIR/gpu_hang.jsonl.
   RECORD_GPUS=LIST (e.g. 0,1; the nvidia-h200-x2 kind): both runs are a group as a user starts
   one, `lorascope-train train --gpus LIST --json` (the supervisor, one engine per GPU, each rank
   one micro-batch of B8 x S512 a step), driven over stdin with the same commands (the toggles
   reach every rank; the snapshot request brings one snapshot per card, each kept as
   OUT_DIR/gpu_snapshot_cardN.json); run B's hang is injected in the last rank alone
   (LORASCOPE_FAULTS_RANK): its watchdog names it, the supervisor restarts the group from the
   newest state and the run finishes, every step announced once (OUT_DIR/gpu_group_hang.jsonl).
4. OUT_DIR/summary.txt: queue depth per phase (each reading's peak: the most launches in flight at
   one of the engine's polls since the previous reading) and per step, readings per second (also
   during the hang), the step cycle against the step's own time, reserved bytes around the arena
   switch, the hang report and its delay.
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time

GPUS = os.environ.get("RECORD_GPUS", "")
# A group's step of B8 x S512 per GPU is short (50 ms on two H200s), shorter than a command takes
# to reach every rank: its run A is 4 times as long, each phase too.
PHASE = 4 if GPUS else 1
STEPS = 30 * PHASE  # run A's steps
RANKS = len(GPUS.split(",")) if GPUS else 1
# RECORD_SHAPE=tiny: a small model written without PyTorch, to try the driver on a CPU build.
TINY = os.environ.get("RECORD_SHAPE") == "tiny"
if TINY:
    HIDDEN, INTERMEDIATE, LAYERS, HEADS, KV_HEADS, HEAD_DIM, VOCAB = 64, 128, 2, 2, 1, 32, 259
else:
    import torch
    HIDDEN, INTERMEDIATE, LAYERS, HEADS, KV_HEADS, HEAD_DIM, VOCAB = (896, 4864, 24, 14, 2, 64,
                                                                      151936)


def bf16_bytes(shape, kind, rng):
    """Random N(0, 1/in) (or ones/zeros) weights of `shape` as little-endian bf16 bytes."""
    count = 1
    for n in shape:
        count *= n
    if not TINY:
        if kind == "ones":
            t = torch.ones(shape)
        elif kind == "zeros":
            t = torch.zeros(shape)
        else:
            t = torch.randn(shape, generator=rng) * (shape[-1] ** -0.5)
        return t.to(torch.bfloat16).view(torch.int16).numpy().tobytes()
    values = ([1.0] * count if kind == "ones" else [0.0] * count if kind == "zeros" else
              [rng.gauss(0.0, shape[-1] ** -0.5) for _ in range(count)])
    return b"".join(struct.pack("<f", v)[2:] for v in values)


def write_model(folder, demo_model):
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(demo_model):
        if name.startswith("tokenizer") or name == "special_tokens_map.json":
            with open(os.path.join(demo_model, name), "rb") as src:
                data = src.read()
            with open(os.path.join(folder, name), "wb") as dst:
                dst.write(data)
    config = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": VOCAB,
        "hidden_size": HIDDEN, "intermediate_size": INTERMEDIATE, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM,
        "hidden_act": "silu",
        "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
        "bos_token_id": None, "eos_token_id": 258, "pad_token_id": 256,
    }
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shapes = [("model.embed_tokens.weight", [VOCAB, HIDDEN]), ("model.norm.weight", [HIDDEN])]
    for l in range(LAYERS):
        p = f"model.layers.{l}."
        shapes += [
            (p + "input_layernorm.weight", [HIDDEN]),
            (p + "post_attention_layernorm.weight", [HIDDEN]),
            (p + "self_attn.q_proj.weight", [HEADS * HEAD_DIM, HIDDEN]),
            (p + "self_attn.q_proj.bias", [HEADS * HEAD_DIM]),
            (p + "self_attn.k_proj.weight", [KV_HEADS * HEAD_DIM, HIDDEN]),
            (p + "self_attn.k_proj.bias", [KV_HEADS * HEAD_DIM]),
            (p + "self_attn.v_proj.weight", [KV_HEADS * HEAD_DIM, HIDDEN]),
            (p + "self_attn.v_proj.bias", [KV_HEADS * HEAD_DIM]),
            (p + "self_attn.o_proj.weight", [HIDDEN, HEADS * HEAD_DIM]),
            (p + "mlp.gate_proj.weight", [INTERMEDIATE, HIDDEN]),
            (p + "mlp.up_proj.weight", [INTERMEDIATE, HIDDEN]),
            (p + "mlp.down_proj.weight", [HIDDEN, INTERMEDIATE]),
        ]
    import random
    rng = random.Random(7) if TINY else torch.Generator().manual_seed(7)
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, shape in shapes:
        kind = ("ones" if name.endswith("norm.weight") else
                "zeros" if name.endswith(".bias") else "normal")
        raw = bf16_bytes(shape, kind, rng)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def write_dataset(path):
    words = ("gradient memory kernel stream adapter rank token batch queue device allocator "
             "segment block layer attention norm projection optimizer step checkpoint").split()
    with open(path, "w") as f:
        for i in range(256):
            body = " ".join(words[(i * 7 + j * 3) % len(words)] for j in range(80))
            f.write(json.dumps({"instruction": f"Summarise note {i}.", "input": "",
                                "output": body}) + "\n")


class Engine:
    """One `lorascope-train engine` process (or another command of it whose stdout carries events,
    e.g. `train ... --json`); every event line is kept with its arrival time."""

    def __init__(self, program, log_path, env=None, command=("engine",)):
        self.proc = subprocess.Popen([program, *command], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
        self.events, self.lock, self.bad_lines = [], threading.Lock(), []
        self.log = open(log_path, "w", buffering=1)  # whole lines, also when the call is cut off
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError as e:  # kept out of the recording, counted in the summary
                self.bad_lines.append(f"{e}: {line[:200]}")
                continue
            self.log.write(line + "\n")
            event["_wall"] = time.monotonic()
            with self.lock:
                self.events.append(event)

    def send(self, command):
        command["v"] = 1
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def wait_for(self, predicate, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                for e in self.events:
                    if predicate(e):
                        return e
            if self.proc.poll() is not None:
                time.sleep(0.2)
                with self.lock:
                    for e in self.events:
                        if predicate(e):
                            return e
                return None
            time.sleep(0.05)
        return None

    def wait_step(self, step, timeout=300):
        return self.wait_for(lambda e: e.get("type") == "step" and e["step"] >= step, timeout)


def demo_model_folder(program, work, env):
    """The built-in demo model's folder (its tokenizer is the one the random models borrow): a
    one-step CPU demo run writes it into env's LORASCOPE_CACHE_DIR."""
    demo = Engine(program, os.path.join(work, "demo.jsonl"), env)
    demo.send({"type": "start", "config": {"demo": True, "out": os.path.join(work, "demo-run"),
                                           "options": {"steps": 1, "device": "cpu"}}})
    demo.wait_for(lambda e: e.get("type") == "state" and e["state"] in ("finished", "failed"), 300)
    demo.proc.stdin.close()
    demo.proc.wait(60)
    cache = env["LORASCOPE_CACHE_DIR"]
    return next(os.path.join(cache, d) for d in sorted(os.listdir(cache))
                if os.path.isdir(os.path.join(cache, d)))


def start_run(program, log_path, env, model, data, out, steps):
    """Run A or B: one engine over the protocol, or with RECORD_GPUS the group through `train`."""
    if not GPUS:
        engine = Engine(program, log_path, env)
        engine.send(start_config(model, data, out, steps))
        return engine
    options = start_config(model, data, out, steps)["config"]["options"]
    del options["device"]
    options.update({"gpus": GPUS, "grad-accum": len(GPUS.split(","))})
    command = ["train", "--model", model, "--data", data, "--out", out, "--json"]
    for name, value in options.items():
        command += [f"--{name}", str(value)]
    return Engine(program, log_path, env, command)


def start_config(model, data, out, steps):
    return {"type": "start", "config": {"model": model, "data": data, "out": out, "options": {
        "steps": steps, "batch-size": 8, "grad-accum": 1, "max-seq-len": 64 if TINY else 512,
        "lora-r": 16,
        "checkpoint-every": 0, "device": "cpu" if TINY else "gpu"}}}


def depth_of(event):
    """The most launches in flight at once during the reading's period (the engine polls its queue
    tracker every few ms); an engine without "peak" sends the depth of the moment."""
    return max((s.get("peak", s["depth"]) for s in event["streams"]), default=0)


def reserved_gib(events, start, end):
    values = [e["reserved_bytes"] for e in events if e.get("type") == "memory" and
              e.get("reserved_bytes") is not None and start <= e["t_ms"] < end]
    return (f"{min(values) / 2**30:.2f}-{max(values) / 2**30:.2f} GiB" if values else "no reading")


def main():
    program, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    work = os.environ.get("RECORD_WORK") or tempfile.mkdtemp(prefix="lorascope-record-")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, LORASCOPE_CACHE_DIR=os.path.join(work, "cache"))
    summary = []

    demo_model = demo_model_folder(program, work, env)
    model, data = os.path.join(work, "qwen2.5-0.5b-random"), os.path.join(work, "notes.jsonl")
    write_model(model, demo_model)
    write_dataset(data)

    # Run A: the dashboard and the memory map.
    a = start_run(program, os.path.join(out, "gpu_run.jsonl"), env, model, data,
                  os.path.join(work, "run-a"), STEPS)
    phases = [(6, {"type": "request_snapshot"}),
              (10, {"type": "set", "toggle": "blocking", "value": True}),
              (15, {"type": "set", "toggle": "blocking", "value": False}),
              (15, {"type": "set", "toggle": "serialize", "value": True}),
              (20, {"type": "set", "toggle": "serialize", "value": False}),
              (23, {"type": "set", "toggle": "allocator_policy", "value": "arena"})]
    for step, command in ((step * PHASE, command) for step, command in phases):
        if not a.wait_step(step):
            summary.append(f"run A: step {step} never came")
            break
        a.send(command)
    a.wait_for(lambda e: e.get("type") == "state" and e["state"] in ("finished", "failed"), 600)
    a.proc.stdin.close()
    a.proc.wait(60)
    events = a.events
    snapshot = next((e for e in events if e.get("type") == "snapshot"), None)
    if snapshot:
        with open(os.path.join(out, "gpu_snapshot.json"), "w") as f:
            json.dump(snapshot["snapshot"], f)
    for e in events:
        if e.get("type") == "snapshot" and "card" in e:
            with open(os.path.join(out, f"gpu_snapshot_card{e['card']}.json"), "w") as f:
                json.dump(e["snapshot"], f)
    if GPUS:
        cards = sorted({e.get("card", 0) for e in events if e.get("type") in ("memory", "queue")})
        summary.append(f"group on GPUs {GPUS}: readings per card " + "; ".join(
            f"card {c}: {sum(1 for e in events if e.get('type') == 'memory' and e.get('card', 0) == c)}"
            f" memory, {sum(1 for e in events if e.get('type') == 'queue' and e.get('card', 0) == c)}"
            f" queue, {sum(1 for e in events if e.get('type') == 'snapshot' and e.get('card') == c)}"
            " snapshots" for c in cards))
    step_at = {e["step"]: e["t_ms"] for e in events if e.get("type") == "step"}
    applied = {(e["toggle"], json.dumps(e["value"])): e["t_ms"] for e in events
               if e.get("type") == "toggle_applied" and e["step"] > 0}

    def phase(name, start, end):
        readings = [e for e in events if e.get("type") == "queue" and start <= e["t_ms"] < end]
        queues = [depth_of(e) for e in readings]
        memory = [e for e in events if e.get("type") == "memory" and start <= e["t_ms"] < end]
        seconds = max(1e-9, (end - start) / 1000)
        # Per step: the highest peak of the readings that end inside the step or within one
        # reading period after it (a reading's peak covers the period before it).
        per_step = []
        for s in sorted(step_at):
            if s - 1 in step_at and start <= step_at[s - 1] and step_at[s] <= end:
                seen = [depth_of(e) for e in readings
                        if step_at[s - 1] < e["t_ms"] <= step_at[s] + 400]
                per_step.append(max(seen, default=-1))
        step_ms = [step_at[s] - step_at[s - 1] for s in sorted(step_at)
                   if s - 1 in step_at and start <= step_at[s - 1] and step_at[s] <= end]
        compute_ms = [8 * 512 * RANKS / e["tokens_per_s"] * 1000 for e in events
                      if e.get("type") == "step" and e.get("tokens_per_s") and
                      start < e["t_ms"] <= end]
        summary.append(
            f"{name}: queue depth (peak per reading) max {max(queues, default=-1)}, median "
            f"{sorted(queues)[len(queues) // 2] if queues else -1} over {len(queues)} readings "
            f"({len(queues) / seconds:.2f}/s); per step {per_step}; "
            f"{len(memory) / seconds:.2f} memory readings/s; step cycle median "
            f"{sorted(step_ms)[len(step_ms) // 2] if step_ms else -1} ms of which the step's "
            f"own time (tokens/s) {sorted(compute_ms)[len(compute_ms) // 2] if compute_ms else -1:.0f}"
            f" ms; reserved {reserved_gib(events, start, end)}")

    blocking_on = applied.get(("blocking", "true"), 0)
    serialize_on = applied.get(("serialize", "true"), 0)
    serialize_off = applied.get(("serialize", "false"), 0)
    phase("normal steps 3-9", step_at.get(3, 0), blocking_on)
    phase("blocking launches", blocking_on, serialize_on)
    phase("serialize", serialize_on, serialize_off)
    arena_on = applied.get(("allocator_policy", json.dumps("arena")), 0)
    phase("normal again", serialize_off, arena_on or step_at.get(STEPS, serialize_off))
    if arena_on:
        phase("arena", arena_on, step_at.get(STEPS, arena_on) + 1)
        before = [e for e in events if e.get("type") == "memory" and
                  e.get("reserved_bytes") is not None and e["t_ms"] < arena_on]
        after = [e for e in events if e.get("type") == "memory" and
                 e.get("reserved_bytes") is not None and e["t_ms"] > arena_on]
        detail = next((e.get("detail", "") for e in events if e.get("type") == "toggle_applied"
                       and e["toggle"] == "allocator_policy" and e["step"] > 0), "")
        if before and after:
            summary.append(f"arena switch ({detail}): reserved {before[-1]['reserved_bytes']} B "
                           f"({before[-1]['reserved_bytes'] / 2**30:.2f} GiB) before, "
                           f"{after[-1]['reserved_bytes']} B "
                           f"({after[-1]['reserved_bytes'] / 2**30:.2f} GiB) at the end")
    steps = sorted(step_at)
    summary.append(f"run A: {len(steps)} steps, exit {a.proc.returncode}; step times (ms) "
                   f"{[step_at[s] - step_at[s - 1] for s in steps[1:] if s - 1 in step_at]}")
    summary.append(f"run A: {len(a.bad_lines)} lines that are not JSON {a.bad_lines[:3]}")
    errors = [e for e in events if e.get("type") == "error"]
    summary.append(f"run A: {len(errors)} error events {[e['message'][:120] for e in errors]}")
    if snapshot:
        segs = snapshot["snapshot"]["segments"]
        traces = snapshot["snapshot"].get("device_traces", [[]])
        taken_after = max((e["step"] for e in events if e.get("type") == "step" and
                           e["t_ms"] <= snapshot["t_ms"]), default=0)
        summary.append(f"snapshot at the step boundary after step {taken_after} (requested "
                       f"after step {6 * PHASE}): {len(segs)} segments, "
                       f"{sum(len(s['blocks']) for s in segs)} blocks, "
                       f"{sum(len(t) for t in traces)} allocation trace entries")

    # Run B: an injected hang in the optimizer of step 5.
    if GPUS:
        record_group_hang(program, out, env, model, data, work, summary)
    else:
        record_hang(program, out, env, model, data, work, summary)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")
    print("\n".join(summary))


def record_group_hang(program, out, env, model, data, work, summary):
    """Run B of a group: the hang in the last rank's optimizer of step 5; the group restarts
    from the newest state and finishes its 10 steps, each announced once."""
    rank = len(GPUS.split(",")) - 1
    b = start_run(program, os.path.join(out, "gpu_group_hang.jsonl"),
                  dict(env, LORASCOPE_FAULTS="hang@adamw#5", LORASCOPE_FAULTS_RANK=str(rank)),
                  model, data, os.path.join(work, "run-b"), 10)
    end = b.wait_for(lambda e: e.get("type") == "state" and e["state"] in ("finished", "failed"),
                     500)
    try:
        b.proc.wait(60)
    except subprocess.TimeoutExpired:
        b.proc.kill()
    steps = [e["step"] for e in b.events if e.get("type") == "step"]
    hang = next((e for e in b.events if e.get("type") == "error" and e["category"] == "hang"),
                None)
    incidents = [e for e in b.events if e.get("type") == "incident"]
    summary.append(f"group hang in rank {rank}: error {hang['message'][:300] if hang else None!r}")
    summary.append(f"group hang: incidents {[i['what'][:200] + ' -> ' + i['action'][:200] for i in incidents]}")
    summary.append(f"group hang: steps announced {steps} (each once: "
                   f"{sorted(steps) == list(range(1, 11))}); end {end['state'] if end else None} "
                   f"{end.get('detail') if end else ''}; exit {b.proc.returncode}")


def record_hang(program, out, env, model, data, work, summary):
    b = Engine(program, os.path.join(out, "gpu_hang.jsonl"),
               dict(env, LORASCOPE_FAULTS="hang@adamw#5"))
    b.send(start_config(model, data, os.path.join(work, "run-b"), 10))
    hang = b.wait_for(lambda e: e.get("type") == "error" and e["category"] == "hang", 200)
    try:
        b.proc.wait(30)
    except subprocess.TimeoutExpired:
        b.proc.kill()
    last_step = max((e for e in b.events if e.get("type") == "step"), key=lambda e: e["step"],
                    default=None)
    if hang and last_step:
        during = [e for e in b.events if e.get("type") == "memory" and
                  last_step["t_ms"] < e["t_ms"] < hang["t_ms"]]
        seconds = (hang["t_ms"] - last_step["t_ms"]) / 1000
        summary.append(f"hang: reported {seconds:.1f} s after step {last_step['step']} "
                       f"(op '{hang['op']}'); {len(during) / seconds:.2f} memory readings/s "
                       f"meanwhile; engine exit {b.proc.returncode}")
        summary.append("hang report: " + hang["message"])
    else:
        summary.append(f"hang: no report (last step {last_step}); exit {b.proc.returncode}; "
                       f"stderr {b.proc.stderr.read()[-2000:] if b.proc.stderr else ''}")


if __name__ == "__main__":
    main()
