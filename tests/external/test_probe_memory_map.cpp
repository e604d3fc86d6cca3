// test_probe_memory_map.cpp — a PyTorch allocator snapshot reaches the memory map: the probe's
// conversion of a real CUDA snapshot (data/torch_snapshot_converted.json, made on the GPU machine
// by scripts/reference/probe_snapshot_fixture.py), sent as the probe sends it (a snapshot event,
// one JSON line of the protocol), is decoded by the supervisor's side and read by the memory map
// (widgets/MemorySnapshot) with every segment and block, live blocks as "other" (PyTorch does not
// say whose a block is) and free pieces of used segments as inactive splits.
#include <QtTest>

#include <fstream>

#include "TestPaths.h"
#include "engine/Protocol.h"
#include "widgets/MemorySnapshot.h"

using namespace lorascope;

class TestProbeMemoryMap : public QObject {
  Q_OBJECT
 private slots:
  void aConvertedTorchSnapshotIsAMemoryMap() {
    std::ifstream in(std::string(lstest::sourcePath("tests/external/data")) +
                     "/torch_snapshot_converted.json");
    QVERIFY(in.good());
    const nlohmann::json document = nlohmann::json::parse(in);
    const std::string line =
        "{\"v\": 1, \"type\": \"snapshot\", \"t_ms\": 1200, \"snapshot\": " + document.dump() + "}";
    const engine::TimedEvent timed = engine::decodeEvent(line);
    const auto* event = std::get_if<engine::SnapshotEvent>(&timed.event);
    QVERIFY(event != nullptr);
    const widgets::MemorySnapshot map = widgets::parseMemorySnapshot(event->snapshot);
    QCOMPARE(map.segments.size(), document["segments"].size());
    std::uint64_t total = 0, allocated = 0, blocks = 0, inactiveInUsed = 0;
    for (const auto& s : document["segments"]) {
      total += s["total_size"].get<std::uint64_t>();
      blocks += s["blocks"].size();
      for (const auto& b : s["blocks"])
        if (b["state"].get<std::string>().rfind("active", 0) == 0)
          allocated += b["size"].get<std::uint64_t>();
      if (s["allocated_size"].get<std::uint64_t>() > 0)
        for (const auto& b : s["blocks"])
          if (b["state"] == "inactive")
            inactiveInUsed += b["size"].get<std::uint64_t>();
    }
    QCOMPARE(map.totalBytes(), total);
    QCOMPARE(map.blockCount(), std::size_t(blocks));
    const auto byKind = map.bytesByKind();
    QCOMPARE(byKind[static_cast<std::size_t>(widgets::BlockKind::Other)], allocated);
    QCOMPARE(byKind[static_cast<std::size_t>(widgets::BlockKind::InactiveSplit)], inactiveInUsed);
    QVERIFY(inactiveInUsed > 0);
  }
};

QTEST_GUILESS_MAIN(TestProbeMemoryMap)
#include "test_probe_memory_map.moc"
