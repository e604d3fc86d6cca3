"""A plain PyTorch LoRA training script on CUDA (no PEFT): a frozen stack of linear layers with
trainable low-rank A/B adapters, fitted to a teacher by AdamW. For `scripts/gpu-check.sh
supervise`, which runs it under `lorascope-train supervise` with the probe; a batch too large for
--memory-cap-gib (torch.cuda.set_per_process_memory_fraction: PyTorch's own allocator refuses,
with its own "CUDA out of memory" error) lets the recovery ladder halve the batch.

It prints one Hugging Face-style dict per step ({'loss': ..., 'learning_rate': ..., 'step': N}),
saves the adapters and optimizer every --save-every steps as OUT/checkpoint-N/state.pt, and
resumes from --resume DIR.
"""
import argparse
import os
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--batch-size", type=int, required=True)
parser.add_argument("--steps", type=int, default=20)
parser.add_argument("--out", required=True)
parser.add_argument("--save-every", type=int, default=5)
parser.add_argument("--resume", default=None)
parser.add_argument("--seq", type=int, default=256)
parser.add_argument("--hidden", type=int, default=1024)
parser.add_argument("--layers", type=int, default=8)
parser.add_argument("--rank", type=int, default=16)
parser.add_argument("--memory-cap-gib", type=float, default=4.0)
args = parser.parse_args()

device = torch.device("cuda", torch.cuda.current_device())
total = torch.cuda.get_device_properties(device).total_memory
torch.cuda.set_per_process_memory_fraction(min(1.0, args.memory_cap_gib * 2**30 / total), device)
torch.manual_seed(0)
h, r = args.hidden, args.rank
base = [torch.randn(h, h, device=device) / h ** 0.5 for _ in range(args.layers)]  # frozen
teacher = [w + 0.02 * torch.randn(h, r, device=device) @ torch.randn(r, h, device=device)
           for w in base]
lora_a = [torch.nn.Parameter(torch.randn(r, h, device=device) * 0.01) for _ in base]
lora_b = [torch.nn.Parameter(torch.zeros(h, r, device=device)) for _ in base]
optimizer = torch.optim.AdamW(lora_a + lora_b, lr=1e-3)
start = 0
if args.resume:
    state = torch.load(os.path.join(args.resume, "state.pt"), map_location=device)
    for p, v in zip(lora_a + lora_b, state["params"]):
        p.data.copy_(v)
    optimizer.load_state_dict(state["optimizer"])
    start = state["step"]
    print("resumed from %s at step %d" % (args.resume, start), flush=True)


def forward(x, weights, adapters):
    for i, w in enumerate(weights):
        y = x @ w.T
        if adapters:
            y = y + (x @ lora_a[i].T) @ lora_b[i].T
        x = torch.nn.functional.gelu(y)
    return x


print("batch %d, seq %d, hidden %d, %d layers, memory cap %.1f GiB"
      % (args.batch_size, args.seq, h, args.layers, args.memory_cap_gib), flush=True)
for step in range(start + 1, args.steps + 1):
    x = torch.randn(args.batch_size, args.seq, h, device=device)
    with torch.no_grad():
        target = forward(x, teacher, False)
    loss = torch.nn.functional.mse_loss(forward(x, base, True), target)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    print("{'loss': %.6f, 'learning_rate': 0.001, 'step': %d}" % (loss.item(), step), flush=True)
    if step % args.save_every == 0:
        folder = os.path.join(args.out, "checkpoint-%d" % step)
        os.makedirs(folder, exist_ok=True)
        torch.save({"params": [p.data for p in lora_a + lora_b],
                    "optimizer": optimizer.state_dict(), "step": step},
                   os.path.join(folder, "state.pt"))
        time.sleep(0.05)
print("peak allocated %.2f GiB" % (torch.cuda.max_memory_allocated(device) / 2**30), flush=True)
