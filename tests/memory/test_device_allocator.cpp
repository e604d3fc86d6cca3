// test_device_allocator.cpp — the caching allocator's policy, stats, snapshot and errors, on the
// simulated device (no GPU needed).
#include <QtTest>

#include <atomic>
#include <thread>

#include "memory/DeviceAllocator.h"
#include "memory/SimulatedDevice.h"

using namespace lorascope::memory;

namespace {
constexpr std::size_t kMiB = std::size_t{1} << 20;

std::shared_ptr<SimulatedDevice> device(
    std::size_t mib,
    SimulatedDevice::Placement placement = SimulatedDevice::Placement::Contiguous) {
  return std::make_shared<SimulatedDevice>(mib * kMiB, placement);
}
}  // namespace

class TestDeviceAllocator : public QObject {
  Q_OBJECT

 private slots:
  void roundsRequestsAndSizesSegments() {
    QCOMPARE(roundedBlockBytes(0, 0), std::size_t{512});
    QCOMPARE(roundedBlockBytes(513, 0), std::size_t{1024});
    // 5000 lies between 4096 and 8192; four divisions are 4096, 5120, 6144, 7168.
    QCOMPARE(roundedBlockBytes(5000, 4), std::size_t{5120});
    QCOMPARE(roundedBlockBytes(5000, 0), std::size_t{5120});
    QCOMPARE(roundedBlockBytes(9000, 4), std::size_t{10240});
    QCOMPARE(roundedBlockBytes(9000, 0), std::size_t{9216});
    // Below 512 * divisions the steps would be finer than a block: plain 512-byte rounding.
    QCOMPARE(roundedBlockBytes(1200, 4), std::size_t{1536});
    QCOMPARE(roundedBlockBytes(2048, 4), std::size_t{2048});
    QCOMPARE(roundedBlockBytes(5 * kMiB + 1, 2), 6 * kMiB);
    QCOMPARE(segmentBytesFor(kMiB), 2 * kMiB);
    QCOMPARE(segmentBytesFor(kMiB + 512), 20 * kMiB);
    QCOMPARE(segmentBytesFor(11 * kMiB + 1), 12 * kMiB);
  }

