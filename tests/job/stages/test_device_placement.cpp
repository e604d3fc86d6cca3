// test_device_placement.cpp — the placement stage (job/DevicePlacement.h) on a CPU run: the
// weights placed, GPU settings said not to apply, the allocator mode kept for a GPU, a move to
// where the run is already, and out of memory's ladder (cache, then smaller micro-batches).
#include "StageFixture.h"

using namespace lorascope;

using stagetest::PlacedRun;

TEST_CASE(aCpuRunSaysWhichGpuSettingsDoNothingAndKeepsThem) {
  PlacedRun cpu;
  job::DevicePlacement& placement = *cpu.placement;
  VERIFY(!placement.onGpu());
  VERIFY(!placement.weights().layers.empty());
  for (const engine::Toggle& toggle :
       {engine::Toggle::Serialize, engine::Toggle::Blocking, engine::Toggle::GemmBackend,
        engine::Toggle::AllocatorPolicy}) {
    VERIFY(
        lstest::Message{placement.notApplicable(toggle)}.contains("this run computes on the CPU"));
  }
  COMPARE(placement.notApplicable(engine::Toggle::MicroBatch), std::string());
  // The allocator's mode is kept for a GPU: a CPU run has no allocator to set.
  COMPARE(placement.setArenaMode(true, *cpu.loop), std::string());
  VERIFY(placement.arenaMode());
  VERIFY(!placement.emptyCache());
  COMPARE(placement.moveTo(compute::Device::Cpu, *cpu.loop), std::string());  // already there
  bool read = false;
  placement.readBackend([&](compute::Backend& backend) {
    read = backend.capabilities().device == compute::Device::Cpu;
  });
  VERIFY(read);
}

TEST_CASE(outOfMemoryFreesTheCacheFirstThenHalvesTheMicroBatch) {
  PlacedRun cpu;
  train::TrainLoop& loop = *cpu.loop;
  const job::DeviceLog quiet = [](const std::string&) {};
  COMPARE(job::recoverFromOutOfMemory(1, *cpu.placement, loop, nullptr, quiet, "x"),
          std::string("nothing cached; the step is retried as it was"));
  COMPARE(loop.microBatchSize(), std::int64_t{2});
  VERIFY(lstest::Message{job::recoverFromOutOfMemory(2, *cpu.placement, loop, nullptr, quiet, "x")}
             .contains("micro-batch lowered to 1 with accumulation"));
  COMPARE(loop.microBatchSize(), std::int64_t{1});
  try {
    job::recoverFromOutOfMemory(3, *cpu.placement, loop, nullptr, quiet, "hipMalloc failed");
    FAIL("out of memory at micro-batch 1 was not refused");
  } catch (const std::runtime_error& e) {
    VERIFY2(lstest::Message{e.what()}.contains(
                "out of memory at micro-batch 1 after freeing the cache: hipMalloc failed"),
            e.what());
  }
}
