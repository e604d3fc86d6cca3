// compute/LoraOutputPlan.h — how a GPU's LoRA output products (Backend::loraOutputProducts, Note
// [one pass over dy] in hip/lora_products.hip) cut a site's (tokens, n) output gradient into
// blocks, and the f32 partial sums that leaves. Header-only arithmetic, shared by the kernel's
// launcher and the memory model (model/MemoryEstimate.cpp), which counts the partials.
#pragma once

#include <algorithm>
#include <cstdint>

namespace lorascope::compute {

inline constexpr std::int64_t kLoraOutputSliceColumns = 256;  // dy columns a block covers
inline constexpr std::int64_t kLoraOutputTileTokens = 64;     // tokens a staged tile holds
inline constexpr std::int64_t kLoraOutputTargetBlocks = 512;  // the cut aims at this many blocks

// The ranks the kernel takes (B's rows are copied as stored, in 16-byte pieces, into one 16-wide
// operand); the others keep the two GEMMs.
constexpr bool loraOutputRankServed(std::int64_t rank) {
  return rank == 8 || rank == 16;
}

// `slices` blocks of columns by `slabs` blocks of `slabTokens` tokens.
struct LoraOutputPlan {
  std::int64_t slices = 0;
  std::int64_t slabs = 0;
  std::int64_t slabTokens = 0;
  std::int64_t gPartialFloats = 0;  // slices × tokens × rank
  std::int64_t bPartialFloats = 0;  // slabs × n × rank
};

constexpr LoraOutputPlan loraOutputPlan(std::int64_t tokens, std::int64_t n, std::int64_t rank) {
  LoraOutputPlan plan;
  plan.slices = (n + kLoraOutputSliceColumns - 1) / kLoraOutputSliceColumns;
  const std::int64_t tokenTiles =
      std::max<std::int64_t>((tokens + kLoraOutputTileTokens - 1) / kLoraOutputTileTokens, 1);
  const std::int64_t wanted = std::clamp<std::int64_t>(
      (kLoraOutputTargetBlocks + plan.slices - 1) / std::max<std::int64_t>(plan.slices, 1), 1,
      tokenTiles);
  plan.slabTokens = (tokenTiles + wanted - 1) / wanted * kLoraOutputTileTokens;
  plan.slabs = std::max<std::int64_t>((tokens + plan.slabTokens - 1) / plan.slabTokens, 1);
  plan.gPartialFloats = plan.slices * tokens * rank;
  plan.bPartialFloats = plan.slabs * n * rank;
  return plan;
}

}  // namespace lorascope::compute