  void rejectsInvalidPolicies() {
    AllocatorPolicy policy;
    policy.garbageCollectionThreshold = 1.0;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validatePolicy(policy));
    policy = {};
    policy.roundupPower2Divisions = 3;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validatePolicy(policy));
    policy = {};
    policy.maxSplitBytes = kMiB;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, validatePolicy(policy));
    policy = {};
    policy.mode = AllocatorMode::Arena;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, DeviceAllocator(device(64), policy));
  }

  // Blocks a capture allocated are its graph's addresses: only a later capture gets them again,
  // whether they were freed during the capture or after it; releaseGraphPool hands them on.
  void graphPoolIsTheCapturesAlone() {
    DeviceAllocator allocator(device(256));
    allocator.beginGraphCapture();
    const Allocation scratch = allocator.allocate(3 * kMiB, Owner::Activations);
    allocator.deallocate(scratch.address);  // freed inside the capture: reused inside it
    const Allocation again = allocator.allocate(3 * kMiB, Owner::Activations);
    QCOMPARE(again.address, scratch.address);
    const Allocation small = allocator.allocate(4096, Owner::Workspace);
    allocator.endGraphCapture();
    QCOMPARE(allocator.graphPoolLiveBytes(), again.bytes + small.bytes);
    allocator.deallocate(again.address);  // freed after the capture: still the graph's
    allocator.deallocate(small.address);
    QCOMPARE(allocator.graphPoolLiveBytes(), std::size_t{0});
    const Allocation eager = allocator.allocate(3 * kMiB, Owner::Activations);
    const Allocation eagerSmall = allocator.allocate(4096, Owner::Workspace);
    QVERIFY(eager.address != scratch.address);
    QVERIFY(eagerSmall.address != small.address);
    allocator.emptyCache();  // the graph's segments stay reserved
    allocator.beginGraphCapture();
    QCOMPARE(allocator.allocate(3 * kMiB, Owner::Activations).address, scratch.address);
    allocator.endGraphCapture();
    QVERIFY(allocator.snapshot().dump().find("\"pool\":\"graph\"") != std::string::npos);
    allocator.releaseGraphPool();
    QVERIFY(allocator.snapshot().dump().find("\"pool\":\"graph\"") == std::string::npos);
  }

  void packsSmallRequestsIntoOneSegment() {
    DeviceAllocator allocator(device(64));
    const Allocation a = allocator.allocate(1000, Owner::Lora);
    const Allocation b = allocator.allocate(1000, Owner::Lora);
    QCOMPARE(a.bytes, std::size_t{1024});
    QCOMPARE(b.address, a.address + 1024);
    const AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.deviceAllocCount, std::uint64_t{1});
    QCOMPARE(stats.reservedBytes.current, std::int64_t(2 * kMiB));
    QCOMPARE(stats.requestedBytes.current, std::int64_t{2000});
    QCOMPARE(stats.allocatedBytes.current, std::int64_t{2048});
  }

  void bestFitTakesTheSmallestCachedBlock() {
    DeviceAllocator allocator(device(128));
    const Allocation a = allocator.allocate(12 * kMiB, Owner::Activations);
    const Allocation b = allocator.allocate(16 * kMiB, Owner::Activations);
    const Allocation c = allocator.allocate(14 * kMiB, Owner::Activations);
    for (const Allocation& x : {a, b, c}) {
      allocator.deallocate(x.address);
    }
    const Allocation d = allocator.allocate(13 * kMiB, Owner::Activations);
    QCOMPARE(d.address, c.address);
    QCOMPARE(allocator.stats().deviceAllocCount, std::uint64_t{3});
  }

  void splitsAndMergesInsideASegment() {
    DeviceAllocator allocator(device(128));
    const Allocation whole = allocator.allocate(30 * kMiB, Owner::Activations);
    allocator.deallocate(whole.address);
    const Allocation part = allocator.allocate(10 * kMiB, Owner::Activations);
    QCOMPARE(part.address, whole.address);
    QCOMPARE(part.bytes, 10 * kMiB);
    QCOMPARE(allocator.stats().inactiveSplitBytes, 20 * kMiB);
    const Allocation next = allocator.allocate(12 * kMiB, Owner::Activations);
    QCOMPARE(next.address, whole.address + 10 * kMiB);
    allocator.deallocate(part.address);
    allocator.deallocate(next.address);
    const AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.inactiveSplitBytes, std::size_t{0});
    QCOMPARE(stats.largestFreeBlockBytes, 30 * kMiB);
    QCOMPARE(allocator.snapshot()["segments"][0]["blocks"].size(), std::size_t{1});
  }

  void keepsSmallLargeRemaindersUnsplit() {
    DeviceAllocator allocator(device(64));
    const Allocation a = allocator.allocate(12 * kMiB, Owner::Activations);
    allocator.deallocate(a.address);
    // 12 MiB - 11.5 MiB leaves 0.5 MiB, not worth a large-pool block.
    const Allocation b = allocator.allocate(11 * kMiB + kMiB / 2, Owner::Activations);
    QCOMPARE(b.bytes, 12 * kMiB);
  }

  void maxSplitSizeKeepsOversizeBlocksWhole() {
    for (const bool limited : {false, true}) {
      AllocatorPolicy policy;
      if (limited) {
        policy.maxSplitBytes = 64 * kMiB;
      }
      DeviceAllocator allocator(device(512), policy);
      const Allocation big = allocator.allocate(100 * kMiB, Owner::Activations);
      allocator.deallocate(big.address);
      const Allocation small = allocator.allocate(30 * kMiB, Owner::Activations);
      QCOMPARE(small.address == big.address, !limited);
      QCOMPARE(allocator.stats().deviceAllocCount, std::uint64_t{limited ? 2u : 1u});
    }
  }

  void oversizeRequestsRefuseMuchBiggerBlocks() {
    AllocatorPolicy policy;
    policy.maxSplitBytes = 64 * kMiB;
    DeviceAllocator allocator(device(1024), policy);
    const Allocation big = allocator.allocate(200 * kMiB, Owner::Activations);
    allocator.deallocate(big.address);
    const Allocation far = allocator.allocate(100 * kMiB, Owner::Activations);  // 200 >= 100 + 20
    QVERIFY(far.address != big.address);
    allocator.deallocate(far.address);
    const Allocation near = allocator.allocate(190 * kMiB, Owner::Activations);
    QCOMPARE(near.address, big.address);
    QCOMPARE(near.bytes, 200 * kMiB);  // oversize blocks are not split
  }

  void garbageCollectionReleasesIdleSegmentsAboveThreshold() {
    AllocatorPolicy policy;
    policy.garbageCollectionThreshold = 0.5;
    DeviceAllocator allocator(device(100), policy);
    const Allocation a = allocator.allocate(20 * kMiB, Owner::Activations);
    allocator.deallocate(a.address);
    allocator.allocate(40 * kMiB, Owner::Activations);  // 20 cached + 40 > 50: release first
    const AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.deviceFreeCount, std::uint64_t{1});
    QCOMPARE(stats.reservedBytes.current, std::int64_t(40 * kMiB));
    QCOMPARE(stats.allocRetryCount, std::uint64_t{0});
  }

  void releasesTheCacheAndRetriesBeforeOutOfMemory() {
    DeviceAllocator allocator(device(64));
    const Allocation a = allocator.allocate(40 * kMiB, Owner::Activations);
    allocator.deallocate(a.address);
    allocator.allocate(50 * kMiB, Owner::Activations);
    const AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.allocRetryCount, std::uint64_t{1});
    QCOMPARE(stats.deviceFreeCount, std::uint64_t{1});
    QCOMPARE(stats.oomCount, std::uint64_t{0});
  }

  void outOfMemoryErrorCarriesTheNumbersAndARemedy() {
    DeviceAllocator allocator(device(64));
    allocator.beginStep(3);
    allocator.allocate(40 * kMiB, Owner::Weights);
    try {
      allocator.allocate(30 * kMiB, Owner::Activations);
      QFAIL("expected OutOfMemoryError");
    } catch (const OutOfMemoryError& error) {
      const OutOfMemoryDetails& d = error.details();
      QCOMPARE(d.requestedBytes, 30 * kMiB);
      QCOMPARE(d.deviceTotalBytes, 64 * kMiB);
      QCOMPARE(d.deviceFreeBytes, 24 * kMiB);
      QCOMPARE(d.allocatedBytes, 40 * kMiB);
      QCOMPARE(d.reservedUnallocatedBytes, std::size_t{0});
      QCOMPARE(d.owner, Owner::Activations);
      QCOMPARE(d.step, std::int64_t{3});
      const QString text = QString::fromStdString(error.what());
      QVERIFY2(text.contains("tried to allocate 30.00 MiB (activations, step 3)"), error.what());
      QVERIFY(text.contains("64.00 MiB in total, 24.00 MiB free"));
      QVERIFY(text.contains("smaller micro-batch"));
      QVERIFY(text.contains("activation checkpointing"));
      QVERIFY(text.contains("max_split_size"));
      QVERIFY(!text.contains("outside this run"));
    }
    // Another process holds most of the device: the message says so.
    auto dev = device(64);
    const std::optional<std::uintptr_t> foreign = dev->allocate(48 * kMiB);
    QVERIFY(foreign.has_value());
    DeviceAllocator crowded(dev);
    try {
      crowded.allocate(20 * kMiB, Owner::Activations);
      QFAIL("expected OutOfMemoryError");
    } catch (const OutOfMemoryError& error) {
      QVERIFY2(QString(error.what()).contains("48.00 MiB of the device is held outside this run"),
               error.what());
    }
    try {
      crowded.allocate(100 * kMiB, Owner::Activations);
      QFAIL("expected OutOfMemoryError");
    } catch (const OutOfMemoryError& error) {
      QVERIFY2(QString(error.what()).contains("exceeds the device's memory"), error.what());
    }
    QCOMPARE(allocator.stats().oomCount, std::uint64_t{1});
  }

  void contiguousDeviceFailsWhenOnlyHolesAreFree() {
    for (const auto placement :
         {SimulatedDevice::Placement::Contiguous, SimulatedDevice::Placement::Paged}) {
      auto dev = device(60, placement);
      DeviceAllocator allocator(dev);
      const Allocation a = allocator.allocate(20 * kMiB, Owner::Activations);
      allocator.allocate(20 * kMiB, Owner::Weights);
      const Allocation c = allocator.allocate(20 * kMiB, Owner::Activations);
      allocator.deallocate(a.address);
      allocator.deallocate(c.address);
      allocator.emptyCache();
      QCOMPARE(dev->info().freeBytes, 40 * kMiB);
      const bool contiguous = placement == SimulatedDevice::Placement::Contiguous;
      QCOMPARE(dev->largestFreeRangeBytes(), contiguous ? 20 * kMiB : 40 * kMiB);
      bool failed = false;
      try {
        allocator.allocate(40 * kMiB, Owner::Activations);
      } catch (const OutOfMemoryError&) {
        failed = true;
      }
      QCOMPARE(failed, contiguous);
    }
  }

  void tagsBlocksWithOwnerAndStep() {
    DeviceAllocator allocator(device(64));
    allocator.beginStep(7);
    const Allocation lora = allocator.allocate(4096, Owner::Lora);
    {
      OwnerScope scope(Owner::Optimizer);
      allocator.allocate(8192, OwnerScope::current());
    }
    QCOMPARE(OwnerScope::current(), Owner::Other);
    const nlohmann::json snapshot = allocator.snapshot();
    const nlohmann::json& blocks = snapshot["segments"][0]["blocks"];
    QCOMPARE(blocks[0]["address"].get<std::uintptr_t>(), lora.address);
    QCOMPARE(blocks[0]["owner"].get<std::string>(), std::string("lora"));
    QCOMPARE(blocks[0]["step"].get<std::int64_t>(), std::int64_t{7});
    QCOMPARE(blocks[1]["owner"].get<std::string>(), std::string("optimizer"));
    const AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.allocatedBytesByOwner[static_cast<int>(Owner::Lora)].current,
             std::int64_t{4096});
    QCOMPARE(stats.allocatedBytesByOwner[static_cast<int>(Owner::Optimizer)].current,
             std::int64_t{8192});
  }

  void tracksCurrentAndPeak() {
    DeviceAllocator allocator(device(128));
    const Allocation a = allocator.allocate(20 * kMiB, Owner::Activations);
    const Allocation b = allocator.allocate(30 * kMiB, Owner::Activations);
    allocator.deallocate(a.address);
    allocator.deallocate(b.address);
    AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.allocatedBytes.current, std::int64_t{0});
    QCOMPARE(stats.allocatedBytes.peak, std::int64_t(50 * kMiB));
    QCOMPARE(stats.allocatedBytes.total, std::int64_t(50 * kMiB));
    QCOMPARE(stats.allocationCount.peak, std::int64_t{2});
    QCOMPARE(stats.segmentCount.current, std::int64_t{2});
    allocator.resetPeakStats();
    QCOMPARE(allocator.stats().allocatedBytes.peak, std::int64_t{0});
  }

  void computesExternalFragmentation() {
    DeviceAllocator allocator(device(128));
    const Allocation a = allocator.allocate(20 * kMiB, Owner::Activations);
    const Allocation b = allocator.allocate(10 * kMiB, Owner::Activations);
    allocator.allocate(12 * kMiB, Owner::Activations);
    allocator.deallocate(a.address);
    allocator.deallocate(b.address);
    const AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.cachedFreeBytes, 30 * kMiB);
    QCOMPARE(stats.largestFreeBlockBytes, 20 * kMiB);
    QVERIFY(qAbs(stats.externalFragmentation - (1.0 - 20.0 / 30.0)) < 1e-12);
  }

  void keepsPeaksOfInactiveSplitAndFragmentation() {
    DeviceAllocator allocator(device(128));
    const Allocation whole = allocator.allocate(30 * kMiB, Owner::Activations);
    allocator.deallocate(whole.address);
    const Allocation part = allocator.allocate(10 * kMiB, Owner::Activations);
    const Allocation a = allocator.allocate(20 * kMiB, Owner::Activations);
    const Allocation b = allocator.allocate(10 * kMiB, Owner::Activations);
    const Allocation c = allocator.allocate(12 * kMiB, Owner::Activations);
    allocator.deallocate(a.address);
    allocator.deallocate(b.address);
    const double fragmented = allocator.stats().externalFragmentation;
    QVERIFY(fragmented > 0.0);
    for (const Allocation& live : {part, c}) {
      allocator.deallocate(live.address);
    }
    allocator.emptyCache();
    AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.inactiveSplitBytes, std::size_t{0});
    QCOMPARE(stats.externalFragmentation, 0.0);
    // The peaks remember the worst state a caller could observe.
    QCOMPARE(stats.inactiveSplitBytesPeak, 20 * kMiB);
    QVERIFY(stats.externalFragmentationPeak >= fragmented);
    QCOMPARE(statsToJson(stats)["inactive_split_bytes_peak"].get<std::size_t>(), 20 * kMiB);
    allocator.resetPeakStats();
    stats = allocator.stats();
    QCOMPARE(stats.inactiveSplitBytesPeak, std::size_t{0});
    QCOMPARE(stats.externalFragmentationPeak, 0.0);
  }

  // What the dashboard compares: the step's largest request against the largest free block, read
  // at the moment the step's allocations peaked as well as now.
  void keepsTheLargestRequestAndTheStateAtThePeak() {
    DeviceAllocator allocator(device(128));
    const Allocation a = allocator.allocate(20 * kMiB, Owner::Activations);
    const Allocation b = allocator.allocate(30 * kMiB, Owner::Activations);
    const AllocatorStats atPeak = allocator.stats();
    allocator.deallocate(b.address);
    allocator.deallocate(a.address);
    AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.largestRequestBytes, 30 * kMiB);
    QCOMPARE(stats.largestFreeAtPeakBytes, atPeak.largestFreeBlockBytes);
    QCOMPARE(stats.inactiveSplitAtPeakBytes, atPeak.inactiveSplitBytes);
    QVERIFY(stats.largestFreeBlockBytes > stats.largestFreeAtPeakBytes);  // freed after the peak
    QCOMPARE(statsToJson(stats)["largest_request_bytes"].get<std::size_t>(), 30 * kMiB);
    allocator.resetPeakStats();  // a new step
    allocator.allocate(4 * kMiB, Owner::Activations);
    QCOMPARE(allocator.stats().largestRequestBytes, 4 * kMiB);
  }

  void snapshotUsesPyTorchFieldNames() {
    DeviceAllocator allocator(device(64), {}, 42);
    allocator.allocate(1000, Owner::Grads);
    const nlohmann::json snapshot = allocator.snapshot();
    const nlohmann::json& segment = snapshot["segments"][0];
    for (const char* key : {"address", "total_size", "allocated_size", "active_size",
                            "requested_size", "stream", "segment_type", "blocks"}) {
      QVERIFY2(segment.contains(key), key);
    }
    QCOMPARE(segment["segment_type"].get<std::string>(), std::string("small"));
    QCOMPARE(segment["stream"].get<int>(), 42);
    QCOMPARE(segment["requested_size"].get<std::size_t>(), std::size_t{1000});
    const nlohmann::json& block = segment["blocks"][0];
    QCOMPARE(block["state"].get<std::string>(), std::string("active_allocated"));
    QCOMPARE(block["size"].get<std::size_t>(), std::size_t{1024});
    QCOMPARE(segment["blocks"][1]["state"].get<std::string>(), std::string("inactive"));
    QCOMPARE(snapshot["device"]["total_bytes"].get<std::size_t>(), 64 * kMiB);
    QCOMPARE(snapshot["stats"]["num_device_alloc"].get<int>(), 1);
  }

  void appliesPolicyChangesAtTheStepBoundary() {
    DeviceAllocator allocator(device(64));
    AllocatorPolicy next;
    next.maxSplitBytes = 32 * kMiB;
    allocator.setPolicy(next);
    QCOMPARE(allocator.policy().maxSplitBytes, kUnlimitedSplit);
    allocator.beginStep(1);
    QCOMPARE(allocator.policy().maxSplitBytes, 32 * kMiB);
  }

  void arenaServesActivationsWithoutDeviceAllocations() {
    AllocatorPolicy arena;
    arena.mode = AllocatorMode::Arena;
    arena.arenaBytes = 64 * kMiB;
    DeviceAllocator allocator(device(256), arena);
    QCOMPARE(allocator.stats().deviceAllocCount, std::uint64_t{1});
    allocator.allocate(10 * kMiB, Owner::Weights);  // weights never use the arena
    const std::uint64_t before = allocator.stats().deviceAllocCount;
    QCOMPARE(before, std::uint64_t{2});
    for (int step = 0; step < 5; ++step) {
      allocator.beginStep(step);
      const Allocation x = allocator.allocate(std::size_t(10 + step) * kMiB, Owner::Activations);
      const Allocation w = allocator.allocate(3000, Owner::Workspace);
      const Allocation y = allocator.allocate(20 * kMiB, Owner::Activations);
      allocator.deallocate(w.address);
      allocator.deallocate(x.address);
      allocator.deallocate(y.address);
    }
    AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.deviceAllocCount, before);
    QCOMPARE(stats.arenaOverflowCount, std::uint64_t{0});
    allocator.emptyCache();  // the arena is never released while the mode lasts
    QCOMPARE(allocator.stats().reservedBytes.current, std::int64_t(64 * kMiB + 10 * kMiB));
    // An activation larger than the arena overflows to the pools, and says so.
    allocator.allocate(80 * kMiB, Owner::Activations);
    QCOMPARE(allocator.stats().arenaOverflowCount, std::uint64_t{1});
  }

  void leavingArenaModeReturnsTheArenaToThePools() {
    AllocatorPolicy arena;
    arena.mode = AllocatorMode::Arena;
    arena.arenaBytes = 64 * kMiB;
    DeviceAllocator allocator(device(256), arena);
    allocator.setPolicy(AllocatorPolicy{});
    allocator.beginStep(1);
    const Allocation w = allocator.allocate(50 * kMiB, Owner::Weights);
    QCOMPARE(allocator.stats().deviceAllocCount, std::uint64_t{1});
    QCOMPARE(allocator.snapshot()["segments"][0]["pool"].get<std::string>(), std::string("large"));
    allocator.deallocate(w.address);
    allocator.emptyCache();
    QCOMPARE(allocator.stats().reservedBytes.current, std::int64_t{0});
  }

  // The planned arena replaces the cache of the activations: switching to it gives the idle
  // cached segments back before it is reserved (live blocks and their segments stay), so that
  // reserved is what is live plus the arena, not the old cache plus the arena.
  void switchingToTheArenaReleasesTheCacheItReplaces() {
    DeviceAllocator allocator(device(1024));
    allocator.beginStep(1);
    const Allocation weights = allocator.allocate(100 * kMiB, Owner::Weights);
    const Allocation lora = allocator.allocate(3 * kMiB, Owner::Lora);  // a shared 20 MiB segment
    std::vector<Allocation> activations;
    for (int i = 0; i < 8; ++i) {
      activations.push_back(allocator.allocate(40 * kMiB, Owner::Activations));
    }
    activations.push_back(allocator.allocate(2 * kMiB, Owner::Activations));  // beside the LoRA
    for (const Allocation& a : activations) {
      allocator.deallocate(a.address);
    }
    // The step is over: its activations' segments stay cached for the next step.
    const std::int64_t cached = allocator.stats().reservedBytes.current;
    QCOMPARE(cached, std::int64_t((100 + 20 + 8 * 40) * kMiB));
    AllocatorPolicy arena;
    arena.mode = AllocatorMode::Arena;
    arena.arenaBytes = 200 * kMiB;
    allocator.setPolicy(arena);
    allocator.beginStep(2);
    const AllocatorStats stats = allocator.stats();
    QCOMPARE(stats.reservedBytes.current, std::int64_t((100 + 20 + 200) * kMiB));
    QCOMPARE(stats.allocatedBytes.current, std::int64_t(103 * kMiB));
    // A bigger arena (a larger micro-batch) replaces the first one instead of joining it.
    arena.arenaBytes = 300 * kMiB;
    allocator.setPolicy(arena);
    allocator.beginStep(3);
    QCOMPARE(allocator.stats().reservedBytes.current, std::int64_t((100 + 20 + 300) * kMiB));
    allocator.deallocate(lora.address);
    allocator.deallocate(weights.address);
  }

  // The allocation timeline's data: every alloc and free with its owner and step, and the
  // segments taken from and given back to the device, oldest first, bounded by the ring's size.
  void snapshotCarriesTheAllocationTrace() {
    DeviceAllocator allocator(device(256));
    allocator.beginStep(4);
    const Allocation w = allocator.allocate(12 * kMiB, Owner::Weights);
    Allocation a;
    {
      const OwnerScope scope(Owner::Activations);
      a = allocator.allocate(3000, OwnerScope::current());
    }
    allocator.beginStep(5);
    allocator.deallocate(a.address);
    allocator.emptyCache();  // the small segment goes back
    const nlohmann::json trace = allocator.snapshot()["device_traces"][0];
    QCOMPARE(trace.size(), std::size_t{6});
    const char* actions[] = {"segment_alloc", "alloc",          "segment_alloc",
                             "alloc",         "free_completed", "segment_free"};
    for (std::size_t i = 0; i < 6; ++i) {
      QCOMPARE(trace[i]["action"].get<std::string>(), std::string(actions[i]));
    }
    QCOMPARE(trace[1]["owner"].get<std::string>(), std::string("weights"));
    QCOMPARE(trace[1]["addr"].get<std::uintptr_t>(), w.address);
    QCOMPARE(trace[1]["size"].get<std::size_t>(), 12 * kMiB);
    QCOMPARE(trace[1]["step"].get<std::int64_t>(), std::int64_t{4});
    QCOMPARE(trace[3]["owner"].get<std::string>(), std::string("activations"));
    QCOMPARE(trace[4]["owner"].get<std::string>(), std::string("activations"));
    QCOMPARE(trace[4]["step"].get<std::int64_t>(), std::int64_t{5});
    QCOMPARE(trace[5]["size"].get<std::size_t>(), 2 * kMiB);
    QVERIFY(trace[5]["time_us"].get<std::uint64_t>() >= trace[0]["time_us"].get<std::uint64_t>());
    // The ring keeps the newest entries only.
    for (std::size_t i = 0; i < DeviceAllocator::kTraceCapacity; ++i) {
      allocator.deallocate(allocator.allocate(4096, Owner::Workspace).address);
    }
    const nlohmann::json full = allocator.snapshot()["device_traces"][0];
    QCOMPARE(full.size(), DeviceAllocator::kTraceCapacity);
    QCOMPARE(full.back()["action"].get<std::string>(), std::string("free_completed"));
    QCOMPARE(full.back()["owner"].get<std::string>(), std::string("workspace"));
  }

  void arenaThatCannotBeReservedLeavesCachingMode() {
    DeviceAllocator allocator(device(64));
    AllocatorPolicy arena;
    arena.mode = AllocatorMode::Arena;
    arena.arenaBytes = 128 * kMiB;
    allocator.setPolicy(arena);
    QVERIFY_THROWS_EXCEPTION(OutOfMemoryError, allocator.beginStep(1));
    QCOMPARE(allocator.policy().mode, AllocatorMode::Caching);
    allocator.allocate(kMiB, Owner::Activations);  // still usable
  }

  void rejectsForeignAndDoubleFrees() {
    DeviceAllocator allocator(device(64));
    const Allocation a = allocator.allocate(4096, Owner::Other);
    allocator.deallocate(a.address);
    QVERIFY_THROWS_EXCEPTION(AllocatorUsageError, allocator.deallocate(a.address));
    QVERIFY_THROWS_EXCEPTION(AllocatorUsageError, allocator.deallocate(12345));
  }

  void statsAreConsistentWhileAnotherThreadAllocates() {
    DeviceAllocator allocator(device(256));
    std::atomic<bool> done{false};
    std::atomic<int> inconsistent{0};
    std::atomic<int> reads{0};
    std::thread sampler([&] {
      while (!done.load()) {
        const AllocatorStats s = allocator.stats();
        if (s.allocatedBytes.current > s.reservedBytes.current ||
            s.cachedFreeBytes != std::size_t(s.reservedBytes.current - s.allocatedBytes.current)) {
          ++inconsistent;
        }
        ++reads;
      }
    });
    // The allocations start once the sampler is reading (on a loaded machine the loop below can
    // end before the sampler thread is first scheduled, and nothing would be checked).
    while (reads.load() == 0) {
      std::this_thread::yield();
    }
    for (int i = 0; i < 20000; ++i) {
      const Allocation a = allocator.allocate(std::size_t(1 + i % 37) * 300 * 1024, Owner::Other);
      allocator.deallocate(a.address);
    }
    done = true;
    sampler.join();
    QCOMPARE(inconsistent.load(), 0);
    QVERIFY(reads.load() > 0);
    QCOMPARE(allocator.stats().allocatedBytes.current, std::int64_t{0});
  }
};

QTEST_APPLESS_MAIN(TestDeviceAllocator)
#include "test_device_allocator.moc"
