"""Makes tests/external/data/torch_snapshot_raw.json and torch_snapshot_converted.json: a real
allocator snapshot of PyTorch on CUDA (torch.cuda.memory._snapshot(), stack frames stripped)
after a workload that leaves live blocks, freed pieces inside used segments (inactive splits)
and a small-pool segment, and the same snapshot converted by lorascope_probe to LoRAscope's
memory-map format. Run on a CUDA machine by `scripts/gpu-check.sh supervise` (PYTHONPATH=python).
"""
import json
import os
import sys

import torch

from lorascope_probe.snapshot import convert_snapshot, strip_snapshot

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
device = torch.device("cuda", torch.cuda.current_device())
keep = [torch.empty(n, dtype=torch.uint8, device=device) for n in (3 << 20, 5 << 20, 7 << 20)]
small = [torch.empty(n, dtype=torch.uint8, device=device) for n in (512, 4096, 65536)]
big = torch.empty(30 << 20, dtype=torch.uint8, device=device)
pieces = [big[i * (6 << 20):(i + 1) * (6 << 20)] for i in range(5)]
scratch = torch.empty(12 << 20, dtype=torch.uint8, device=device)
del scratch  # freed inside a segment that stays in use: an inactive split
half = torch.empty(9 << 20, dtype=torch.uint8, device=device)
raw = strip_snapshot(torch.cuda.memory._snapshot())
free, total = torch.cuda.mem_get_info(device)
converted = convert_snapshot(
    raw, device={"name": torch.cuda.get_device_name(device), "total_bytes": int(total),
                 "free_bytes": int(free)},
    source="torch %s memory._snapshot() (scripts/reference/probe_snapshot_fixture.py)"
    % torch.__version__)
with open(os.path.join(out, "torch_snapshot_raw.json"), "w") as f:
    json.dump(raw, f, indent=1, sort_keys=True)
with open(os.path.join(out, "torch_snapshot_converted.json"), "w") as f:
    json.dump(converted, f, indent=1, sort_keys=True)
print("snapshot: %d segments, %d blocks, torch %s" % (
    len(converted["segments"]), sum(len(s["blocks"]) for s in converted["segments"]),
    torch.__version__))
del keep, small, pieces, half, big
