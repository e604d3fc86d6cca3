"""A real 2-process data-parallel training (torchrun, DistributedDataParallel): on the CPU with gloo
for tests/external/supervise_test.sh's `torchrun` mode, on one GPU a rank with nccl
(--backend nccl --device cuda: rank r on cuda:LOCAL_RANK) for scripts/gpu-check.sh's
`torchrun-nccl` mode. Each rank first prints its rank and PID ("rank R pid P"), so a check can
name the process killed. Every rank prints its own loss as a Hugging
Face-style dict with the step ({'loss': ..., 'step': N}): rank 1's losses are offset by 100, so a
step counted from rank 1 shows. Rank 0 saves out/checkpoint-N every --save-every steps (the
model and optimizer) and writes out/truth-rank0.json, its losses by step. --resume DIR loads a
checkpoint (loaded on the rank's device); --kill-rank R --kill-at N: rank R kills itself with SIGKILL at step N (not when
resumed), as an OOM killer or a crashed driver would.
"""
import argparse
import json
import os
import signal

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--save-every", type=int, default=2)
parser.add_argument("--resume", default=None)
parser.add_argument("--kill-rank", type=int, default=-1)
parser.add_argument("--kill-at", type=int, default=0)
parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
args = parser.parse_args()

device = torch.device("cpu")
if args.device == "cuda":
    device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(device)
dist.init_process_group(args.backend)
rank = dist.get_rank()
print("rank %d pid %d device %s backend %s" % (rank, os.getpid(), device, args.backend), flush=True)
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(
    torch.nn.Linear(16, 1).to(device), device_ids=[device.index] if device.type == "cuda" else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
start = 0
if args.resume:
    state = torch.load(os.path.join(args.resume, "state.pt"), map_location=device)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    start = state["step"]
os.makedirs(args.out, exist_ok=True)
truth_file = os.path.join(args.out, "truth-rank0.json")
truth = json.load(open(truth_file)) if args.resume and rank == 0 else {}
generator = torch.Generator().manual_seed(rank)
for step in range(start + 1, args.steps + 1):
    if rank == args.kill_rank and step == args.kill_at and not args.resume:
        os.kill(os.getpid(), signal.SIGKILL)
    x = torch.randn(32, 16, generator=generator).to(device)
    loss = ((model(x) - x.sum(dim=1, keepdim=True)) ** 2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    printed = loss.item() + (100 if rank == 1 else 0)
    print("{'loss': %.6f, 'step': %d}" % (printed, step), flush=True)
    if rank == 0:
        truth[str(step)] = loss.item()
        with open(truth_file, "w") as f:
            json.dump(truth, f)
        if step % args.save_every == 0:
            folder = os.path.join(args.out, "checkpoint-%d" % step)
            os.makedirs(folder, exist_ok=True)
            torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                        "step": step}, os.path.join(folder, "state.pt"))
    dist.barrier()
dist.destroy_process_group()
