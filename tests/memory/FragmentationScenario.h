// FragmentationScenario.h — a LoRA training workload with variable sequence lengths, replayed on
// the simulated device under one allocator policy; used by the scenario program and its test.
//
// The workload: a Llama-shaped model (bf16 weights, fp32 LoRA/grads/AdamW moments) whose forward
// pass saves per-layer activations sized by the step's token count, with a transient fp32
// workspace per layer, a chunked lm-head workspace, and a backward pass that frees the saved
// activations layer by layer in reverse while allocating gradient temporaries.
#pragma once

#include <cstdint>
#include <string>

#include "memory/AllocatorPolicy.h"
#include "memory/SimulatedDevice.h"

namespace lorascope::memory::scenario {

struct ScenarioShape {
  std::size_t deviceBytes = std::size_t{20} << 30;
  SimulatedDevice::Placement placement = SimulatedDevice::Placement::Contiguous;
  int layers = 28;
  std::int64_t hidden = 3072;        // d
  std::int64_t intermediate = 8192;  // MLP width
  std::int64_t vocab = 128256;
  std::int64_t loraRank = 16;
  std::int64_t minSequence = 256;  // tokens, drawn uniformly per step
  std::int64_t maxSequence = 4096;
  std::int64_t microBatch = 1;
  std::int64_t lmHeadChunkTokens = 1024;
  int steps = 200;
  std::uint32_t seed = 1234;
};

struct ScenarioResult {
  std::string policyText;
  std::size_t peakReservedBytes = 0;
  std::size_t peakAllocatedBytes = 0;
  double meanFragmentationAtPeak = 0.0;  // external fragmentation sampled at each step's high point
  double maxFragmentationAtPeak = 0.0;
  double meanCachedFreeBytesAtPeak = 0.0;  // reserved but unallocated at each step's high point
  std::uint64_t deviceAllocs = 0;
  std::uint64_t steadyStateDeviceAllocs = 0;  // in the second half of the steps
  std::uint64_t allocRetries = 0;
  std::uint64_t ooms = 0;  // steps that hit out-of-memory (the step is abandoned)
  std::uint64_t arenaOverflows = 0;
  int stepsCompleted = 0;
};

// Activation bytes one token needs at the step's high point (saved activations of every layer plus
// one layer's transient workspace): what a planner would size the arena from.
std::uint64_t activationBytesPerToken(const ScenarioShape& shape);
// Arena sized for the longest sequence plus 10% for the best-fit losses inside the arena (on the
// default scenario an exact-size arena overflowed in 27 of 200 steps, 5% slack in none).
AllocatorPolicy arenaPolicyFor(const ScenarioShape& shape);
inline constexpr double kArenaSlack = 0.10;

ScenarioResult runScenario(const ScenarioShape& shape, const AllocatorPolicy& policy);

}  // namespace lorascope::memory::scenario
