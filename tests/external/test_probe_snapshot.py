"""lorascope_probe.snapshot: PyTorch's allocator snapshot, converted to LoRAscope's memory-map
format, in both layouts.

data/torch_snapshot_raw.json is a real snapshot of torch 2.x on CUDA (stack frames stripped) and
data/torch_snapshot_converted.json what the probe made of it, both written on the GPU machine by
scripts/reference/probe_snapshot_fixture.py (scripts/gpu-check.sh supervise). The conversion must
give the committed result again; the same segments in torch 1.13's layout (a list of segments,
blocks without address or requested size, as torch 1.13's _snapshot() returns them) must give
the same map, block addresses counted from the segment's start. Standard library only (the
module converts without importing torch). Run by CTest as probe_snapshot.
"""
import copy
import json
import os
import sys
import unittest

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "python"))

from lorascope_probe.snapshot import (convert_snapshot, largest_free_and_total_free,  # noqa: E402
                                      snapshot_format)


def load(name):
    with open(os.path.join(here, "data", name)) as f:
        return json.load(f)


class ProbeSnapshot(unittest.TestCase):
    def setUp(self):
        self.raw = load("torch_snapshot_raw.json")
        self.converted = load("torch_snapshot_converted.json")

    def test_torch2_snapshot_converts_to_the_committed_map(self):
        self.assertEqual(snapshot_format(self.raw), "torch-2")
        again = convert_snapshot(self.raw, device=self.converted["device"],
                                 source=self.converted["source"])
        self.assertEqual(again, self.converted)
        # The map's invariants: blocks tile their segment; sizes add up.
        for seg in again["segments"]:
            address = seg["address"]
            for block in seg["blocks"]:
                self.assertEqual(block["address"], address)
                address += block["size"]
            self.assertEqual(address, seg["address"] + seg["total_size"])
            allocated = sum(b["size"] for b in seg["blocks"] if b["state"] == "active_allocated")
            self.assertEqual(seg["allocated_size"], allocated)

    def test_the_fixture_holds_live_blocks_and_an_inactive_split(self):
        states = [b["state"] for s in self.converted["segments"] for b in s["blocks"]]
        self.assertIn("active_allocated", states)
        split = [s for s in self.converted["segments"] if s["allocated_size"] > 0 and
                 any(b["state"] == "inactive" for b in s["blocks"])]
        self.assertTrue(split, "no segment with a free piece beside live blocks")
        largest, total = largest_free_and_total_free(self.converted)
        self.assertGreater(total, 0)
        self.assertLessEqual(largest, total)

    def test_torch_1_13_layout_gives_the_same_map(self):
        old = []
        for seg in copy.deepcopy(self.raw["segments"]):
            s = {k: seg[k] for k in ("address", "total_size", "allocated_size", "active_size",
                                     "stream", "segment_type")}
            s["blocks"] = [{"size": b["size"], "state": b["state"]} for b in seg["blocks"]]
            old.append(s)
        self.assertEqual(snapshot_format(old), "torch-1.13")
        converted = convert_snapshot(old)
        self.assertEqual(len(converted["segments"]), len(self.converted["segments"]))
        for mine, theirs in zip(converted["segments"], self.converted["segments"]):
            self.assertEqual([(b["address"], b["size"], b["state"]) for b in mine["blocks"]],
                             [(b["address"], b["size"], b["state"]) for b in theirs["blocks"]])
            self.assertEqual(mine["allocated_size"], theirs["allocated_size"])

    def test_not_a_snapshot_is_an_error(self):
        with self.assertRaises(ValueError):
            convert_snapshot("segments")
        with self.assertRaises(ValueError):
            convert_snapshot([{"address": 0}])


if __name__ == "__main__":
    unittest.main()
