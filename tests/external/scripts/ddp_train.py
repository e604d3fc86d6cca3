"""A real 2-process data-parallel training on the CPU (torchrun, gloo, DistributedDataParallel),
for tests/external/supervise_test.sh's `torchrun` mode. Every rank prints its own loss as a Hugging
Face-style dict with the step ({'loss': ..., 'step': N}): rank 1's losses are offset by 100, so a
step counted from rank 1 shows. Rank 0 saves out/checkpoint-N every --save-every steps (the
model and optimizer) and writes out/truth-rank0.json, its losses by step. --resume DIR loads a
checkpoint; --kill-rank R --kill-at N: rank R kills itself with SIGKILL at step N (not when
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
args = parser.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
start = 0
if args.resume:
    state = torch.load(os.path.join(args.resume, "state.pt"))
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
    x = torch.randn(32, 16, generator=generator)
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
