"""Summarises the events.jsonl of a supervised run (scripts/gpu-check.sh supervise): the probe's
memory readings, the snapshots, errors, incidents and steps with their batch. Exit 1 unless
memory readings, a snapshot, an out-of-memory error and the last step (12) are all there."""
import json
import sys

events = [json.loads(line) for line in open(sys.argv[1])]


def of(kind):
    return [e for e in events if e["type"] == kind]


gib = 2.0 ** 30
mem = [e for e in of("memory") if e.get("reserved_bytes")]
print("memory events with allocator readings: %d" % len(mem))
if mem:
    peak = max(mem, key=lambda e: e["reserved_bytes"])
    print("  peak: allocated %.2f GiB, reserved %.2f GiB, inactive split %.3f GiB, driver used "
          "%.2f of %.2f GiB, held outside %s" % (
              peak["allocated_bytes"] / gib, peak["reserved_bytes"] / gib,
              (peak.get("inactive_split_bytes") or 0) / gib,
              (peak["driver_used_bytes"] or 0) / gib, (peak["driver_total_bytes"] or 0) / gib,
              peak["held_outside_bytes"]))
for s in of("snapshot"):
    segs = s["snapshot"]["segments"]
    print("snapshot: %d segments, %d blocks, %.2f GiB reserved (%s)" % (
        len(segs), sum(len(x["blocks"]) for x in segs),
        sum(x["total_size"] for x in segs) / gib, s["snapshot"].get("source", "")))
for e in of("error"):
    print("error [%s]: %s" % (e["category"], e["message"][:200]))
for e in of("incident"):
    print("incident: %s -> %s" % (e["what"][:240], e["action"][:240]))
steps = of("step")
print("steps: %s" % " ".join("%d(b%d)" % (e["step"], e["micro_batch"]) for e in steps))
states = of("state")
if states:
    print("end: %s: %s" % (states[-1]["state"], states[-1]["detail"]))
ok = (mem and of("snapshot") and any(e["category"] == "out_of_memory" for e in of("error"))
      and steps and steps[-1]["step"] == 12)
sys.exit(0 if ok else 1)
