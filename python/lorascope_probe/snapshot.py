"""PyTorch allocator snapshots converted to LoRAscope's memory-map format.

torch.cuda.memory._snapshot() returns
  torch 1.13: a list of segments; blocks carry "size" and "state" (and "history"), no address;
  torch 2.x:  {"segments": [...], "device_traces": [...]}; blocks carry "address", "size",
              "requested_size", "state" (and "frames").
LoRAscope's format (backend/memory/AllocatorSnapshot.cpp, widgets/MemorySnapshot.h) keeps
PyTorch's field names: {"segments": [{"address", "total_size", "allocated_size", "active_size",
"requested_size", "segment_type", "stream", "blocks": [{"address", "size", "requested_size",
"state"}]}], "device": {...}, "source": "..."}. Stack frames and traces are dropped.
Pure Python: this module does not import torch.
"""


def snapshot_format(raw):
    """'torch-1.13' for a list of segments, 'torch-2' for the dict form."""
    if isinstance(raw, dict):
        return "torch-2"
    if isinstance(raw, list):
        return "torch-1.13"
    raise ValueError("not a PyTorch allocator snapshot: %s" % type(raw).__name__)


def convert_snapshot(raw, device=None, source=None):
    """Converts a snapshot of either format; `device` ({"name", "total_bytes", "free_bytes"})
    and `source` (a description) are added when given."""
    fmt = snapshot_format(raw)
    segments = raw.get("segments", []) if fmt == "torch-2" else raw
    out = []
    for index, seg in enumerate(segments):
        if "address" not in seg or "total_size" not in seg or "blocks" not in seg:
            raise ValueError("segment %d lacks address, total_size or blocks" % index)
        cursor = int(seg["address"])
        blocks = []
        allocated = active = requested = 0
        for b in seg["blocks"]:
            size = int(b["size"])
            state = str(b["state"])
            address = int(b.get("address", cursor))
            cursor = address + size
            in_use = state.startswith("active")
            req = int(b.get("requested_size", size if in_use else 0))
            if state == "active_allocated":
                allocated += size
                requested += req
            if in_use:
                active += size
            blocks.append({"address": address, "size": size, "requested_size": req,
                           "state": state})
        out.append({
            "address": int(seg["address"]),
            "total_size": int(seg["total_size"]),
            "allocated_size": int(seg.get("allocated_size", allocated)),
            "active_size": int(seg.get("active_size", active)),
            "requested_size": int(seg.get("requested_size", requested)),
            "segment_type": str(seg.get("segment_type", "large")),
            "stream": int(seg.get("stream", 0)),
            "blocks": blocks,
        })
    converted = {"segments": out, "format": fmt}
    if device is not None:
        converted["device"] = device
    if source is not None:
        converted["source"] = source
    return converted


def strip_snapshot(raw):
    """The snapshot without stack frames, history and traces (small enough to commit)."""
    fmt = snapshot_format(raw)
    segments = raw.get("segments", []) if fmt == "torch-2" else raw
    slim = []
    for seg in segments:
        s = {k: v for k, v in seg.items() if k not in ("frames", "history")}
        s["blocks"] = [{k: v for k, v in b.items() if k not in ("frames", "history")}
                       for b in seg["blocks"]]
        slim.append(s)
    return {"segments": slim} if fmt == "torch-2" else slim


def largest_free_and_total_free(converted):
    """(largest free block, total free bytes) over the converted snapshot's segments."""
    largest = total = 0
    for seg in converted["segments"]:
        for b in seg["blocks"]:
            if b["state"] == "inactive":
                largest = max(largest, b["size"])
                total += b["size"]
    return largest, total
