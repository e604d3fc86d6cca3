"""A real, tiny PyTorch training run on the CPU (a LoRA-style low-rank update of a frozen linear
map, fitted by AdamW), for tests/external/supervise_test.sh. It prints Hugging Face Trainer's log
dicts, saves checkpoints as out/checkpoint-N (torch.save) every --save-every steps, resumes from
--resume DIR, and can fail on purpose:
  --fail-at N   at step N print a HIPBLAS_STATUS_INTERNAL_ERROR line and exit 1 (not when resumed)
  --hang-at N   at step N sleep for an hour (not when resumed)
"""
import argparse
import os
import sys
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--out", required=True)
parser.add_argument("--save-every", type=int, default=4)
parser.add_argument("--resume", default=None)
parser.add_argument("--fail-at", type=int, default=0)
parser.add_argument("--hang-at", type=int, default=0)
parser.add_argument("--batch-size", type=int, default=16)
args = parser.parse_args()

torch.manual_seed(0)
dim, rank = 32, 4
base = torch.randn(dim, dim) / dim ** 0.5           # frozen
target = base + 0.1 * torch.randn(dim, rank) @ torch.randn(rank, dim)
lora_a = torch.nn.Parameter(torch.randn(rank, dim) * 0.01)
lora_b = torch.nn.Parameter(torch.zeros(dim, rank))
optimizer = torch.optim.AdamW([lora_a, lora_b], lr=0.05)
start = 0
if args.resume:
    state = torch.load(os.path.join(args.resume, "state.pt"))
    lora_a.data.copy_(state["a"])
    lora_b.data.copy_(state["b"])
    optimizer.load_state_dict(state["optimizer"])
    start = state["step"]
    print("resumed from %s at step %d" % (args.resume, start), flush=True)

for step in range(start + 1, args.steps + 1):
    if step == args.fail_at and not args.resume:
        print("RuntimeError: HIPBLAS_STATUS_INTERNAL_ERROR when calling hipblasLtMatmul",
              file=sys.stderr, flush=True)
        sys.exit(1)
    if step == args.hang_at and not args.resume:
        time.sleep(3600)
    x = torch.randn(args.batch_size, dim)
    loss = ((x @ (base + lora_b @ lora_a).T - x @ target.T) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print("{'loss': %.4f, 'learning_rate': 0.05, 'epoch': %.2f, 'step': %d}"
          % (loss.item(), step / args.steps, step), flush=True)
    if step % args.save_every == 0:
        folder = os.path.join(args.out, "checkpoint-%d" % step)
        os.makedirs(folder, exist_ok=True)
        torch.save({"a": lora_a.data, "b": lora_b.data, "optimizer": optimizer.state_dict(),
                    "step": step}, os.path.join(folder, "state.pt"))
        time.sleep(0.05)  # distinct modification times
print("training finished at step %d" % args.steps, flush=True)
